build-lead/user/common/config.o: user/common/config.c \
 user/common/config.h
user/common/config.h:
