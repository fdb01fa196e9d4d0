build-lead/user/cli/status_cmd.o: user/cli/status_cmd.c user/cmds.h \
 user/common/config.h user/common/log.h
user/cmds.h:
user/common/config.h:
user/common/log.h:
