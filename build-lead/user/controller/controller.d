build-lead/user/controller/controller.o: user/controller/controller.c \
 user/cmds.h user/common/config.h user/controller/controller.h \
 user/controller/dns.h user/common/event_log.h user/controller/failover.h \
 user/common/info.h user/common/log.h user/common/resp.h
user/cmds.h:
user/common/config.h:
user/controller/controller.h:
user/controller/dns.h:
user/common/event_log.h:
user/controller/failover.h:
user/common/info.h:
user/common/log.h:
user/common/resp.h:
