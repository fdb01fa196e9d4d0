build-lead/tests/test_config: tests/unit/test_config.c \
 user/common/config.h
user/common/config.h:
