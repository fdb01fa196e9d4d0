#!/usr/bin/env bash
# flatline vs Sentinel on the same hosts, on Redis and on Valkey: tests/lib/cluster.sh's
# three namespace hosts (a primary + two replicas) and the same writer
# (tests/lib/clwriter.py, 1,000 RPUSH/s, every acknowledged value recorded), run with
#   flatline          agents + controller + BIND9 named; the writer follows DNS
#   sentinel-1s       the flavour's Sentinel, one on each host (three, quorum 2),
#                     default settings but down-after-milliseconds 1000; the writer is a
#                     Sentinel client (redis-py's discover_master)
#   sentinel-default  the same with Sentinel's defaults (down-after-milliseconds 30000)
# on each server flavour (tests/lib/flavour.sh): Redis 7.0 hosts with Debian's
# redis-sentinel, Valkey 8.0 hosts with valkey-sentinel (built by scripts/build-valkey.sh).
# for three faults of the primary: SIGKILL, SIGSTOP, host failure (its link cut and every
# process in its namespace killed, the sentinel there included). Each trial is a fresh
# cluster. Per fault, a table of min / median / max of:
#   detection        flatline: the controller's node_down; Sentinel: the first +odown
#   new primary      the promoted server in master mode: flatline's `promoted` event
#                    (after its EXEC reply); Sentinel: "MASTER MODE enabled" (Valkey:
#                    "PRIMARY MODE enabled") in the promoted server's own log (ms)
#   first write      the writer's first acknowledged write on another server
#   DNS              flatline: dns_updated (Sentinel has none)
#   writes lost      acknowledged writes missing from the new primary afterwards
# and the ratio Sentinel median / flatline median (same flavour). Every sentinel is
# killed at the end of each trial (and on exit); the script checks that none is left.
#
# usage: bench/compare.sh [-n TRIALS] [-k FLATLINE_SIGKILL_TRIALS] [-F FLAVOURS]
#                                 [-s SYSTEMS] [-f FAULTS] [-r RESULTS]   (root)
#   defaults: -n 5 -k 20 -F redis,valkey -s flatline,sentinel-1s,sentinel-default
#             -f sigkill,sigstop,host
#   (sentinel-default takes about 35 s per trial: ~10 minutes of the ~15 per flavour)
#   -r RESULTS: no trials, only the tables from a results file of earlier runs (the
#   per-trial JSON lines a run leaves with KEEP=1; several runs' files concatenated)
set -uo pipefail
cd "$(dirname "$0")/.."
N=5
NK=20
SYSTEMS=flatline,sentinel-1s,sentinel-default
FAULTS=sigkill,sigstop,host
FLAVOURS=redis,valkey
REPORT=
while getopts n:k:s:f:r:F: o; do
	case $o in
	r) REPORT=$OPTARG ;;
	n) N=$OPTARG ;;
	k) NK=$OPTARG ;;
	s) SYSTEMS=$OPTARG ;;
	f) FAULTS=$OPTARG ;;
	F) FLAVOURS=$OPTARG ;;
	*) sed -n '/^# usage/,/^#   (sentinel/p' "$0" >&2; exit 2 ;;
	esac
done
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/sentinels.sh
. tests/lib/sentinels.sh

setup() {
	local fl
	[ "$(id -u)" -eq 0 ] || { echo "bench-compare: run as root (namespaces, BPF)" >&2; exit 1; }
	for fl in "${flavours[@]}"; do
		fl_flavour_set "$fl" || { echo "bench-compare: $FL_FLAVOUR_WHY" >&2; exit 1; }
	done
	if [ "$FL" = "$CL_ROOT/build/flatline" ]; then make -s all; fi
	export FL_NODE_PREFIX=cmp$$n
	work=$(mktemp -d /tmp/flatline-bench-compare.XXXXXX)
	results=$work/results.jsonl
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

# trial FLAVOUR SYSTEM FAULT I: one fresh cluster, one fault; appends a JSON line to
# $results.
trial() {
	local flavour=$1 sys=$2 fault=$3 i=$4 limit pid p new j agents=() slogs=() rlogs=()
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
	esac
	cl_until "$limit" new_write || echo "  ($sys $fault $i: no write on a new primary within $limit s)" >&2
	sleep 0.5
	[ "$fault" = sigstop ] && kill -CONT "$pid"
	cl_writer_stop
	new=
	for p in 2 3; do [ "$(cl_role "$p")" = master ] && new=$p; done
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
	jq -c --arg s "$sys" --arg f "$fault" --argjson i "$i" --arg fl "$flavour" \
		--arg srv "$FL_SERVER_NAME" '{sys: $s, flavour: $fl, server: $srv, fault: $f, trial: $i} + .' \
		<<<"$j" | tee -a "$results" | jq -r '"  \(.server) \(.sys) \(.fault) #\(.trial): detect \(.detect_ms) ms, new primary \(.promoted_ms) ms, first write \(.first_write_ms) ms, DNS \(.dns_ms) ms, lost \(.lost)/\(.acked)"' >&2
	cl_down
	[ -z "$(sentinels_left)" ] || { echo "bench-compare: sentinels left after a trial: $(sentinels_left)" >&2; return 1; }
}

if [ -n "$REPORT" ]; then
	results=$REPORT
else
	IFS=, read -ra flavours <<<"$FLAVOURS"
	setup
	IFS=, read -ra faults <<<"$FAULTS"
	IFS=, read -ra systems <<<"$SYSTEMS"
	for f in "${faults[@]}"; do
		for fl in "${flavours[@]}"; do
			for s in "${systems[@]}"; do
				n=$N
				[ "$s/$f" = flatline/sigkill ] && n=$NK
				echo "bench-compare: $fl, $s, $f, $n trials" >&2
				for ((i = 1; i <= n; i++)); do
					trial "$fl" "$s" "$f" "$i" ||
						{ echo "bench-compare: trial failed ($fl $s $f $i)" >&2; cl_down; }
				done
			done
		done
	done
fi
echo
echo "flatline vs Sentinel: three namespace hosts ($(jq -rs '[.[].server // "redis"] | unique | join(", ")' "$results") with their own Sentinel), writer at 1,000 RPUSH/s; $(nproc) CPUs, kernel $(uname -r)"
echo "flatline: defaults of the cluster file (PING 100 ms x 5, probes 100 ms, peer down 1 s, node down 1 s); writer follows DNS (TTL 1 s, re-resolved on reconnect)"
echo "Sentinel: 3 sentinels (one per host, quorum 2; redis-sentinel on Redis, valkey-sentinel on Valkey); writer is redis-py's Sentinel client"
"$CL_PY" - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cols = [("detection", "detect_ms"), ("new primary", "promoted_ms"),
        ("first acknowledged write", "first_write_ms"), ("DNS updated", "dns_ms"),
        ("acknowledged writes lost", "lost")]
def fmt(v, lost):
    if v is None:
        return "-"
    if lost:
        return "%d" % v
    return "%.1f ms" % v if v < 1000 else "%.2f s" % (v / 1000)
for fault, title in (("sigkill", "SIGKILL of the primary"), ("sigstop", "SIGSTOP of the primary (hung)"),
                     ("host", "host failure (link cut, processes killed)")):
    fr = [r for r in rows if r["fault"] == fault]
    if not fr:
        continue
    print("\n### %s\n" % title)
    print("| server | system | trials | " + " | ".join("%s min / median / max" % c for c, _ in cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    med = {}
    servers = []
    for r in fr:
        r.setdefault("server", "Redis")  # results of runs made before the server column
        if r["server"] not in servers:
            servers.append(r["server"])
    systems = ("flatline", "sentinel-1s", "sentinel-default")
    for srv in servers:  # each server's rows, then its Sentinel ÷ flatline ratios
        for sysname in systems:
            sr = [r for r in fr if r["sys"] == sysname and r["server"] == srv]
            if not sr:
                continue
            cells = []
            for c, k in cols:
                vals = [r[k] for r in sr if r.get(k) is not None]
                if not vals:
                    cells.append("-")
                    continue
                m = statistics.median(vals)
                med[(srv, sysname, k)] = m
                lost = k == "lost"
                cells.append("%s / %s / %s" % (fmt(min(vals), lost), fmt(m, lost), fmt(max(vals), lost)))
            missing = sum(1 for r in sr if r.get("first_write_ms") is None)
            print("| %s | %s | %d%s | %s |" % (srv, sysname, len(sr),
                                               " (%d without recovery)" % missing if missing else "",
                                               " | ".join(cells)))
        for sysname in systems[1:]:
            if not any(k[:2] == (srv, sysname) for k in med) or \
                    not any(k[:2] == (srv, "flatline") for k in med):
                continue
            cells = []
            for c, k in cols:
                a, b = med.get((srv, "flatline", k)), med.get((srv, sysname, k))
                if k == "lost" or a is None or b is None or a <= 0:
                    cells.append("-")
                else:
                    cells.append(("%.1f×" if b / a < 10 else "%.0f×") % (b / a))
            print("| %s | %s ÷ flatline (medians) | | %s |" % (srv, sysname, " | ".join(cells)))
EOF
echo
echo "raw per-trial figures: $results (kept with KEEP=1)"
