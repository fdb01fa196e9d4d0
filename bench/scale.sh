#!/usr/bin/env bash
# Scale (issue 8, part 5): SHARDS shards of three redis-servers (a primary, two
# replicas) on 127.0.0.1 ports, one flatline controller, a third of the primaries
# killed with SIGKILL at once; how long until every shard has a primary again, and the
# controller's CPU and memory.
#
# Who reports: every node, every heartbeat_ms (100 ms), as an agent would. The
# primaries killed in a trial get real `flatline agent`s just before it (BPF exit
# watch, PING, INFO: the path whose speed is measured); every other node is reported by
# bench/agentsim.py, which speaks the agent protocol for many nodes from one
# process (the same REPORT, built from the server's INFO replication; no BPF). At most
# SHARDS/3 real agents run at a time: the kernel takes at most 64 BPF programs on one
# classic tracepoint machine-wide, and each agent attaches one to oom/mark_victim.
# Nodes have the address ::1 so the agents do not ICMP-probe each other: hundreds of
# tc programs on one loopback would measure lo, not the controller; host failure is not
# part of this benchmark.
#
# The controller's node limit: if it refuses SHARDS x 3 nodes, the script says so and
# runs the largest shard count it accepts.
#
# usage: bench/scale.sh [-s SHARDS] [-n TRIALS]   (root; default 100 shards,
#        3 trials, each killing a different third of the primaries)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARDS=100
TRIALS=3
while getopts s:n: o; do
	case $o in
	s) SHARDS=$OPTARG ;;
	n) TRIALS=$OPTARG ;;
	*) echo "usage: bench/scale.sh [-s SHARDS] [-n TRIALS]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench-scale: run as root (agents load BPF)" >&2; exit 1; }
[ -n "${FL:-}" ] || make -s all
FL=${FL:-$PWD/build/flatline}
PY=/usr/bin/python3
dir=$(mktemp -d /tmp/flatline-bench-scale.XXXXXX)
cp "$FL" "$dir/flatline" # a rebuild in the tree during the run must not break it
FL=$dir/flatline
pfx=sc$$
pids=()
agent_pids=()
sims=()
ctl=

cleanup() {
	set +e
	for p in "${sims[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${agent_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	[ -z "$ctl" ] || kill -TERM "$ctl" 2>/dev/null
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${agent_pids[@]}" "${sims[@]}" $ctl; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf /sys/fs/bpf/flatline/"$pfx"* /run/flatline/agent-"$pfx"*.lock
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_from() { # a base port with N free consecutive ports above it
	local base p ok
	for base in 21000 23000 25000 27000 29000; do
		ok=1
		for ((p = base; p < base + $1; p++)); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then ok=0; break; fi
		done
		[ $ok = 1 ] && { echo "$base"; return 0; }
	done
	return 1
}

node() { printf '%ss%03dn%d' "$pfx" "$1" "$2"; }          # SHARD K -> id
port() { echo $((BASE + 1 + ($1 - 1) * 3 + $2 - 1)); }   # SHARD K -> port

write_conf() { # SHARDS
	local s k
	{
		cat <<-EOF
			[cluster]
			name = scale
			secret = scale-secret
			[agent]
			lease_ms = 0 ; the write lease has its own tests (test_lease.sh), in namespaces
			event_log = $dir/events.jsonl
			[controller]
			listen = 127.0.0.1:$BASE
			state_file = $dir/state
			event_log = $dir/controller.jsonl
		EOF
		for ((s = 1; s <= $1; s++)); do
			for k in 1 2 3; do
				printf '[node "%s"]\naddress = ::1\nredis = 127.0.0.1:%d\npidfile = %s/redis-%d.pid\n' \
					"$(node $s $k)" "$(port $s $k)" "$dir" "$(port $s $k)"
			done
			printf '[shard "s%03d"]\nnodes = %s %s %s\n' "$s" "$(node $s 1)" "$(node $s 2)" "$(node $s 3)"
		done
	} >"$dir/cluster.conf"
}

# accepts N: the controller takes a cluster file of N shards (it refuses too many nodes
# at once, before touching any server).
accepts() {
	write_conf "$1"
	timeout 0.5 "$FL" controller -c "$dir/cluster.conf" --event-log "$dir/probe.jsonl" \
		--state-file "$dir/probe.state" >"$dir/probe.out" 2>&1
	[ $? = 124 ]
}

BASE=$(free_from $((SHARDS * 3 + 1))) || { echo "bench-scale: no free port range" >&2; exit 1; }
asked=$SHARDS
if ! accepts "$SHARDS"; then
	why=$(tail -n 1 "$dir/probe.out")
	lo=1 hi=$SHARDS
	while [ $((hi - lo)) -gt 1 ]; do
		mid=$(((lo + hi) / 2))
		if accepts "$mid"; then lo=$mid; else hi=$mid; fi
	done
	SHARDS=$lo
	echo "bench-scale: the controller refuses $asked shards ($((asked * 3)) nodes): \"$why\"" >&2
	echo "bench-scale: running the largest it accepts: $SHARDS shards ($((SHARDS * 3)) nodes)" >&2
fi
rm -f "$dir"/probe.*
KILL=$((SHARDS / 3))
[ "$KILL" -ge 1 ] || KILL=1
[ $((KILL * TRIALS)) -le "$SHARDS" ] || TRIALS=$((SHARDS / KILL))
write_conf "$SHARDS"

echo "bench-scale: $SHARDS shards, $((SHARDS * 3)) redis-servers on 127.0.0.1:$((BASE + 1))-$((BASE + SHARDS * 3)), controller on :$BASE ($dir)" >&2
for ((s = 1; s <= SHARDS; s++)); do
	for k in 1 2 3; do
		p=$(port $s $k)
		args=(--port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir"
			--dbfilename "dump-$p.rdb" --pidfile "$dir/redis-$p.pid" --logfile "$dir/redis-$p.log"
			--repl-diskless-sync-delay 0)
		[ "$k" = 1 ] || args+=(--replicaof 127.0.0.1 "$(port $s 1)")
		redis-server "${args[@]}" &
		pids+=($!)
		disown $!
	done
done

# INFO of every server in one process: roles, links.
cat >"$dir/check.py" <<'EOF'
import sys, redis
base, shards, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
bad = 0
masters_of = {}
for s in range(1, shards + 1):
    ms = []
    for k in (1, 2, 3):
        p = base + 1 + (s - 1) * 3 + k - 1
        try:
            i = redis.Redis(port=p, socket_timeout=1).info("replication")
        except Exception:
            continue
        if i["role"] == "master":
            ms.append(p)
        elif mode == "linked" and i.get("master_link_status") != "up":
            bad += 1
    if len(ms) != 1:
        bad += 1
    masters_of[s] = ms
if mode == "masters":
    print(" ".join("%d:%s" % (s, ",".join(map(str, m))) for s, m in masters_of.items()))
sys.exit(1 if bad else 0)
EOF
for _ in $(seq 300); do "$PY" "$dir/check.py" "$BASE" "$SHARDS" linked && break; sleep 0.2; done
"$PY" "$dir/check.py" "$BASE" "$SHARDS" linked || { echo "bench-scale: replicas did not sync" >&2; exit 1; }

"$FL" controller -c "$dir/cluster.conf" 2>"$dir/controller.err" &
ctl=$!
for _ in $(seq 500); do grep -q controller_ready "$dir/controller.jsonl" 2>/dev/null && break; sleep 0.02; done
grep -q controller_ready "$dir/controller.jsonl" || { cat "$dir/controller.err" >&2; exit 1; }

# Reporters: agentsim "rest" for every node outside the trials' groups, agentsim "gT"
# for trial T's primaries until just before that trial, when real agents take over
# those nodes (at most KILL real agents at a time: a classic tracepoint takes at most
# 64 BPF programs machine-wide, and the agent attaches one to oom/mark_victim).
sims=()
start_sim() { # NAME: agentsim for the nodes in $dir/sim.NAME
	"$PY" bench/agentsim.py --controller "127.0.0.1:$BASE" --secret scale-secret \
		--nodes-file "$dir/sim.$1" >"$dir/sim.$1.json" 2>"$dir/sim.$1.err" &
	sims+=($!)
	eval "sim_$1=$!"
	sim_rest=${sim_rest:-}
}
: >"$dir/sim.rest"
for ((s = 1; s <= SHARDS; s++)); do
	g=$(((s - 1) / KILL + 1))
	if [ "$g" -le "$TRIALS" ]; then
		echo "$(node $s 1) $(port $s 1)" >>"$dir/sim.g$g"
	else
		echo "$(node $s 1) $(port $s 1)" >>"$dir/sim.rest"
	fi
	for k in 2 3; do echo "$(node $s $k) $(port $s $k)" >>"$dir/sim.rest"; done
done
t=$SECONDS
start_sim rest
for ((g = 1; g <= TRIALS; g++)); do start_sim "g$g"; done
status_ok() {
	"$FL" status -c "$dir/cluster.conf" --json 2>/dev/null |
		jq '[.shards[].nodes[] | select(.health == "ok")] | length'
}
for _ in $(seq 600); do [ "$(status_ok)" = $((SHARDS * 3)) ] && break; sleep 0.1; done
[ "$(status_ok)" = $((SHARDS * 3)) ] || { echo "bench-scale: only $(status_ok) nodes healthy" >&2; exit 1; }
echo "bench-scale: $((SHARDS * 3)) nodes reporting (emulated) after $((SECONDS - t)) s" >&2

cpu_ns() { awk '{ print $1 }' "/proc/$ctl/schedstat"; } # time on a CPU, ns
rss_kb() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$ctl/status"; }
sleep 2
c0=$(cpu_ns)
s0=$(date +%s%N)
sleep 5
steady=$(awk -v d=$(($(cpu_ns) - c0)) -v ns=$(($(date +%s%N) - s0)) 'BEGIN { printf "%.1f", 100 * d / ns }')

rows=()
for ((tr = 1; tr <= TRIALS; tr++)); do
	first=$(((tr - 1) * KILL + 1))
	last=$((first + KILL - 1))
	# Real agents take over this trial's primaries.
	agent_pids=()
	for ((s = first; s <= last; s++)); do
		"$FL" agent -c "$dir/cluster.conf" --node "$(node $s 1)" --event-log "$dir/events-$s.jsonl" \
			2>"$dir/agent-$s.err" &
		agent_pids+=($!)
	done
	for ((s = first; s <= last; s++)); do
		for _ in $(seq 500); do grep -q '"kind":"agent_start"' "$dir/events-$s.jsonl" 2>/dev/null && break; sleep 0.02; done
	done
	eval "kill -TERM \$sim_g$tr"
	want=$((tr * KILL))
	for _ in $(seq 500); do
		[ "$(grep -c '"kind":"controller_connected"' "$dir"/events-*.jsonl | awk -F: '{ n += $2 } END { print n }')" -ge "$want" ] && break
		sleep 0.02
	done
	sleep 1 # a few heartbeats from the real agents
	kill_pids=()
	for ((s = first; s <= last; s++)); do kill_pids+=("$(cat "$dir/redis-$(port $s 1).pid")"); done
	c0=$(cpu_ns)
	t0=$(date +%s%N)
	kill -KILL "${kill_pids[@]}"
	since=$(date -u -d "@$((t0 / 1000000000))" +%Y-%m-%dT%H:%M:%S)
	for _ in $(seq 1500); do
		n=$(grep -c '"kind":"failover_end"' "$dir/controller.jsonl" || true)
		[ "$n" -ge $((tr * KILL)) ] && break
		sleep 0.02
	done
	c1=$(cpu_ns)
	for p in "${agent_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	wait "${agent_pids[@]}" 2>/dev/null || true
	agent_pids=()
	"$PY" "$dir/check.py" "$BASE" "$SHARDS" masters >"$dir/masters.$tr" && ok=yes || ok=NO
	row=$(jq -rs --arg since "$since" --argjson t0 "$t0" --argjson first "$first" --argjson last "$last" '
		def ms: (.ts | sub("\\.(?<f>[0-9]+)Z$"; "Z") | fromdateiso8601) * 1000
			+ ((.ts | capture("\\.(?<f>[0-9]+)Z$").f) | tonumber / 1000) - ($t0 / 1000000);
		[.[] | select(.ts >= $since) | select(((.shard // "s0") | ltrimstr("s") | tonumber) as $n
			| $n >= $first and $n <= $last)] as $ev
		| [$ev[] | select(.kind == "node_down") | ms] as $d
		| [$ev[] | select(.kind == "promoted") | ms] | sort as $p
		| [$ev[] | select(.kind == "failover_end") | ms] | sort as $e
		| "\($p | length) \($d | min // -1) \($p[0] // -1) \($p[($p | length) / 2 | floor] // -1) \($p[-1] // -1) \($e[-1] // -1)"
		' "$dir/controller.jsonl")
	read -r np dmin pfirst pmed plast elast <<<"$row"
	cpu_ms=$(awk -v d=$((c1 - c0)) 'BEGIN { printf "%.1f", d / 1e6 }')
	rows+=("$(printf '| %d | %d | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %s ms | %s |' \
		"$tr" "$KILL" "$np" "$dmin" "$pfirst" "$pmed" "$plast" "$elast" "$cpu_ms" "$ok")")
	sleep 1
done
rss=$(rss_kb VmRSS)
hwm=$(rss_kb VmHWM)
kill -TERM "$sim_rest"
wait "$sim_rest" 2>/dev/null || true
simj=$(cat "$dir/sim.rest.json")

echo
echo "flatline bench-scale: $SHARDS shards ($((SHARDS * 3)) redis-server on 127.0.0.1 ports) through one controller;"
echo "reports for all $((SHARDS * 3)) nodes every 100 ms: real flatline agents on the $KILL primaries killed in each trial, agentsim.py for the rest; $(nproc) CPUs"
[ "$asked" = "$SHARDS" ] || echo "(asked for $asked shards: the controller refused $((asked * 3)) nodes, see above)"
echo
echo "| trial | killed at once | promoted | first node_down | first promoted | median promoted | all promoted | all failover_end | controller CPU, T0 → all done | one primary per shard (INFO) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "controller: $steady % of one core at steady state ($((SHARDS * 3)) nodes reporting; agentsim for $(wc -l <"$dir/sim.rest") of them sent $(jq .reports_per_s <<<"$simj") reports/s); RSS $((rss / 1024)) MiB, peak $((hwm / 1024)) MiB"
echo "agentsim (rest): $simj"
