build-lead/user/controller/etcd.o: user/controller/etcd.c \
 user/common/clock.h user/common/log.h user/controller/etcd.h
user/common/clock.h:
user/common/log.h:
user/controller/etcd.h:
