build-lead/user/controller/failover.o: user/controller/failover.c \
 user/controller/failover.h user/common/config.h user/common/event_log.h \
 user/common/info.h
user/controller/failover.h:
user/common/config.h:
user/common/event_log.h:
user/common/info.h:
