#!/usr/bin/env bash
# Hung-with-a-cause benchmark (issue 13): three redis-server on loopback, real
# agents and the controller. Prints three tables:
#  - SIGSTOP of the primary -> proc_hung (agent) and -> a replica accepts a write
#    (promoted), over N stops;
#  - slow commands on the primary (Lua loops of 0.5, 1, 2 and 4 s): failovers
#    caused (the goal is 0);
#  - the cost of bpf/sched.bpf.c per call (bpf_stats) while a pipe ping-pong
#    drives the host's context-switch rate up, with that rate.
# usage: bench/hung.sh [-n STOPS] [-k SLOW_RUNS] [-t COST_SECONDS]   (root; prints tables)
set -euo pipefail
cd "$(dirname "$0")/.."
N=10 K=2 SECS=5
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=$2; shift 2 ;;
	-k) K=$2; shift 2 ;;
	-t) SECS=$2; shift 2 ;;
	*) echo "usage: $0 [-n STOPS] [-k SLOW_RUNS] [-t COST_SECONDS]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench-hung: run as root (the agents load BPF)" >&2; exit 1; }
command -v bpftool >/dev/null || PATH=$PATH:/usr/sbin
[ -n "${FL:-}" ] || make -s all
FL=${FL:-$PWD/build/flatline}
PY=/usr/bin/python3
dir=$(mktemp -d /tmp/flatline-bench-hung.XXXXXX)
pids=()
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	local p f
	sysctl -q kernel.bpf_stats_enabled="$stats_was" || true
	for f in "$dir"/redis-*.pid; do [ -f "$f" ] && kill -CONT "$(cat "$f")" 2>/dev/null; done
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
ping_interval_ms = 100
hung_after = 5
heartbeat_ms = 100
stop_grace_ms = 50
busy_max_ms = 5000
lease_ms = 0 ; the write lease has its own tests (test_lease.sh), in namespaces
[controller]
listen = 127.0.0.1:$CTL
state_file = $dir/state
event_log = $dir/controller.jsonl
failover_block_ms = 100
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
chmod 600 "$dir/cluster.conf" # it holds the secret
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
	[ "$(grep -c agent_connected "$dir/controller.jsonl" 2>/dev/null)" -ge 3 ] && break
	sleep 0.05
done
"$PY" bench/benchhung.py "$CTL" "$P1,$P2,$P3" "$N" "$K" "$SECS" "$dir"
