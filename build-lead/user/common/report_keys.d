build-lead/user/common/report_keys.o: user/common/report_keys.c \
 user/common/report_keys.h
user/common/report_keys.h:
