build-lead/user/controller/dns.o: user/controller/dns.c \
 user/controller/dns.h user/common/log.h
user/controller/dns.h:
user/common/log.h:
