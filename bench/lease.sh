#!/usr/bin/env bash
# The write lease against partitions: a client on the primary's own host (the
# co-located writer, tests/lib/partition.sh: RPUSH to its local server 1,000 times a
# second) while that host is cut off in each shape for PART_S seconds, then healed.
# Per shape and system, one fresh cluster (tests/lib/cluster.sh) per trial; printed:
#   acked        writes the old primary acknowledged after the cut, before the heal
#   lost         of those, missing from the new primary afterwards (what the cut cost)
#   after promo  acknowledged after the promotion instant: must be 0
#   missing      of those, missing from the new primary: the invariant, must be 0
#   fenced       ms from the cut to the old primary's last acknowledged write before
#                the heal (the partition's length when it was never fenced)
#   promoted     ms from the cut to the promotion (flatline: replica_selected, which
#                precedes REPLICAOF NO ONE; Sentinel: "MASTER MODE enabled" in the
#                promoted server's log); "-" when no failover happened
# Systems: flatline (defaults: lease 200 ms, node down 300 ms), sentinel-1s (three
# sentinels, one per host, quorum 2, down-after-milliseconds 1000), sentinel-minrep (the
# same with min-replicas-to-write 1, min-replicas-max-lag 1 on every server).
# Shapes (tests/lib/partition.sh): full, in, out, ctl, peers; Sentinel runs full, in, out
# (it has no controller; a cut from the peers is a cut from two of its three sentinels).
#
# usage: bench/lease.sh [-n TRIALS] [-s SYSTEMS] [-p SHAPES] [-t PART_S]   (root)
#   defaults: -n 1 -s flatline,sentinel-1s,sentinel-minrep -p full,in,out,ctl,peers -t 5
set -uo pipefail
cd "$(dirname "$0")/.."
N=1
SYSTEMS=flatline,sentinel-1s,sentinel-minrep
SHAPES=full,in,out,ctl,peers
PART_S=5
while getopts n:s:p:t: o; do
	case $o in
	n) N=$OPTARG ;;
	s) SYSTEMS=$OPTARG ;;
	p) SHAPES=$OPTARG ;;
	t) PART_S=$OPTARG ;;
	*) sed -n '/^# usage/,/^#   defaults/p' "$0" >&2; exit 2 ;;
	esac
done
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/sentinels.sh
. tests/lib/sentinels.sh
# shellcheck source=tests/lib/partition.sh
. tests/lib/partition.sh

[ "$(id -u)" -eq 0 ] || { echo "bench-lease: run as root (namespaces, BPF)" >&2; exit 1; }
if [[ $SYSTEMS == *sentinel* ]] && ! command -v redis-sentinel >/dev/null; then
	echo "bench-lease: needs redis-sentinel (scripts/install-deps.sh)" >&2
	exit 1
fi
[ -x "$FL" ] || { echo "bench-lease: $FL not built (make)" >&2; exit 1; }
export FL_NODE_PREFIX=bl$$n
work=$(mktemp -d /tmp/flatline-bench-lease.XXXXXX)
rows=$work/rows
NAME=flbl$$
# Our own copy of the binary: a rebuild in the tree during the run must not break it.
cp "$FL" "$work/flatline"
FL=$work/flatline
cleanup() {
	cl_down
	local p
	for p in $(sentinels_left); do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

new_master() { # the index of h2 or h3 if one is a master
	local i
	for i in 2 3; do [ "$(cl_role "$i")" = master ] && { echo "$i"; return 0; }; done
	return 1
}
old_follows() { [ "$(cl_role 1)" = slave ] && [ "$(cl_info 1 master_host)" = "$(cl_ip "$1")" ]; }
ts_ns() { date -d "$1" +%s%N; }
read_final() { CL_CLI_TIMEOUT=10 cl_redis "$1" lrange w 0 -1 >"$CL_DIR/final" 2>/dev/null; }

trial() {
	local sys=$1 shape=$2 i=$3 new='' t_prom=0 prom='-' lease='-' t out
	SENTINEL_PIDS=()
	cl_init "$work/c" "$NAME"
	if [ "$sys" = flatline ]; then
		cl_up || return 1
		cl_until 5 cl_has_event "$CL_DIR/events-$(cl_node 1).jsonl" '.kind == "lease_regained"' || return 1
	else
		cl_up_servers || return 1
		if [ "$sys" = sentinel-minrep ]; then
			for t in 1 2 3; do
				cl_redis "$t" config set min-replicas-to-write 1 >/dev/null &&
					cl_redis "$t" config set min-replicas-max-lag 1 >/dev/null || return 1
			done
		fi
		start_sentinels 1000 || return 1
	fi
	pt_colo_start 1 || return 1
	sleep 1
	T_CUT=$(cl_now_ns)
	pt_cut "$shape" 1 || return 1
	sleep "$PART_S"
	if [ "$sys" = flatline ]; then
		t=$(jq -r 'select(.kind == "replica_selected") | .ts' "$CL_CLOG" | head -n 1)
		[ -n "$t" ] && t_prom=$(ts_ns "$t")
		new=$(jq -r 'select(.kind == "promoted") | .instance' "$CL_CLOG" | head -n 1)
		[ -n "$new" ] && new=$(cl_idx "$new")
		t=$(jq -r 'select(.kind == "lease_lost") | .ts' "$CL_DIR/events-$(cl_node 1).jsonl" | head -n 1)
		[ -n "$t" ] && lease=$((($(ts_ns "$t") - T_CUT) / 1000000))
	else
		new=$(new_master) || new=
		[ -n "$new" ] && t_prom=$(pt_redis_log_ms "$CL_DIR/$(cl_node "$new")/redis.log")
	fi
	[ -n "$t_prom" ] && [ "$t_prom" != 0 ] && prom=$(((t_prom - T_CUT) / 1000000))
	T_HEAL=$(cl_now_ns)
	pt_heal 1
	[ -n "$new" ] || new=1
	[ "$new" = 1 ] || cl_until 20 old_follows "$new" || echo "  ($sys $shape $i: h1 did not follow h$new)" >&2
	sleep 0.5
	pt_colo_stop
	# A lease taken back after drops resets the connections it finds: read until it works.
	cl_until 10 read_final "$new" || { echo "bench-lease: cannot read h$new's list" >&2; return 1; }
	out=$(pt_count "$CL_DIR/colo.out" "$CL_DIR/final" "$T_CUT" "${t_prom:-0}" "$T_HEAL")
	read -r a l ap m f <<<"$out"
	printf '%-16s %-6s %-3s %7s %7s %11s %8s %8s %9s %10s\n' "$sys" "$shape" "$i" "$a" "$l" "$ap" "$m" \
		"$f" "$lease" "$prom" | tee -a "$rows" >&2
	cl_down
	[ -z "$(sentinels_left)" ] || { echo "bench-lease: sentinels left: $(sentinels_left)" >&2; return 1; }
}

IFS=, read -ra systems <<<"$SYSTEMS"
IFS=, read -ra shapes <<<"$SHAPES"
for s in "${systems[@]}"; do
	for p in "${shapes[@]}"; do
		[[ $s == sentinel* && ($p == ctl || $p == peers) ]] && continue
		for ((i = 1; i <= N; i++)); do
			trial "$s" "$p" "$i" || { echo "bench-lease: trial failed ($s $p $i)" >&2; cl_down; }
		done
	done
done
echo
echo "write lease vs partitions: co-located client on the primary's host (1,000 RPUSH/s), partition ${PART_S} s; $(nproc) CPUs, kernel $(uname -r)"
echo "flatline at the shipped defaults (write lease 200 ms, node down 1 s); Sentinel at its defaults but down-after-milliseconds 1000 (and, where named, min-replicas-to-write)"
printf '%-16s %-6s %-3s %7s %7s %11s %8s %8s %9s %10s\n' system shape '#' acked lost 'after promo' missing \
	fenced lease_lost promoted
sed 's/$//' "$rows"
echo "(times in ms from the cut; fenced = the old primary's last acknowledged write; lease_lost = flatline's event)"
