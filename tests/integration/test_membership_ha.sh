#!/usr/bin/env bash
# test_membership.sh with three controllers and etcd (FL_HA): a change made on one
# controller is in etcd and on every controller, and survives a change of leader.
export FL_HA=1
export MEMBERSHIP_TESTS=${MEMBERSHIP_TESTS:-test_add_remove test_promote_runtime}
exec bash "$(dirname "$0")/test_membership.sh"
