build-lead/user/common/info.o: user/common/info.c user/common/info.h
user/common/info.h:
