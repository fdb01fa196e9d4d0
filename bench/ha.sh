#!/usr/bin/env bash
# Controller HA benchmark: three data hosts, three etcd members and three
# controllers in namespaces (tests/lib/cluster_ha.sh), a DNS-following writer at 1,000
# writes/s. Per trial:
#   takeover  the leading controller SIGKILLed -> another logs leader_elected, and
#             -> it is ready to act (its INFO round done: controller_ready)
#   handover  the (new) leader stopped cleanly (SIGTERM: it revokes its lease) ->
#             another leads
#   failover  the primary SIGKILLed with etcd on the leader's path -> promoted, and ->
#             the writer's first acknowledged write on the new primary
#   (one etcd transaction on the failover path: the leader records the new primary
#   and epoch, fenced by its leader key, before it sends the promotion)
#   after a takeover  that leader SIGKILLed, and the (new) primary SIGKILLed as soon as
#             another controller logs leader_elected (its INFO round still to come) ->
#             promoted, and -> the writer's first acknowledged write on the newer primary
# Prints min / median / max over the trials.
# usage: bench/ha.sh [-n TRIALS]   (root; FL_HA_LEASE_MS, FL_ETCD_ELECTION_MS as the harness)
set -euo pipefail
cd "$(dirname "$0")/.."
N=5
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=$2; shift 2 ;;
	*) echo "usage: $0 [-n TRIALS]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench/ha.sh: run as root (namespaces, BPF)" >&2; exit 1; }
[ -n "${FL:-}" ] || make -s all
export FL_HA=1
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
out=$(mktemp /tmp/flatline-bench-ha.XXXXXX)
trap 'cl_down >/dev/null 2>&1; rm -f "$out"' EXIT
export FL_NODE_PREFIX=bha$$-n
ev_ns() { date -u -d "$(jq -r "select(.kind == \"$2\") | .ts" "$1" | tail -n 1)" +%s%N; }
other_leads() { local l; l=$(cl_ha_leader) && [ "$l" != "$1" ]; }
# elected IDX: how many leader_elected controller IDX has logged.
elected() { awk '/"kind":"leader_elected"/ { n++ } END { print n + 0 }' "$(cl_ha_log "$1")"; }
# stop_leader SIGNAL IDX: signals the leading controller; NL the next leader, TAKE and
# READY the µs from the signal to its leader_elected and controller_ready.
stop_leader() {
	local t0
	t0=$(cl_now_ns)
	kill -"$1" "$(cl_pid "controller-c$2")"
	cl_until 10 other_leads "$2" || return 1
	NL=$(cl_ha_leader)
	cl_until 5 cl_has_event "$(cl_ha_log "$NL")" '.kind == "controller_ready"'
	TAKE=$((($(ev_ns "$(cl_ha_log "$NL")" leader_elected) - t0) / 1000))
	READY=$((($(ev_ns "$(cl_ha_log "$NL")" controller_ready) - t0) / 1000))
}

for t in $(seq "$N"); do
	cl_init "$(mktemp -d /tmp/flatline-bench-ha-cl.XXXXXX)" "flbha$t"
	cl_up >/dev/null 2>&1 || { echo "trial $t: cluster did not come up" >&2; cl_down; continue; }
	cl_writer_start --rate 1000 >/dev/null
	sleep 0.5
	lead=$(cl_ha_leader)
	stop_leader KILL "$lead" || { echo "trial $t: no takeover" >&2; cl_down; continue; }
	nl=$NL take=$TAKE ready=$READY
	cl_ha_controller_start "$lead"
	sleep 0.5
	stop_leader TERM "$nl" || { echo "trial $t: no handover" >&2; cl_down; continue; }
	l3=$NL hand=$TAKE
	sleep 0.5
	T0=$(cl_now_ns)
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	cl_until 10 cl_has_event "$(cl_ha_log "$l3")" '.kind == "failover_end"' || { echo "trial $t: no failover" >&2; cl_down; continue; }
	sleep 0.5
	# Right after a takeover: l3 killed, the primary it made killed once the next is ready.
	cur=$(cl_idx_of_ip "$(cl_api_primary)")
	declare -A was=()
	for i in 1 2 3; do was[$i]=$(elected "$i"); done
	kill -KILL "$(cl_pid "controller-c$l3")"
	l4=
	for _ in $(seq 5000); do
		for i in 1 2 3; do
			if [ "$i" != "$l3" ] && [ "$(elected "$i")" -gt "${was[$i]}" ]; then l4=$i; fi
		done
		if [ -n "$l4" ]; then break; fi
		sleep 0.002
	done
	[ -n "$l4" ] || { echo "trial $t: no second takeover" >&2; cl_down; continue; }
	T1=$(cl_now_ns)
	kill -KILL "$(cl_pid "redis-$(cl_node "$cur")")"
	cl_until 10 cl_has_event "$(cl_ha_log "$l4")" '.kind == "failover_end"' || { echo "trial $t: no failover after the takeover" >&2; cl_down; continue; }
	sleep 0.5
	cl_writer_stop
	new=$(cl_idx_of_ip "$(cl_api_primary)")
	CL_CLI_TIMEOUT=10 cl_redis "$new" lrange w 0 -1 >"$CL_DIR/final"
	j=$(/usr/bin/python3 tests/lib/cltimeline.py --fault-ns "$T0" --fault kill --old "$(cl_ip 1)" \
		--controller "$(cl_ha_log "$l3")" --writer "$CL_DIR/writer.out" --final "$CL_DIR/final" \
		--dns-name "$CL_DNS_NAME" --json)
	j2=$(/usr/bin/python3 tests/lib/cltimeline.py --fault-ns "$T1" --fault kill --old "$(cl_ip "$cur")" \
		--controller "$(cl_ha_log "$l4")" --writer "$CL_DIR/writer.out" --final "$CL_DIR/final" \
		--dns-name "$CL_DNS_NAME" --json)
	puts=$(jq -c 'select(.kind == "promoted")' "$(cl_ha_log "$l3")" | wc -l)
	echo "$take $ready $hand $(jq -r '"\(.promoted_ms) \(.first_write_ms) \(.lost)"' <<<"$j") $puts $(jq -r '"\(.promoted_ms) \(.first_write_ms)"' <<<"$j2")" >>"$out"
	echo "trial $t: takeover $((take / 1000)) ms (ready $((ready / 1000)) ms), handover $((hand / 1000)) ms, $(jq -r '"promoted \(.promoted_ms) ms, writable \(.first_write_ms) ms, \(.lost) lost"' <<<"$j"); right after a takeover: $(jq -r '"promoted \(.promoted_ms) ms, writable \(.first_write_ms) ms"' <<<"$j2")" >&2
	cl_down >/dev/null 2>&1
	rm -rf "$CL_DIR"
done

/usr/bin/python3 - "$out" "${FL_HA_LEASE_MS:-1000}" "${FL_ETCD_ELECTION_MS:-500}" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
print("\ncontroller HA, %d trials; settings that differ from the defaults: [etcd] lease_ms %s "
      "(default 2000); etcd's election timeout %s ms; otherwise the defaults (write lease 200 ms)\n" %
      (len(rows), sys.argv[2], sys.argv[3]))
print("| measure | min | median | max |")
print("|---|---|---|---|")
def row(name, i, scale):
    v = [r[i] / scale for r in rows]
    print("| %s | %.1f | %.1f | %.1f |" % (name, min(v), statistics.median(v), max(v)))
if rows:
    row("takeover: leader SIGKILL -> new leader elected (ms)", 0, 1000)
    row("takeover: leader SIGKILL -> new leader ready to act (ms)", 1, 1000)
    row("clean handover: SIGTERM -> new leader elected (ms)", 2, 1000)
    row("primary SIGKILL -> promoted (ms)", 3, 1)
    row("primary SIGKILL -> first acknowledged write (ms)", 4, 1)
    row("acknowledged writes lost (both failovers)", 5, 1)
    row("right after a takeover: primary SIGKILL -> promoted (ms)", 7, 1)
    row("right after a takeover: primary SIGKILL -> first acknowledged write (ms)", 8, 1)
    print("\netcd round trips on the failover's path: 1 (the promotion is recorded, fenced by the leader key, before it is sent)")
PY
