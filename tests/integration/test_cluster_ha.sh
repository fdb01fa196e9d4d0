#!/usr/bin/env bash
# The failure suite (test_cluster.sh) in HA mode: three etcd members and three
# controllers (tests/lib/cluster_ha.sh), one leading, the agents reporting to all. The
# same faults and invariants; "controller killed mid-failover" kills the leader and
# another finishes the failover. The lossy run lasts 30 s here (FL_CLUSTER_LOSS_S).
export FL_HA=1
export FL_CLUSTER_LOSS_S=${FL_CLUSTER_LOSS_S:-30}
exec bash "$(dirname "$0")/test_cluster.sh"
