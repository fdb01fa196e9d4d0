#!/usr/bin/env bash
# Redundancy restored: three namespace hosts and a spare (tests/lib/cluster.sh with
# FL_SPARES=1: host 4, an empty server and its agent, the shard's [shard] spares).
# Per case (server flavour x dataset):
#   the dataset    DEBUG POPULATE on the primary and both replicas alike (the same
#                  keys and values on each: DEBUG POPULATE is not replicated), in
#                  chunks of 100,000 keys of 1,000 bytes; 0 MB: empty
#   host kill      the primary's host dies: its server and agent SIGKILLed, its cable
#                  pulled (no old primary comes back)
#   the timeline   the controller's events, ms after the kill: failover_end,
#                  replica_deficit (a second with one replica of two), spare_attached
#                  (restore_after_ms after the deficit), replica_synced (its
#                  duration_ms and bytes: the full sync of the dataset), replica_promotable
#                  (steady for promotable_after_ms, default 5000) and redundancy_restored
#   latency        a client (bench/spares.py probe) on the new primary from the failover
#                  on: SET and GET in turn, 1,000 commands a second, each timed; p50,
#                  p99 and max before the attach and during the full sync (attach ->
#                  replica_synced)
# and once per flavour (in the first case, once redundancy is restored) a runtime
# `flatline node add` of a fifth host's server (a replica of the primary), then removed:
#   agent first    its agent already running (a provision_script's order): node add ->
#                  the command returned, node_added, agent_connected, `flatline
#                  status` shows it healthy
#   add first      node add, then its agent started (BPF loaded): node add ->
#                  agent_connected, status healthy (a sixth host)
# Everything else at the shipped defaults; -R sets restore_after_ms (default: the
# shipped 30000) and the table says so.
# usage: bench/spares.sh [-F redis,valkey] [-s "0 100 1024"] [-R RESTORE_MS] [-l LOCK]
#   -s  dataset sizes, MB of values (used_memory is about 1.1 times that)
#   -l  hold flock(1) on LOCK for one case at a time (a shared machine's test lock)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
FLAVOURS=redis,valkey SIZES="0 100 1024" RESTORE=30000 LOCK=
while getopts "F:s:R:l:" o; do
	case $o in
	F) FLAVOURS=$OPTARG ;;
	s) SIZES=$OPTARG ;;
	R) RESTORE=$OPTARG ;;
	l) LOCK=$OPTARG ;;
	*) sed -n 's/^# usage: //p' "$0" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "bench/spares.sh: needs root (namespaces, BPF)" >&2; exit 2; }
[ -n "${FL:-}" ] || make -s all || exit 2
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
PY=$CL_PY
results=$(mktemp /tmp/flatline-bench-spares.XXXXXX)
# (kept: the per-case JSON lines, named at the end)

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

# SINCE: T0 as an event timestamp; after FILTER: a controller event since then.
since_ts() { date -u -d "@$((T0 / 1000000000)).$(printf '%09d' $((T0 % 1000000000)))" +%Y-%m-%dT%H:%M:%S.%6NZ; }
after() { cl_has_event "$CL_CLOG" "$1 and .ts >= \"$SINCE\""; }
wait_after() { # FILTER SECONDS
	cl_until "$2" after "$1" || { echo "bench/spares.sh: no event ($1) within $2 s: $(tail -n 3 "$CL_CLOG")" >&2; return 1; }
}

# extra_host IDX [MASTER_IDX]: a namespace on the bridge and a server (not in the file).
# (EXTRA, the hosts extra_clean cleans, is set by the caller: this runs in $(...).)
extra_host() {
	cl_netns_attach "$(cl_ns "$1")" "veth$1" "$(cl_ip "$1")"
	[ -z "$CL_CG_KIND" ] || mkdir -p "$(cl_cg "$1")"
	cl_redis_start "$@"
}
extra_agent() { # IDX PEER_IDX: the agent of a node in no file, as `flatline agent` is told it
	local n
	n=$(cl_node "$1")
	cl_spawn "agent-$n" "$(cl_ns "$1")" "$FL" agent -c "$CL_CONF" --node "$n" \
		--address "$(cl_ip "$1")" --redis "$(cl_hp "$(cl_ip "$1")" 6379)" \
		--event-log "$CL_DIR/events-$n.jsonl" --peer "$(cl_node "$2")=$(cl_ip "$2")"
}
extra_clean() { # after cl_down (its processes are gone): pins, lock, cgroup
	local i n cg p
	for i in "${EXTRA[@]}"; do
		n=$(cl_node "$i")
		rm -rf "/sys/fs/bpf/flatline/$n" "/run/flatline/agent-$n.lock"
		cg=$(cl_cg "$i")
		if [ -n "$cg" ] && [ -d "$cg" ]; then
			while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$cg/cgroup.procs"
			for _ in $(seq 100); do rmdir "$cg" 2>/dev/null && break; sleep 0.02; done
		fi
	done
}
node_ok() { # NODE: status lists it, healthy
	[ "$(cl_status_json | jq -r --arg n "$1" '.shards[0].nodes[] | select(.id == $n) | .health' 2>/dev/null)" = ok ]
}

# node_add IDX ORDER PRIMARY_IDX (ORDER agent-first | add-first): prints "add_ms
# added_ms connected_ms ok_ms" (ms after the node add was started; add_ms: the command
# returned); the node removed again and its server and agent stopped.
node_add() {
	local i=$1 p=$3 n t0 t1 tok since out
	n=$(cl_node "$i")
	extra_host "$i" "$p" >&2 || return 1
	cl_until 10 cl_linked "$i" "$p" || return 1
	if [ "$2" = agent-first ]; then
		extra_agent "$i" "$p"
		sleep 1 # running, its HELLO refused: an unknown node
	fi
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	t0=$(cl_now_ns)
	out=$(cl_ctl timeout 15 "$FL" node add "$CL_SHARD" "$n" --address "$(cl_ip "$i")" \
		--redis "$(cl_hp "$(cl_ip "$i")" 6379)" -c "$CL_CONF" 2>&1) || { echo "node add: $out" >&2; return 1; }
	t1=$(cl_now_ns)
	[ "$2" = agent-first ] || extra_agent "$i" "$p"
	cl_until 15 node_ok "$n" || { echo "bench/spares.sh: $n not healthy: $(cl_status_json)" >&2; return 1; }
	tok=$(cl_now_ns)
	ev() {
		local ts
		ts=$(jq -r "select(.kind == \"$1\" and .instance == \"$n\" and .ts >= \"$since\") | .ts" "$CL_CLOG" | head -n 1)
		if [ -n "$ts" ]; then echo $((($(date -u -d "$ts" +%s%N) - t0) / 1000000)); else echo -; fi
	}
	echo "$(((t1 - t0) / 1000000)) $(ev node_added) $(ev agent_connected) $(((tok - t0) / 1000000))"
	out=$(cl_ctl timeout 15 "$FL" node remove "$CL_SHARD" "$n" -c "$CL_CONF" 2>&1) || { echo "node remove: $out" >&2; return 1; }
	cl_stop "agent-$n"
	cl_stop "redis-$n"
}

# one_case FLAVOUR MB FIRST: a fresh cluster, filled, its primary's host killed; one
# JSON line in $results.
one_case() {
	(
		set -u
		export FL_FLAVOUR=$1 FL_SPARES=1 FL_NODE_PREFIX=bsp$$n
		export FL_SHARD_CONF="restore_after_ms = $RESTORE"
		export CL_REDIS_EXTRA="--enable-debug-command yes" # DEBUG POPULATE from the ctl namespace
		cl_init "$(mktemp -d /tmp/flatline-bench-spares-cl.XXXXXX)" flbsp
		EXTRA=(5 6)
		uplog=$(mktemp /tmp/flatline-bench-spares-up.XXXXXX)
		trap 'cl_stop probe; cl_down >/dev/null 2>&1; extra_clean; rm -f "$uplog"' EXIT
		fail() { echo "bench/spares.sh: $FL_FLAVOUR ${2:-} MB: $1" >&2; exit 1; }
		# (not in $(...): cl_up sets what cl_down needs, CL_HAVE_ENV and CL_CG_KIND)
		cl_up >"$uplog" 2>&1 || fail "cluster did not come up: $(tail -n 5 "$uplog")"
		local keys=$(($2 * 1024)) c i used na=() nb=()
		for i in 1 2 3; do
			for ((c = 0; c * 100000 < keys; c++)); do
				CL_CLI_TIMEOUT=60 cl_redis "$i" debug populate $((keys - c * 100000 < 100000 ? keys - c * 100000 : 100000)) \
					"d$c" 1000 >/dev/null || fail "DEBUG POPULATE on host $i"
			done
			[ "$(cl_redis "$i" dbsize)" = "$keys" ] || fail "host $i has $(cl_redis "$i" dbsize) keys, not $keys"
		done
		used=$(cl_redis 1 info memory | tr -d '\r' | sed -n 's/^used_memory://p')
		sleep 1
		T0=$(cl_now_ns)
		SINCE=$(since_ts)
		kill -KILL "$(cl_pid "agent-$(cl_node 1)")" "$(cl_pid "redis-$(cl_node 1)")"
		cl_link_down 1
		wait_after '.kind == "failover_end"' 15 || fail "no failover"
		local new
		new=$(cl_idx_of_ip "$(cl_api_primary)")
		cl_spawn probe "$CL_NS_CTL" "$PY" bench/spares.py probe --host "$(cl_ip "$new")" --out "$CL_DIR/lat"
		wait_after ".kind == \"spare_attached\"" $((RESTORE / 1000 + 30)) || fail "no spare attached"
		wait_after ".kind == \"replica_synced\"" 900 || fail "the spare did not sync"
		wait_after ".kind == \"redundancy_restored\"" 60 || fail "redundancy not restored"
		cl_stop probe
		if [ "$3" = 1 ]; then
			local o
			o=$(node_add 5 agent-first "$new") || fail "node add (agent first)"
			read -r -a na <<<"$o"
			o=$(node_add 6 add-first "$new") || fail "node add (add first)"
			read -r -a nb <<<"$o"
		fi
		"$PY" bench/spares.py row --clog "$CL_CLOG" --t0-ns "$T0" --spare "$(cl_node 4)" --lat "$CL_DIR/lat" |
			jq -c --arg f "$FL_SERVER_NAME" --argjson mb "$2" --argjson used "$used" \
				--arg na "${na[*]:-}" --arg nb "${nb[*]:-}" --argjson r "$RESTORE" \
				'. + {server: $f, mb: $mb, used: $used, restore: $r, node_add_agent_first: $na, node_add_add_first: $nb}' >>"$results"
		echo "bench/spares.sh: $FL_FLAVOUR_NAME $2 MB: $(tail -n 1 "$results")" >&2
	)
}

IFS=, read -ra flavours <<<"$FLAVOURS"
for f in "${flavours[@]}"; do
	first=1
	for mb in $SIZES; do
		lock_take
		FL_FLAVOUR_NAME=$f one_case "$f" "$mb" "$first" || echo "bench/spares.sh: $f $mb MB failed" >&2
		lock_drop
		first=0
	done
done

echo
echo "host kill -> redundancy restored: 3 namespace hosts + 1 spare, $(nproc) CPUs (shared), kernel $(uname -r)"
echo "settings: the shipped defaults (write lease 200 ms, node down 300 ms, promotable_after_ms 5000, diskless full sync) but [shard] restore_after_ms = $RESTORE$([ "$RESTORE" = 30000 ] || echo " (default 30000: at the default the attach comes $(((30000 - RESTORE) / 1000)) s later; the times from the attach on do not change)")"
echo
echo "| server | dataset | failover_end | deficit | attached | synced (from attach) | sync | promotable (from attach) | restored | restored at restore_after_ms 30000 | p50/p99/max µs before attach | p50/p99/max µs during sync |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
jq -r 'def f(x): if x == null then "-" else (x | tostring) end;
	def ms(x): if x == null then "-" else ((x | floor) | tostring) end;
	def us(x): if x == null then "-" else ((x | floor) | tostring) end;
	def from_att(x): if x == null or .spare_attached_ms == null then "-" else (((x - .spare_attached_ms) | floor) | tostring) end;
	"| \(.server) | \(.mb) MB (used_memory \((.used / 1048576) | floor) MB) | \(ms(.failover_end_ms)) | \(ms(.replica_deficit_ms)) | \(ms(.spare_attached_ms)) | \(from_att(.replica_synced_ms)) | \(f(.sync_duration_ms)) ms, \(((.sync_bytes // 0) / 1048576) | floor) MB | \(from_att(.replica_promotable_ms)) | \(ms(.redundancy_restored_ms)) | \(if .redundancy_restored_ms == null then "-" elif .restore == 30000 then ms(.redundancy_restored_ms) else "\(ms(.redundancy_restored_ms + 30000 - .restore)) (est.)" end) | \(us(.lat_before_p50_us))/\(us(.lat_before_p99_us))/\(us(.lat_before_max_us)) (n=\(.lat_before_n)) | \(us(.lat_sync_p50_us))/\(us(.lat_sync_p99_us))/\(us(.lat_sync_max_us)) (n=\(.lat_sync_n), \(.lat_sync_errors) errors) |"' "$results"
echo "(ms after the host kill unless said; est.: restored + 30000 - restore_after_ms, the wait before the attach at the default; sync: replica_synced duration_ms and bytes, the spare's used_memory; latency: bench/spares.py probe on the new primary, SET/GET of 100 bytes at 1,000/s, from another namespace)"
echo
echo "runtime node add -> monitored (ms after the command started; a replica of the primary on its own host):"
echo "| server | order | command returned | node_added | agent_connected | status: healthy |"
echo "|---|---|---|---|---|---|"
jq -r 'select(.node_add_agent_first != "") |
	(.node_add_agent_first | split(" ")) as $a | (.node_add_add_first | split(" ")) as $b |
	"| \(.server) | agent running first | \($a[0]) | \($a[1]) | \($a[2]) | \($a[3]) |",
	"| \(.server) | add, then the agent started | \($b[0]) | \($b[1]) | \($b[2]) | \($b[3]) |"' "$results"
echo
echo "per-case results (JSON lines): $results"
