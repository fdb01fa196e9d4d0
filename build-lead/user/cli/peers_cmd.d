build-lead/user/cli/peers_cmd.o: user/cli/peers_cmd.c user/cmds.h \
 include/icmp_event.h user/common/log.h user/kern/proc_watch.h \
 include/proc_event.h
user/cmds.h:
include/icmp_event.h:
user/common/log.h:
user/kern/proc_watch.h:
include/proc_event.h:
