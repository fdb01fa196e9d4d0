build-lead/user/agent/peer_verdict.o: user/agent/peer_verdict.c \
 user/agent/peer_verdict.h
user/agent/peer_verdict.h:
