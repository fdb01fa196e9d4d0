build-lead/user/common/daemon.o: user/common/daemon.c \
 user/common/daemon.h user/common/log.h
user/common/daemon.h:
user/common/log.h:
