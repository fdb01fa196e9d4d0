#!/usr/bin/env bash
# Failover benchmarks: three redis-server on loopback, real agents, the controller,
# and a fault on the primary, timed by an independent client that tries a write on
# every replica until one accepts it. -f chooses the fault (bench/benchfo.py drives):
#  kill (the default): kill -9 of the primary -> a replica accepts a write
#    (p50/p99/max over N runs; target p99 < 50 ms), and the acknowledged writes lost
#    per failover under a writer at RATE writes/s that follows the primary through
#    the controller's Sentinel API.
#  stop (bench/hung.sh is this): SIGSTOP of the primary -> proc_hung
#    (agent) and -> a replica accepts a write, over N stops; slow commands on the
#    primary (Lua loops of 0.5, 1, 2 and 4 s, K runs each): failovers caused (the
#    goal is 0); the cost of bpf/sched.bpf.c per call (bpf_stats) over SECS seconds
#    while a pipe ping-pong drives the host's context-switch rate up.
# usage: bench/failover.sh [-f kill] [-n RUNS] [-r RATE]
#        bench/failover.sh -f stop [-n STOPS] [-k SLOW_RUNS] [-t COST_SECONDS]
#        (root; prints tables)
set -euo pipefail
cd "$(dirname "$0")/.."
FAULT=kill N='' RATE=1000 K=2 SECS=5
usage() {
	echo "usage: $0 [-f kill] [-n RUNS] [-r RATE]" >&2
	echo "       $0 -f stop [-n STOPS] [-k SLOW_RUNS] [-t COST_SECONDS]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	-f) FAULT=$2; shift 2 ;;
	-n) N=$2; shift 2 ;;
	-r) RATE=$2; shift 2 ;;
	-k) K=$2; shift 2 ;;
	-t) SECS=$2; shift 2 ;;
	*) usage ;;
	esac
done
case $FAULT in
kill) name=failover N=${N:-50} ;;
stop) name=hung N=${N:-10} ;;
*) usage ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "bench-$name: run as root (the agents load BPF)" >&2; exit 1; }
command -v bpftool >/dev/null || PATH=$PATH:/usr/sbin
[ -n "${FL:-}" ] || make -s all
FL=${FL:-$PWD/build/flatline}
PY=/usr/bin/python3
dir=$(mktemp -d "/tmp/flatline-bench-$name.XXXXXX")
pids=()
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	local p f
	sysctl -q kernel.bpf_stats_enabled="$stats_was" || true
	# A stopped server is continued first, so that it can die.
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
# The stop measures: a stopped server is hung after 50 ms, a busy one only after 5 s;
# stops follow each other 300 ms apart, so a failover blocks the next for only 100 ms.
agent_stop='' ctl_stop=''
if [ "$FAULT" = stop ]; then
	agent_stop=$'stop_grace_ms = 50\nbusy_max_ms = 5000'
	ctl_stop='failover_block_ms = 100'
fi
cat >"$dir/cluster.conf" <<EOC
[cluster]
name = bench
secret = bench-secret-bench-secret
[agent]
ping_interval_ms = 100
hung_after = 5
heartbeat_ms = 100
$agent_stop
lease_ms = 0 ; the write lease has its own tests (test_lease.sh), in namespaces
[controller]
listen = 127.0.0.1:$CTL
state_file = $dir/state
event_log = $dir/controller.jsonl
$ctl_stop
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
	n=$(grep -c agent_connected "$dir/controller.jsonl" 2>/dev/null || true)
	[ "${n:-0}" -ge 3 ] && break
	sleep 0.05
done
if [ "$FAULT" = kill ]; then
	"$PY" bench/benchfo.py kill "$CTL" "$P1,$P2,$P3" "$dir" "$N" "$RATE"
else
	"$PY" bench/benchfo.py stop "$CTL" "$P1,$P2,$P3" "$dir" "$N" "$K" "$SECS"
fi
