build-lead/user/controller/ha.o: user/controller/ha.c user/common/clock.h \
 user/common/log.h user/controller/ha.h user/controller/etcd.h
user/common/clock.h:
user/common/log.h:
user/controller/ha.h:
user/controller/etcd.h:
