#!/usr/bin/env bash
# Cluster shards: kill -9 (or SIGSTOP, -f stop) of one primary of a real Redis Cluster (redis-server
# --cluster-enabled yes, 3 primaries with a replica each, on loopback) -> its slots
# writable again, side by side in one run:
#   flatline          [shard] mode = cluster, an agent per node, the controller (its
#                     CLUSTER FAILOVER FORCE on the kernel's exit event); the cluster's
#                     node timeout at its default, 15000 ms
#   cluster alone     no flatline, cluster-node-timeout 15000 (the default)
#   cluster alone     no flatline, cluster-node-timeout 1000
# "writable" is the servers' side: a probe SETs a key of the victim's slots on every
# other node in turn until one answers OK rather than MOVED (no client's own delays).
# Throughout, redis-py's RedisCluster (4.3.4) writes; "client gap" is its own time
# without an acknowledged write to those slots (it sleeps 4 x 250 ms on a connection
# error before it asks for the slot map again), "lost" its acknowledged writes missing
# afterwards, "lost after kill" those acknowledged after the kill.
# The agents run at the shipped defaults (the write lease on, 200 ms; the cluster bus
# outside it: docs/cluster.md). -F valkey: the vendored Valkey 8. -f stop: SIGSTOP of
# the primary instead (SIGCONT once its slots are writable elsewhere): flatline then
# waits for the stopped primary's lease to be over before the election.
# usage: bench/cluster.sh [-n RUNS] [-F redis|valkey] [-f kill|stop]   (root; prints a table)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
RUNS=1 FLAVOUR=redis FAULT=kill
while getopts "n:F:f:" o; do
	case $o in
	n) RUNS=$OPTARG ;;
	F) FLAVOUR=$OPTARG ;;
	f) FAULT=$OPTARG ;;
	*) sed -n 's/^# usage: //p' "$0" >&2; exit 2 ;;
	esac
done
. tests/lib/testlib.sh
. tests/lib/flavour.sh
. tests/lib/rcluster.sh
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "bench/cluster.sh: needs root (the agents load BPF)" >&2; exit 2; }
fl_flavour_set "$FLAVOUR" || { echo "bench/cluster.sh: $FL_FLAVOUR_WHY" >&2; exit 2; }
[ -x "$FL" ] || { echo "bench/cluster.sh: build first (make)" >&2; exit 2; }
case $FAULT in
kill) RC_SIG=KILL FAULT_NAME="kill -9" ;;
stop) RC_SIG=STOP FAULT_NAME=SIGSTOP ;;
*) echo "bench/cluster.sh: -f kill or stop" >&2; exit 2 ;;
esac
export RC_SIG

# one_run MODE NODE_TIMEOUT: a fresh cluster in its own temp dir, killed once; prints a row.
one_run() {
	(
		set -eu
		T=$(mktemp -d /tmp/flatline-bench-cluster.XXXXXX)
		CLEANUP=("rm -rf $T")
		trap run_cleanup EXIT
		fail() { echo "bench/cluster.sh: $*" >&2; exit 1; }
		rcluster_start "$2"
		[ "$1" = flatline ] && rcluster_flatline
		rcluster_kill "${PRIMARIES[0]}"
		printf '%-14s %8s %10s %12s %8s %6s %15s\n' "$1" "$2" "$KILL_MS" \
			"$(jq -r '.gap_ms // "-" | if type == "number" then floor else . end' <<<"$KILL_RES")" \
			"$(jq .acked <<<"$KILL_RES")" "$(jq .lost <<<"$KILL_RES")" \
			"$(jq .lost_after <<<"$KILL_RES")"
	)
}

echo "$FAULT_NAME of a cluster primary -> its slots writable ($FL_SERVER_NAME, loopback, lease_ms default, $RUNS run(s) each)"
printf '%-14s %8s %10s %12s %8s %6s %15s\n' "who" "node_ms" "writable" "client_gap" "acked" "lost" "lost_after_fault"
for ((r = 0; r < RUNS; r++)); do
	one_run flatline 15000
	one_run cluster-alone 15000
	one_run cluster-alone 1000
done
echo "(ms; node_ms = cluster-node-timeout; writable: the fault -> a SET of its slots answered OK)"
