build-lead/user/agent/prober.o: user/agent/prober.c user/common/log.h \
 user/agent/prober.h user/common/event_log.h include/icmp_event.h \
 user/kern/icmp_watch.h user/agent/peer_verdict.h
user/common/log.h:
user/agent/prober.h:
user/common/event_log.h:
include/icmp_event.h:
user/kern/icmp_watch.h:
user/agent/peer_verdict.h:
