#!/usr/bin/env bash
# test_spares.sh with three controllers and etcd (FL_HA): only the leader attaches a
# spare; the leader killed mid-attach, or in the spare's promotable wait, leaves the
# rest to the next one.
export FL_HA=1
export SPARES_TESTS=${SPARES_TESTS:-test_ha_leader_killed_mid_attach test_ha_leader_killed_steady}
exec bash "$(dirname "$0")/test_spares.sh"
