build-lead/user/kern/icmp_watch.o: user/kern/icmp_watch.c \
 user/kern/icmp_watch.h include/icmp_event.h user/common/log.h \
 user/kern/proc_watch.h include/proc_event.h build-lead/icmp.skel.h
user/kern/icmp_watch.h:
include/icmp_event.h:
user/common/log.h:
user/kern/proc_watch.h:
include/proc_event.h:
build-lead/icmp.skel.h:
