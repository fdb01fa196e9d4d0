build-lead/user/kern/proc_watch.o: user/kern/proc_watch.c \
 user/common/log.h user/kern/proc_watch.h include/proc_event.h \
 build-lead/proc.skel.h
user/common/log.h:
user/kern/proc_watch.h:
include/proc_event.h:
build-lead/proc.skel.h:
