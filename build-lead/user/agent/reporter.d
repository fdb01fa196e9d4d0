build-lead/user/agent/reporter.o: user/agent/reporter.c \
 user/common/clock.h user/common/log.h user/agent/reporter.h \
 user/common/config.h user/common/report_keys.h user/common/redis_link.h \
 user/common/backoff.h
user/common/clock.h:
user/common/log.h:
user/agent/reporter.h:
user/common/config.h:
user/common/report_keys.h:
user/common/redis_link.h:
user/common/backoff.h:
