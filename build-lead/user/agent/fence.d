build-lead/user/agent/fence.o: user/agent/fence.c user/agent/fence.h
user/agent/fence.h:
