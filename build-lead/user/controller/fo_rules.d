build-lead/user/controller/fo_rules.o: user/controller/fo_rules.c \
 user/controller/fo_internal.h user/controller/failover.h \
 user/common/config.h user/common/event_log.h user/common/info.h
user/controller/fo_internal.h:
user/controller/failover.h:
user/common/config.h:
user/common/event_log.h:
user/common/info.h:
