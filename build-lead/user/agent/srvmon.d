build-lead/user/agent/srvmon.o: user/agent/srvmon.c user/common/clock.h \
 user/common/log.h user/common/report_keys.h user/kern/proc_watch.h \
 include/proc_event.h user/common/redis_link.h user/common/backoff.h \
 user/common/config.h user/agent/srvmon.h user/common/info.h
user/common/clock.h:
user/common/log.h:
user/common/report_keys.h:
user/kern/proc_watch.h:
include/proc_event.h:
user/common/redis_link.h:
user/common/backoff.h:
user/common/config.h:
user/agent/srvmon.h:
user/common/info.h:
