build-lead/user/agent/agent.o: user/agent/agent.c user/common/clock.h \
 user/cmds.h user/common/event_log.h user/agent/exit_code.h \
 user/common/log.h user/common/config.h user/common/daemon.h \
 user/agent/fence.h user/agent/prober.h include/icmp_event.h \
 user/kern/icmp_watch.h user/agent/peer_verdict.h user/kern/proc_watch.h \
 include/proc_event.h user/agent/reporter.h user/common/report_keys.h \
 user/agent/srvmon.h user/common/info.h user/common/redis_link.h \
 user/common/backoff.h
user/common/clock.h:
user/cmds.h:
user/common/event_log.h:
user/agent/exit_code.h:
user/common/log.h:
user/common/config.h:
user/common/daemon.h:
user/agent/fence.h:
user/agent/prober.h:
include/icmp_event.h:
user/kern/icmp_watch.h:
user/agent/peer_verdict.h:
user/kern/proc_watch.h:
include/proc_event.h:
user/agent/reporter.h:
user/common/report_keys.h:
user/agent/srvmon.h:
user/common/info.h:
user/common/redis_link.h:
user/common/backoff.h:
