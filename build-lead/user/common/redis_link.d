build-lead/user/common/redis_link.o: user/common/redis_link.c \
 user/common/clock.h user/common/log.h user/common/redis_link.h \
 user/common/backoff.h user/common/config.h
user/common/clock.h:
user/common/log.h:
user/common/redis_link.h:
user/common/backoff.h:
user/common/config.h:
