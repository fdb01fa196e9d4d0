build-lead/user/common/resp.o: user/common/resp.c user/common/resp.h
user/common/resp.h:
