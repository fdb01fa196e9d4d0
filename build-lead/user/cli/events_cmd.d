build-lead/user/cli/events_cmd.o: user/cli/events_cmd.c user/cmds.h \
 user/common/event_log.h user/common/log.h
user/cmds.h:
user/common/event_log.h:
user/common/log.h:
