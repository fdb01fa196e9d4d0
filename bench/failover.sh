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
# The cluster file has the shipped defaults (write lease on, lease_ms 200) but for what
# a measure needs, and every table names the settings that differ: -f stop sets
# failover_block_ms = 100 (stops follow each other); -L MS sets [agent] lease_ms (0: no
# write lease). The agents run in this machine's own network namespace: their lease
# programs sit at egress of its interfaces (loopback included) and are removed with
# their pins (/sys/fs/bpf/flatline/<node>, node ids unique to the run) at the end.
# usage: bench/failover.sh [-f kill] [-n RUNS] [-r RATE] [-L LEASE_MS]
#        bench/failover.sh -f stop [-n STOPS] [-k SLOW_RUNS] [-t COST_SECONDS] [-L LEASE_MS]
#        (root; prints tables)
set -euo pipefail
cd "$(dirname "$0")/.."
FAULT=kill N='' RATE=1000 K=2 SECS=5 LEASE=''
usage() {
	echo "usage: $0 [-f kill] [-n RUNS] [-r RATE] [-L LEASE_MS]" >&2
	echo "       $0 -f stop [-n STOPS] [-k SLOW_RUNS] [-t COST_SECONDS] [-L LEASE_MS]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	-f) FAULT=$2; shift 2 ;;
	-n) N=$2; shift 2 ;;
	-r) RATE=$2; shift 2 ;;
	-k) K=$2; shift 2 ;;
	-t) SECS=$2; shift 2 ;;
	-L) LEASE=$2; shift 2 ;;
	*) usage ;;
	esac
done
case $FAULT in
kill) name=failover N=${N:-50} ;;
stop) name=hung N=${N:-10} ;;
*) usage ;;
esac
[ -z "$LEASE" ] || [[ $LEASE =~ ^[0-9]+$ ]] || usage
[ "$(id -u)" -eq 0 ] || { echo "bench-$name: run as root (the agents load BPF)" >&2; exit 1; }
command -v bpftool >/dev/null || PATH=$PATH:/usr/sbin
[ -n "${FL:-}" ] || make -s all
FL=${FL:-$PWD/build/flatline}
PY=/usr/bin/python3
dir=$(mktemp -d "/tmp/flatline-bench-$name.XXXXXX")
# Node ids of this run only: the pins and locks they leave are removed at the end.
NODE=fo$$n
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
	# The agents' lease programs stay attached while their pins exist (on purpose).
	for n in 1 2 3; do rm -rf "/sys/fs/bpf/flatline/$NODE$n" "/run/flatline/agent-$NODE$n.lock"; done
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

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
agent_stop='' ctl_stop='' lease_line='' settings=()
if [ "$FAULT" = stop ]; then
	agent_stop=$'stop_grace_ms = 50\nbusy_max_ms = 5000' # the defaults, said for the reader
	ctl_stop='failover_block_ms = 100'
	settings+=("failover_block_ms = 100")
fi
if [ -n "$LEASE" ]; then
	lease_line="lease_ms = $LEASE"
	[ "$LEASE" = 200 ] || settings+=("lease_ms = $LEASE")
fi
# What benchfo.py prints in every table's header.
if [ ${#settings[@]} -eq 0 ]; then
	export BENCH_SETTINGS="settings: the defaults (write lease 200 ms)"
else
	printf -v BENCH_SETTINGS '%s, ' "${settings[@]}"
	BENCH_SETTINGS="settings that differ from the defaults: ${BENCH_SETTINGS%, }"
	[ -n "$LEASE" ] && [ "$LEASE" != 200 ] || BENCH_SETTINGS+=" (write lease 200 ms, the default)"
	export BENCH_SETTINGS
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
$lease_line
[controller]
listen = 127.0.0.1:$CTL
state_file = $dir/state
event_log = $dir/controller.jsonl
$ctl_stop
[node "${NODE}1"]
address = 127.0.0.1
redis = 127.0.0.1:$P1
[node "${NODE}2"]
address = 127.0.0.2
redis = 127.0.0.1:$P2
[node "${NODE}3"]
address = 127.0.0.3
redis = 127.0.0.1:$P3
[shard "s"]
nodes = ${NODE}1 ${NODE}2 ${NODE}3
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
for n in "${NODE}1" "${NODE}2" "${NODE}3"; do
	"$FL" agent -c "$dir/cluster.conf" --node "$n" --event-log "$dir/events-$n.jsonl" \
		>/dev/null 2>"$dir/agent-$n.err" &
	pids+=($!)
done
for _ in $(seq 200); do
	n=$(grep -c agent_connected "$dir/controller.jsonl" 2>/dev/null || true)
	[ "${n:-0}" -ge 3 ] && break
	sleep 0.05
done
export BENCH_NODE=$NODE
if [ "$FAULT" = kill ]; then
	"$PY" bench/benchfo.py kill "$CTL" "$P1,$P2,$P3" "$dir" "$N" "$RATE"
else
	"$PY" bench/benchfo.py stop "$CTL" "$P1,$P2,$P3" "$dir" "$N" "$K" "$SECS"
fi
