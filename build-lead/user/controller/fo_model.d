build-lead/user/controller/fo_model.o: user/controller/fo_model.c \
 user/controller/fo_internal.h user/controller/failover.h \
 user/common/config.h user/common/event_log.h user/common/info.h
user/controller/fo_internal.h:
user/controller/failover.h:
user/common/config.h:
user/common/event_log.h:
user/common/info.h:
