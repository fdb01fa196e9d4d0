build-lead/user/agent/exit_code.o: user/agent/exit_code.c \
 user/agent/exit_code.h
user/agent/exit_code.h:
