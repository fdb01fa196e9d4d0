#!/usr/bin/env bash
# Scale: SHARDS shards of three servers (a primary, two replicas) on
# 127.0.0.1 ports, one flatline controller, a third of the primaries killed at once;
# how long until every shard has a primary again, and the controller's CPU.
#
# Every trial starts from nothing (servers, controller, reporters), so every trial
# kills the same number of primaries of a cluster in the same state.
#
# Servers (-m): "redis" runs real redis-servers (--hz 1), killed with SIGKILL; "sim"
# runs bench/serversim.c, one process answering for every port with Redis's replies
# and consistent replication state, where SIMKILL closes a port (connections refused
# from then on). Default: redis up to 100 shards, sim above.
#
# Reporters: bench/loadgen.c, one thread speaking the agent protocol for every node
# (HELLO, REPORT every heartbeat_ms, a quiet replica every replica_heartbeat_ms, and
# at once on a change, a heartbeat never queued behind an unanswered one; the agent's REPORT key
# table and INFO parser, the agent's rule for a probe: refused = down, lost = unknown,
# timed out = unchanged). No BPF: a killed server is seen by its refused connection,
# not by the kernel (bench/detect.sh measures that path). The generator's own health
# is judged over each trial: a report slot sent late, a slot missed, or a controller
# connection lost makes the trial INVALID, and it is not counted in the figures.
# loadgen runs as LOADGENS processes (-p, default one per CPU), each taking every
# LOADGENS-th node and pinned to its own CPU; their counters are summed. loadgen,
# serversim and the controller run at nice -10, so that other work on a shared machine
# (compilers, fuzzers) does not starve the measured processes; the machine's load
# average before the run is printed with the table.
#
# The cluster file has the shipped defaults (write lease on, lease_ms 200; loadgen holds
# no lease, it has no BPF, but the controller runs its lease rules: a server whose
# connection is refused is down, which needs no lease wait); -L MS sets [agent] lease_ms
# (0: no lease), and the table's header says so.
#
# usage: bench/scale.sh [-s SHARDS] [-n TRIALS] [-m redis|sim] [-k SECONDS] [-p LOADGENS]
#                       [-L LEASE_MS]
#        (default 100 shards, 5 trials; -k: steady-state window, default 5 s)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARDS=100
TRIALS=5
MODE=
STEADY=5
LOADGENS=$(nproc)
LEASE=
while getopts s:n:m:k:p:L: o; do
	case $o in
	s) SHARDS=$OPTARG ;;
	n) TRIALS=$OPTARG ;;
	m) MODE=$OPTARG ;;
	k) STEADY=$OPTARG ;;
	p) LOADGENS=$OPTARG ;;
	L) LEASE=$OPTARG ;;
	*) echo "usage: bench/scale.sh [-s SHARDS] [-n TRIALS] [-m redis|sim] [-k SECONDS] [-p LOADGENS] [-L LEASE_MS]" >&2; exit 2 ;;
	esac
done
[ -z "$LEASE" ] || [[ $LEASE =~ ^[0-9]+$ ]] || { echo "bench-scale: -L takes ms" >&2; exit 2; }
SETTINGS="the defaults (write lease 200 ms)"
[ -z "$LEASE" ] || [ "$LEASE" = 200 ] || SETTINGS="settings that differ from the defaults: lease_ms = $LEASE"
export LOADGENS
[ -n "$MODE" ] || { [ "$SHARDS" -le 100 ] && MODE=redis || MODE=sim; }
case $MODE in redis | sim) ;; *) echo "bench-scale: -m redis or sim" >&2; exit 2 ;; esac
for t in jq redis-cli taskset; do command -v $t >/dev/null || { echo "bench-scale: needs $t" >&2; exit 1; }; done
[ -n "${FL:-}" ] || make -s all build/tools/loadgen build/tools/serversim
FL=${FL:-$PWD/build/flatline}
dir=$(mktemp -d /tmp/flatline-bench-scale.XXXXXX)
# Copies: a rebuild in the tree during the run must not break it.
cp "$FL" "$dir/flatline"
cp build/tools/loadgen build/tools/serversim "$dir/"
FL=$dir/flatline
NODES=$((SHARDS * 3))
KILL=$((SHARDS / 3))
[ "$KILL" -ge 1 ] || KILL=1
pids=() # servers of the current trial
lgs=()  # loadgen processes of the current trial
sim= ctl=

stop_trial() {
	set +e
	for p in "${lgs[@]}"; do kill -TERM "$p" 2>/dev/null; done
	[ -z "$ctl" ] || kill -TERM "$ctl" 2>/dev/null
	[ -z "$sim" ] || kill -TERM "$sim" 2>/dev/null
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${lgs[@]}" $ctl $sim; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	pids=() lgs=() sim= ctl=
	set -e
}
cleanup() {
	stop_trial
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_from() { # a base port with N free consecutive ports above it
	local base p ok
	for base in 21000 25000 29000 33000 37000; do
		ok=1
		for ((p = base; p <= base + $1; p++)); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then ok=0; break; fi
		done
		[ $ok = 1 ] && { echo "$base"; return 0; }
	done
	return 1
}
BASE=$(free_from $((NODES + 1))) || { echo "bench-scale: no free port range" >&2; exit 1; }
node() { printf 's%04dn%d' "$1" "$2"; }                  # SHARD K -> id
port() { echo $((BASE + 1 + ($1 - 1) * 3 + $2 - 1)); }   # SHARD K -> port

{
	cat <<-EOF
		[cluster]
		name = scale
		secret = scale-secret-scale-secret
		[agent]
		${LEASE:+lease_ms = $LEASE}
		[controller]
		listen = 127.0.0.1:$BASE
		state_file = STATE
		event_log = EVLOG
	EOF
	for ((s = 1; s <= SHARDS; s++)); do
		for k in 1 2 3; do
			printf '[node "%s"]\naddress = ::1\nredis = 127.0.0.1:%d\n' "$(node $s $k)" "$(port $s $k)"
		done
		printf '[shard "s%04d"]\nnodes = %s %s %s\n' "$s" "$(node $s 1)" "$(node $s 2)" "$(node $s 3)"
	done
} >"$dir/cluster.tmpl"
: >"$dir/nodes" && : >"$dir/layout"
for ((s = 1; s <= SHARDS; s++)); do
	for k in 1 2 3; do
		echo "$(node $s $k) $(port $s $k)" >>"$dir/nodes"
		if [ $k = 1 ]; then echo "$(port $s 1) master"; else echo "$(port $s $k) replica-of $(port $s 1)"; fi >>"$dir/layout"
	done
done

cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; } # time on a CPU, ns
snap() { # the loadgens' counters now, summed into one JSON line
	local i n=()
	for i in "${!lgs[@]}"; do n[i]=$(wc -l <"$dir/t/lg$i.out"); done
	kill -USR1 "${lgs[@]}"
	for i in "${!lgs[@]}"; do
		for _ in $(seq 100); do [ "$(wc -l <"$dir/t/lg$i.out")" -gt "${n[i]}" ] && break; sleep 0.02; done
	done
	for i in "${!lgs[@]}"; do tail -n 1 "$dir/t/lg$i.out"; done | jq -cs '
		reduce .[] as $x ({}; reduce ($x | keys[]) as $k (.;
			.[$k] = if ($k | test("^max_")) or $k == "seconds" or $k == "heartbeat_ms"
				then ([.[$k] // 0, $x[$k]] | max) else (.[$k] // 0) + $x[$k] end))'
}
# health A B: the generator over the window between snapshots A and B: "ok" or INVALID(why)
health() {
	jq -rn --argjson a "$1" --argjson b "$2" '
		($b.late - $a.late) as $late | ($b.missed - $a.missed) as $missed
		| ($b.ctl_reconnects - $a.ctl_reconnects) as $rc | ($b.slots - $a.slots) as $slots
		| "\($b.on_time - $a.on_time)/\($slots) on time, \($late) late, \($missed) missed, \(($b.deferred // 0) - ($a.deferred // 0)) waiting for an answer, \($b.answered - $a.answered) answered (\($b.slow_answers - $a.slow_answers) after > 1 heartbeat, worst \($b.max_answer_ms) ms), \($rc) reconnects, timer lag <= \($b.max_lag_ms) ms, loadgen \((($b.cpu_s - $a.cpu_s) * 100 / ($b.seconds - $a.seconds)) | floor) % CPU (\(env.LOADGENS) processes)"
		+ (if $late + $missed + $rc > 0 then " INVALID" else " ok" end)'
}
status_ok() {
	"$FL" status -c "$dir/t/cluster.conf" --json 2>/dev/null |
		jq '[.shards[].nodes[] | select(.health == "ok")] | length' 2>/dev/null || echo 0
}

run_trial() { # TRIAL: one line of results in $dir/rows
	local tr=$1 t=$dir/t s k p i args c0 c1 w0 w1 a b t0 since steady us ok n row
	rm -rf "$t" && mkdir -p "$t"
	sed -e "s|STATE|$t/state|" -e "s|EVLOG|$t/controller.jsonl|" "$dir/cluster.tmpl" >"$t/cluster.conf"
	chmod 600 "$t/cluster.conf"
	if [ "$MODE" = sim ]; then
		nice -n -10 "$dir/serversim" --layout "$dir/layout" >"$t/sim.out" 2>"$t/sim.err" &
		sim=$!
		for _ in $(seq 200); do grep -q servers "$t/sim.out" 2>/dev/null && break; sleep 0.05; done
		grep -q servers "$t/sim.out" || { cat "$t/sim.err" >&2; return 1; }
	else
		for ((s = 1; s <= SHARDS; s++)); do
			for k in 1 2 3; do
				p=$(port $s $k)
				args=(--port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$t" --hz 1
					--dbfilename "dump-$p.rdb" --pidfile "$t/redis-$p.pid" --logfile "$t/redis-$p.log"
					--repl-diskless-sync-delay 0)
				[ "$k" = 1 ] || args+=(--replicaof 127.0.0.1 "$(port $s 1)")
				redis-server "${args[@]}" &
				pids+=($!)
				disown $!
			done
		done
		for ((s = 1; s <= SHARDS; s++)); do
			for k in 2 3; do
				for _ in $(seq 300); do
					redis-cli -p "$(port $s $k)" info replication 2>/dev/null | grep -q 'master_link_status:up' && break
					sleep 0.1
				done
			done
		done
	fi
	nice -n -10 "$FL" controller --allow-root -c "$t/cluster.conf" 2>"$t/controller.err" &
	ctl=$!
	for _ in $(seq 500); do grep -q controller_ready "$t/controller.jsonl" 2>/dev/null && break; sleep 0.02; done
	grep -q controller_ready "$t/controller.jsonl" || { cat "$t/controller.err" >&2; return 1; }
	for ((i = 0; i < LOADGENS; i++)); do
		: >"$t/lg$i.out"
		nice -n -10 taskset -c $((i % $(nproc))) "$dir/loadgen" --part "$i/$LOADGENS" \
			--controller "127.0.0.1:$BASE" --secret scale-secret-scale-secret --nodes-file "$dir/nodes" \
			>>"$t/lg$i.out" 2>"$t/lg$i.err" &
		lgs+=($!)
	done
	for _ in $(seq 300); do [ "$(status_ok)" = "$NODES" ] && break; sleep 0.2; done
	n=$(status_ok)
	[ "$n" = "$NODES" ] || { echo "bench-scale: only $n of $NODES nodes healthy" >&2; return 1; }
	sleep 2
	# Steady state: every node reporting, nothing failing.
	a=$(snap)
	c0=$(cpu_ns "$ctl") w0=$(date +%s%N)
	sleep "$STEADY"
	c1=$(cpu_ns "$ctl") w1=$(date +%s%N)
	b=$(snap)
	steady=$(awk -v d=$((c1 - c0)) -v ns=$((w1 - w0)) 'BEGIN { printf "%.1f", 100 * d / ns }')
	# The controller's CPU per REPORT answered in that window (network side included).
	us=$(jq -rn --argjson a "$a" --argjson b "$b" --argjson d $((c1 - c0)) \
		'if $b.answered > $a.answered then $d / 1000 / ($b.answered - $a.answered) * 10 | floor / 10 else -1 end')
	echo "$(health "$a" "$b")" >"$t/health.steady"
	# The kill: shards 1..KILL lose their primary at once.
	a=$(snap)
	c0=$(cpu_ns "$ctl")
	t0=$(date +%s%N)
	if [ "$MODE" = sim ]; then
		redis-cli -p "$(port "$SHARDS" 3)" SIMKILL $(for ((s = 1; s <= KILL; s++)); do port $s 1; done) >/dev/null
	else
		kill -KILL $(for ((s = 1; s <= KILL; s++)); do cat "$t/redis-$(port $s 1).pid"; done)
	fi
	since=$(date -u -d "@$((t0 / 1000000000))" +%Y-%m-%dT%H:%M:%S)
	for _ in $(seq 500); do
		n=$(grep -c '"kind":"failover_end"' "$t/controller.jsonl" || true)
		[ "$n" -ge "$KILL" ] && break
		sleep 0.02
	done
	c1=$(cpu_ns "$ctl")
	sleep 0.3 # the reports that follow the last failover are in the window too
	b=$(snap)
	echo "$(health "$a" "$b")" >"$t/health.trial"
	row=$(jq -rs --arg since "$since" --argjson t0 "$t0" --argjson kill "$KILL" '
		def ms: (.ts | sub("\\.(?<f>[0-9]+)Z$"; "Z") | fromdateiso8601) * 1000
			+ ((.ts | capture("\\.(?<f>[0-9]+)Z$").f) | tonumber / 1000) - ($t0 / 1000000);
		[.[] | select(.ts >= $since) | select(((.shard // "s0") | ltrimstr("s") | tonumber) as $n
			| $n >= 1 and $n <= $kill)] as $ev
		| [$ev[] | select(.kind == "node_down") | ms] as $d
		| [$ev[] | select(.kind == "promoted") | ms] | sort as $p
		| [$ev[] | select(.kind == "failover_end") | ms] | sort as $e
		| "\($p | length) \($d | min // -1) \($p[0] // -1) \($p[($p | length) / 2 | floor] // -1) \($p[-1] // -1) \($e | length)"
		' "$t/controller.jsonl")
	read -r np dmin pfirst pmed plast nend <<<"$row"
	ok=$([ "$np" = "$KILL" ] && [ "$nend" = "$KILL" ] && echo yes || echo NO)
	printf '%d %d %d %.1f %.1f %.1f %.1f %s %s %.1f %s %s|%s|%s\n' "$tr" "$KILL" "$np" "$dmin" "$pfirst" "$pmed" "$plast" \
		"$(awk -v d=$((c1 - c0)) 'BEGIN { printf "%.1f", d / 1e6 }')" "$steady" \
		"$(awk -v r="$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$ctl/status")" 'BEGIN { printf "%.1f", r / 1024 }')" \
		"$ok" "$us" "$(cat "$t/health.steady")" "$(cat "$t/health.trial")" >>"$dir/rows"
	stop_trial
	[ -z "${KEEP:-}" ] || cp -r "$t" "$dir/trial$tr"
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-scale: $SHARDS shards, $NODES servers ($MODE) on 127.0.0.1:$((BASE + 1))-$((BASE + NODES)), controller on :$BASE, $TRIALS trials ($dir)" >&2
: >"$dir/rows"
for ((tr = 1; tr <= TRIALS; tr++)); do
	run_trial "$tr" || { echo "bench-scale: trial $tr failed to set up" >&2; stop_trial; }
	sed -n "${tr}p" "$dir/rows" | cut -d'|' -f1 >&2
done

servers=$([ "$MODE" = sim ] && echo "bench/serversim (one process answering for every port)" || echo "real redis-server 7.0 (--hz 1)")
echo
echo "flatline bench-scale: $SHARDS shards ($NODES nodes: $servers), one controller, reports from bench/loadgen as"
echo "the agent sends them (every 100 ms, a quiet replica every 500 ms, a change at once); $KILL primaries killed at once"
echo "per trial; $(nproc) CPUs, load average before the run $load, after it $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cluster file: $SETTINGS"
echo
echo "| trial | killed | promoted | first node_down | first promoted | median promoted | all promoted | controller CPU, kill → all done | controller CPU, steady | per REPORT | controller peak RSS | all ended ok | loadgen, steady | loadgen, trial |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
while IFS='|' read -r r hs ht; do
	read -r tr k np dmin pf pm pl cpu st rss ok us <<<"$r"
	echo "| $tr | $k | $np | $dmin ms | $pf ms | $pm ms | $pl ms | $cpu ms | $st % | $us µs | $rss MiB | $ok | $hs | $ht |"
done <"$dir/rows"
echo
# Figures over the valid trials only (both windows ok, every shard promoted).
awk -F'|' '$2 ~ / ok$/ && $3 ~ / ok$/ { split($1, f, " "); if (f[11] == "yes") print $1 }' "$dir/rows" >"$dir/valid"
nv=$(wc -l <"$dir/valid")
echo "valid trials: $nv of $(wc -l <"$dir/rows") (a trial is INVALID when loadgen sent a report late, missed one, or lost a controller connection, in the steady window or the trial)"
if [ "$nv" -gt 0 ]; then
	echo
	echo "| over valid trials | min | median | max |"
	echo "|---|---|---|---|"
	for col in "5 first promoted ms" "6 median promoted ms" "7 all promoted ms" "8 controller CPU kill → all done ms" "9 controller CPU steady %" "12 controller CPU per REPORT µs"; do
		read -r i label <<<"$col"
		sort -n -k"$i","$i" "$dir/valid" | awk -v i="$i" -v l="$label" '{ v[NR] = $i } END {
			printf "| %s | %s | %s | %s |\n", l, v[1], v[int((NR + 1) / 2)], v[NR] }'
	done
fi
