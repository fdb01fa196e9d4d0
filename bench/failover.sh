#!/usr/bin/env bash
# Failover benchmark (issue 5): three redis-server on loopback, real agents, the
# controller. kill -9 of the primary -> a replica accepts a write, measured by an
# independent client (p50/p99/max over N runs; target p99 < 50 ms), and the
# acknowledged writes lost per failover under a writer at RATE writes/s that
# follows the primary through the controller's Sentinel API.
# usage: bench/failover.sh [-n RUNS] [-r RATE]   (root; prints a table)
set -euo pipefail
cd "$(dirname "$0")/.."
N=50 RATE=1000
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=$2; shift 2 ;;
	-r) RATE=$2; shift 2 ;;
	*) echo "usage: $0 [-n RUNS] [-r RATE]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench-failover: run as root (the agents load BPF)" >&2; exit 1; }
[ -n "${FL:-}" ] || make -s all
FL=${FL:-$PWD/build/flatline}
PY=/usr/bin/python3
dir=$(mktemp -d /tmp/flatline-bench-fo.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for f in "$dir"/redis-*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
[ -z "${KEEP:-}" ] || trap - EXIT

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}
P1=$(free_port) P2=$(free_port) P3=$(free_port) CTL=$(free_port)
cat >"$dir/cluster.conf" <<EOC
[cluster]
name = bench
secret = bench-secret-bench-secret
[agent]
lease_ms = 0 ; the write lease has its own tests (test_lease.sh), in namespaces
ping_interval_ms = 100
hung_after = 5
heartbeat_ms = 100
[controller]
listen = 127.0.0.1:$CTL
state_file = $dir/state
event_log = $dir/controller.jsonl
[node "n1"]
address = 127.0.0.1
redis = 127.0.0.1:$P1
[node "n2"]
address = 127.0.0.2
redis = 127.0.0.1:$P2
[node "n3"]
address = 127.0.0.3
redis = 127.0.0.1:$P3
[shard "s"]
nodes = n1 n2 n3
EOC
chmod 600 "$dir/cluster.conf"
start_redis() {
	redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
		--repl-diskless-sync-delay 0 --dir "$dir" --dbfilename "dump-$1.rdb" \
		--pidfile "$dir/redis-$1.pid" --logfile "$dir/redis-$1.log" --daemonize yes "${@:2}"
}
start_redis "$P1"
start_redis "$P2" --replicaof 127.0.0.1 "$P1"
start_redis "$P3" --replicaof 127.0.0.1 "$P1"
"$FL" controller --allow-root -c "$dir/cluster.conf" >/dev/null 2>"$dir/controller.err" &
pids+=($!)
for n in n1 n2 n3; do
	"$FL" agent -c "$dir/cluster.conf" --node "$n" --event-log "$dir/events-$n.jsonl" \
		>/dev/null 2>"$dir/agent-$n.err" &
	pids+=($!)
done
for _ in $(seq 200); do
	[ "$(grep -c agent_connected "$dir/controller.jsonl" 2>/dev/null || echo 0)" -ge 3 ] && break
	sleep 0.05
done
"$PY" bench/benchfo.py "$CTL" "$P1,$P2,$P3" "$N" "$RATE" "$dir"
