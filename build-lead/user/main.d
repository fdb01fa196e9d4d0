build-lead/user/main.o: user/main.c user/cmds.h
user/cmds.h:
