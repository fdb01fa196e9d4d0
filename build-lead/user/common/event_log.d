build-lead/user/common/event_log.o: user/common/event_log.c \
 user/common/event_log.h user/common/log.h
user/common/event_log.h:
user/common/log.h:
