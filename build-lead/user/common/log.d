build-lead/user/common/log.o: user/common/log.c user/common/log.h
user/common/log.h:
