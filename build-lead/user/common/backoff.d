build-lead/user/common/backoff.o: user/common/backoff.c \
 user/common/backoff.h
user/common/backoff.h:
