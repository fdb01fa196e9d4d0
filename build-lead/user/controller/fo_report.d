build-lead/user/controller/fo_report.o: user/controller/fo_report.c \
 user/common/report_keys.h user/controller/fo_internal.h \
 user/controller/failover.h user/common/config.h user/common/event_log.h \
 user/common/info.h
user/common/report_keys.h:
user/controller/fo_internal.h:
user/controller/failover.h:
user/common/config.h:
user/common/event_log.h:
user/common/info.h:
