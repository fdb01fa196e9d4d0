#!/usr/bin/env bash
# flatline vs Sentinel on the same hosts, on Redis and on Valkey: tests/lib/cluster.sh's
# three namespace hosts (a primary + two replicas) and the same writer
# (tests/lib/clwriter.py, 1,000 RPUSH/s, every acknowledged value recorded), run with
#   flatline          agents + controller + BIND9 named at the shipped defaults (write
#                     lease 200 ms; -L sets [agent] lease_ms, and every table says so);
#                     the writer follows DNS
#   sentinel-1s       the flavour's Sentinel, one on each host (three, quorum 2),
#                     default settings but down-after-milliseconds 1000; the writer is a
#                     Sentinel client (redis-py's discover_master)
#   sentinel-default  the same with Sentinel's defaults (down-after-milliseconds 30000)
# on each server flavour (tests/lib/flavour.sh): Redis 7.0 hosts with Debian's
# redis-sentinel, Valkey 8.0 hosts with valkey-sentinel (built by scripts/build-valkey.sh).
# Faults of the primary (-f):
#   sigkill  kill -9 of its server
#   sigstop  SIGSTOP of its server (hung; SIGCONT once a new primary took a write)
#   host     host killed: its link cut and every process in its namespace killed (the
#            sentinel and the agent there included)
#   cut      host cut off: nftables drops everything on its eth0 both ways
#            (tests/lib/partition.sh's pt_cut full); its processes run on
#   slow     a 1 s slow command: a Lua busy loop of 1 s (EVAL) on the primary; the
#            right answer is no failover (Valkey: 1 s of the server's CPU, os.clock)
#   sleep    DEBUG SLEEP 1 on the primary (its command thread asleep for 1 s); the same
# Each trial is a fresh cluster. Per trial (tests/lib/cltimeline.py):
#   detection        flatline: the controller's node_down; Sentinel: the first +odown
#   new primary      the promoted server in master mode: flatline's `promoted` event
#                    (after its EXEC reply); Sentinel: "MASTER MODE enabled" (Valkey:
#                    "PRIMARY MODE enabled") in the promoted server's own log (ms)
#   first write      the writer's first acknowledged write on another server
#   DNS              flatline: dns_updated (Sentinel has none)
#   writes lost      acknowledged writes missing from the primary afterwards
#   failed over      slow, sleep: another server is primary 4 s after the command began
#   longest gap      the writer's longest time without an acknowledged write
# One table of every fault, server and system side by side (time to the first write on
# the new primary, or the failovers a slow command caused; writes lost), then a table
# per fault with min / median / max and the ratio Sentinel median / flatline median.
# Plots of the distributions (SVG, gnuplot: bench/compare_report.py) and the per-trial
# results (results.jsonl) go to OUT (-o; default a new /tmp/flatline-bench-compare-out.*),
# printed at the end. Every sentinel is killed at the end of each trial (and on exit);
# the script checks that none is left.
#
# usage: bench/compare.sh [-n TRIALS] [-k FLATLINE_SIGKILL_TRIALS] [-D SENTINEL_DEFAULT_TRIALS]
#                         [-F FLAVOURS] [-s SYSTEMS] [-f FAULTS] [-L LEASE_MS] [-l LOCK]
#                         [-o OUT] [-r RESULTS]   (root)
#   defaults: -n 5 -k 20 -D TRIALS -F redis,valkey -s flatline,sentinel-1s,sentinel-default
#             -f sigkill,sigstop,host,cut,slow,sleep
#   (sentinel-default takes about 35 s per trial of a fault that fails over)
#   -l LOCK: hold flock(1) on LOCK for one fault on one flavour at a time (a shared
#   machine's test lock)
#   -r RESULTS: no trials, only the tables and plots from a results file of earlier runs
#   (results.jsonl of OUT; several runs' files concatenated)
set -uo pipefail
cd "$(dirname "$0")/.."
N=5
NK=20
ND=
SYSTEMS=flatline,sentinel-1s,sentinel-default
FAULTS=sigkill,sigstop,host,cut,slow,sleep
FLAVOURS=redis,valkey
REPORT=
LEASE=
LOCK=
OUT=
while getopts n:k:D:s:f:r:F:L:l:o: o; do
	case $o in
	r) REPORT=$OPTARG ;;
	n) N=$OPTARG ;;
	k) NK=$OPTARG ;;
	D) ND=$OPTARG ;;
	s) SYSTEMS=$OPTARG ;;
	f) FAULTS=$OPTARG ;;
	F) FLAVOURS=$OPTARG ;;
	L) LEASE=$OPTARG ;;
	l) LOCK=$OPTARG ;;
	o) OUT=$OPTARG ;;
	*) sed -n '/^# usage/,/^#   (results/p' "$0" >&2; exit 2 ;;
	esac
done
ND=${ND:-$N}
[ -z "$LEASE" ] || [[ $LEASE =~ ^[0-9]+$ ]] || { echo "bench-compare: -L takes a number of ms" >&2; exit 2; }
# flatline's settings that differ from the shipped defaults: named in every table.
SETTINGS=defaults
[ -z "$LEASE" ] || [ "$LEASE" = 200 ] || SETTINGS="lease_ms = $LEASE"
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/sentinels.sh
. tests/lib/sentinels.sh
# shellcheck source=tests/lib/partition.sh
. tests/lib/partition.sh

setup() {
	local fl
	[ "$(id -u)" -eq 0 ] || { echo "bench-compare: run as root (namespaces, BPF)" >&2; exit 1; }
	for fl in "${flavours[@]}"; do
		fl_flavour_set "$fl" || { echo "bench-compare: $FL_FLAVOUR_WHY" >&2; exit 1; }
	done
	if [ "$FL" = "$CL_ROOT/build/flatline" ]; then make -s all; fi
	export FL_NODE_PREFIX=cmp$$n
	work=$(mktemp -d /tmp/flatline-bench-compare.XXXXXX)
	[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/flatline-bench-compare-out.XXXXXX)
	mkdir -p "$OUT"
	results=$OUT/results.jsonl
	[ -z "$LEASE" ] || export FL_AGENT_CONF="lease_ms = $LEASE"
	NAME=flcmp$$
	# Our own copy of the binary: a rebuild in the tree during the run must not break it.
	cp "$FL" "$work/flatline"
	FL=$work/flatline
	trap cleanup EXIT
	trap 'exit 130' INT TERM
}

cleanup() {
	cl_down
	local p
	for p in $(sentinels_left); do kill -KILL "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}

# new_write: the writer has an acknowledged write on another server than the old primary.
new_write() { grep -q "^A .* $CL_NET\.[23]:" "$CL_DIR/writer.out"; }

# A Lua loop of ARGV[1] ms (the `slow` fault): the server's command thread busy on a CPU.
# Valkey 8 freezes TIME within a script, so there it counts the server's CPU time
# (os.clock, which Redis 7.0's sandbox lacks; rawget: no error on a missing global).
LUA_LOOP='local ms = tonumber(ARGV[1]) local os_ = rawget(_G, "os")
if os_ and os_.clock then local c0 = os_.clock() repeat until (os_.clock() - c0) * 1000 >= ms return 1 end
local s = redis.call("TIME") local t0 = s[1] * 1000000 + s[2]
repeat local t = redis.call("TIME") until t[1] * 1000000 + t[2] - t0 >= ms * 1000
return 1'

# trial FLAVOUR SYSTEM FAULT I: one fresh cluster, one fault; appends a JSON line to
# $results.
trial() {
	local flavour=$1 sys=$2 fault=$3 i=$4 limit pid p new j agents=() slogs=() rlogs=() fo=false
	SENTINEL_PIDS=()
	FL_FLAVOUR=$flavour cl_init "$work/c" "$NAME"
	if [ "$sys" = flatline ]; then
		cl_up || return 1
		cl_writer_start --rate 1000 || return 1
		limit=15
	else
		cl_up_servers || return 1
		if [ "$sys" = sentinel-1s ]; then start_sentinels 1000 || return 1; limit=30
		else start_sentinels "" || return 1; limit=90; fi
		cl_writer_start --rate 1000 --service "$CL_SHARD" \
			--sentinel "$(cl_ip 1):26379,$(cl_ip 2):26379,$(cl_ip 3):26379" || return 1
	fi
	sleep 1.5
	pid=$(cl_pid "redis-$(cl_node 1)")
	case $fault in
	sigkill) T0=$(cl_now_ns); kill -KILL "$pid" ;;
	sigstop) T0=$(cl_now_ns); kill -STOP "$pid" ;;
	host)
		T0=$(cl_now_ns)
		cl_link_down 1
		for p in $(ip netns pids "$(cl_ns 1)"); do kill -KILL "$p"; done
		;;
	cut) T0=$(cl_now_ns); pt_cut full 1 ;;
	slow)
		T0=$(cl_now_ns)
		CL_CLI_TIMEOUT=10 cl_redis 1 eval "$LUA_LOOP" 0 1000 >"$CL_DIR/slow.out" 2>&1
		;;
	sleep)
		# DEBUG is enabled for local connections (tests/lib/cluster.sh): from the host itself.
		T0=$(cl_now_ns)
		timeout 10 nsenter --net="/run/netns/$(cl_ns 1)" "$CL_CLI" -h 127.0.0.1 -p 6379 \
			debug sleep 1 >"$CL_DIR/slow.out" 2>&1
		;;
	esac
	case $fault in
	slow | sleep)
		grep -qx '1\|OK' "$CL_DIR/slow.out" ||
			echo "  ($sys $fault $i: the slow command answered $(head -c 200 "$CL_DIR/slow.out"))" >&2
		# Anything the second of silence set off has happened 4 s after it began (a
		# Sentinel at down-after 1 s fails over in about 2.3 s).
		sleep "$(awk -v t0="$T0" -v now="$(cl_now_ns)" 'BEGIN { s = 4 - (now - t0) / 1e9; print (s > 0 ? s : 0) }')"
		;;
	*)
		cl_until "$limit" new_write || echo "  ($sys $fault $i: no write on a new primary within $limit s)" >&2
		sleep 0.5
		;;
	esac
	[ "$fault" = sigstop ] && kill -CONT "$pid"
	cl_writer_stop
	new=
	for p in 2 3; do [ "$(cl_role "$p")" = master ] && new=$p; done
	[ -n "$new" ] && fo=true
	# A slow command that caused no failover: the writes are on the old primary.
	if [ -z "$new" ] && { [ "$fault" = slow ] || [ "$fault" = sleep ]; }; then
		[ "$(cl_role 1)" = master ] && new=1
	fi
	if [ -n "$new" ]; then
		CL_CLI_TIMEOUT=5 cl_redis "$new" wait 1 2000 >/dev/null
		CL_CLI_TIMEOUT=10 cl_redis "$new" lrange w 0 -1 >"$CL_DIR/final"
	else
		: >"$CL_DIR/final"
	fi
	for p in 1 2 3; do
		agents+=(--agent "$CL_DIR/events-$(cl_node "$p").jsonl")
		slogs+=(--sentinel-log "$CL_DIR/sentinel-$p/sentinel.log")
		rlogs+=(--redis-log "$CL_DIR/$(cl_node "$p")/redis.log")
	done
	if [ "$sys" = flatline ]; then
		j=$("$CL_PY" tests/lib/cltimeline.py --fault-ns "$T0" --old "$(cl_ip 1)" \
			--controller "$CL_CLOG" "${agents[@]}" "${rlogs[@]}" --writer "$CL_DIR/writer.out" \
			--final "$CL_DIR/final" --until-ms 100000 --json)
	else
		j=$("$CL_PY" tests/lib/cltimeline.py --fault-ns "$T0" --old "$(cl_ip 1)" \
			"${slogs[@]}" "${rlogs[@]}" --writer "$CL_DIR/writer.out" --final "$CL_DIR/final" \
			--until-ms 100000 --json)
		# Sentinel's "new primary" is the server's own switch to master mode.
		j=$(jq -c '.promoted_ms = .master_mode_ms' <<<"$j")
	fi
	# Keep the event logs of a slow command that failed over: that is a finding.
	if $fo && { [ "$fault" = slow ] || [ "$fault" = sleep ]; }; then
		mkdir -p "$OUT/failed-over" && tar -C "$CL_DIR" -czf "$OUT/failed-over/$flavour-$sys-$fault-$i.tar.gz" \
			--exclude='*.rdb' . 2>/dev/null
	fi
	jq -c --arg s "$sys" --arg f "$fault" --argjson i "$i" --arg fl "$flavour" \
		--arg srv "$FL_SERVER_NAME" --argjson fo "$fo" \
		--arg set "$([ "$sys" = flatline ] && echo "$SETTINGS" || echo -)" \
		'{sys: $s, flavour: $fl, server: $srv, fault: $f, trial: $i, failed_over: $fo, settings: $set} + .' \
		<<<"$j" | tee -a "$results" | jq -r '"  \(.server) \(.sys) \(.fault) #\(.trial): detect \(.detect_ms) ms, new primary \(.promoted_ms) ms, first write \(.first_write_ms) ms, DNS \(.dns_ms) ms, longest gap \(.max_gap_ms) ms, failed over \(.failed_over), lost \(.lost)/\(.acked)"' >&2
	cl_down
	[ -z "$(sentinels_left)" ] || { echo "bench-compare: sentinels left after a trial: $(sentinels_left)" >&2; return 1; }
}

# lock_take / lock_drop: the shared lock (-l), held for one fault on one flavour (every
# system's trials of it: a few minutes, about one integration test file).
lock_take() {
	[ -n "$LOCK" ] || return 0
	exec {lockfd}>>"$LOCK"
	flock "$lockfd"
}
lock_drop() {
	[ -n "$LOCK" ] || return 0
	flock -u "$lockfd"
	exec {lockfd}>&-
}

if [ -n "$REPORT" ]; then
	results=$REPORT
	[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/flatline-bench-compare-out.XXXXXX)
	mkdir -p "$OUT"
else
	IFS=, read -ra flavours <<<"$FLAVOURS"
	setup
	IFS=, read -ra faults <<<"$FAULTS"
	IFS=, read -ra systems <<<"$SYSTEMS"
	for f in "${faults[@]}"; do
		for fl in "${flavours[@]}"; do
			lock_take
			for s in "${systems[@]}"; do
				n=$N
				[ "$s/$f" = flatline/sigkill ] && n=$NK
				[ "$s" = sentinel-default ] && n=$ND
				echo "bench-compare: $fl, $s, $f, $n trials" >&2
				for ((i = 1; i <= n; i++)); do
					trial "$fl" "$s" "$f" "$i" ||
						{ echo "bench-compare: trial failed ($fl $s $f $i)" >&2; cl_down; }
				done
			done
			lock_drop
		done
	done
fi
echo
echo "flatline vs Sentinel: three namespace hosts ($(jq -rs '[.[].server // "redis"] | unique | join(", ")' "$results") with their own Sentinel), writer at 1,000 RPUSH/s; $(nproc) CPUs, kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "flatline: $(jq -rs '[.[] | select(.sys == "flatline") | .settings // "lease_ms = 0 or unrecorded (a run before the settings column)"] | unique | join(", ")' "$results") (the shipped defaults: write lease 200 ms, PING 100 ms x 5, stop_grace_ms 50, busy_max_ms 5000, probes 25 ms, peer down after 250 ms of silence (widened under loss), node down 300 ms); writer follows DNS (TTL 1 s, re-resolved on reconnect)"
echo "Sentinel: 3 sentinels (one per host, quorum 2; redis-sentinel on Redis, valkey-sentinel on Valkey), defaults but down-after-milliseconds (1 s, or the default 30 s); writer is redis-py's Sentinel client"
"$CL_PY" bench/compare_report.py "$results" "$OUT"
echo
echo "per-trial results: $results; tables: $OUT/tables.md; plots: $OUT/*.svg"
