build-lead/user/cli/probe_cmd.o: user/cli/probe_cmd.c user/cmds.h \
 user/common/daemon.h user/common/event_log.h user/common/log.h \
 user/kern/proc_watch.h include/proc_event.h user/agent/prober.h \
 include/icmp_event.h user/kern/icmp_watch.h user/agent/peer_verdict.h
user/cmds.h:
user/common/daemon.h:
user/common/event_log.h:
user/common/log.h:
user/kern/proc_watch.h:
include/proc_event.h:
user/agent/prober.h:
include/icmp_event.h:
user/kern/icmp_watch.h:
user/agent/peer_verdict.h:
