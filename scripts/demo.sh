#!/usr/bin/env bash
# make demo: a three-host cluster on this machine (tests/lib/cluster.sh: network
# namespaces, redis-server x3, flatline agent x3, flatline controller, BIND9 named) and
# a fourth host, a spare (an empty server and its agent, in no quorum), a client that
# finds the primary only through DNS and writes 1,000 times a second, a SIGKILL of the
# primary, and the failover as a timeline read from the event logs. The old primary
# then comes back empty and is made a replica. Then the new primary's whole host dies
# (server and agent killed, cable pulled): a failover, and since that host does not
# come back, the spare is attached, synced and made a candidate: redundancy restored,
# as a second timeline. Everything is torn down at the end (or on Ctrl-C).
#
# env: DEMO_DIR (work directory, default a fresh /tmp/flatline-demo.XXXXXX), FL,
#      FL_FLAVOUR=valkey (valkey-server 8.0 in place of redis-server, tests/lib/flavour.sh),
#      DEMO_RESTORE_MS ([shard] restore_after_ms in the demo's file, default 5000; the
#      shipped default is 30000).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (namespaces, BPF): sudo make demo" >&2; exit 1; }
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
[ -x "$FL" ] || make -s all

# Node ids n1..n3 unless another cluster's agents hold them (their pins and locks are
# per node id, machine-wide).
prefix=n
for i in 1 2 3 4; do
	if [ -e "/run/flatline/agent-n$i.lock" ] && ! flock -n "/run/flatline/agent-n$i.lock" true; then
		prefix=demo$$-n
	fi
done
export FL_NODE_PREFIX=$prefix
# One spare (host 4). restore_after_ms: how long the old primary has to come back before
# a spare takes its place (the default 30 s, shortened for the demo).
restore_ms=${DEMO_RESTORE_MS:-5000}
export FL_SPARES=1 FL_SHARD_CONF="restore_after_ms = $restore_ms${FL_SHARD_CONF:+
$FL_SHARD_CONF}"
dir=${DEMO_DIR:-$(mktemp -d /tmp/flatline-demo.XXXXXX)}
cl_init "$dir" "fldemo$$"
trap 'echo "== tearing down"; cl_down' EXIT
trap 'exit 130' INT TERM

say() { printf '\n== %s\n' "$*"; }

say "bringing up three hosts and a spare (network namespaces $CL_NAME-h1..4 on $CL_NET.0/24), the controller and named"
t=$SECONDS
cl_up
echo "   up in $((SECONDS - t)) s; one cluster file for every process: $CL_CONF"
for i in $(cl_hosts); do
	# (a spare's server answers no client until attached: asked nothing here)
	r="(empty; the shard's spare: in no quorum until attached)"
	[ "$i" -gt 3 ] || r=$(cl_role "$i")
	printf '   %-4s %-10s %s %s (%s)   flatline agent pid %s\n' "$(cl_node "$i")" \
		"$(cl_ip "$i")" "$(basename "$CL_SERVER")" "$r" "pid $(cl_pid "redis-$(cl_node "$i")")" \
		"$(cl_pid "agent-$(cl_node "$i")")"
done
echo "   controller $CL_CTL_IP:$CL_CTL_PORT (Sentinel API) says the primary is $(cl_api_primary)"
echo "   named $CL_CTL_IP:53 says $CL_DNS_NAME is $(cl_dns)"

say "a writer that knows only the name $CL_DNS_NAME: RPUSH 1,000 values a second, each one recorded once acknowledged"
cl_writer_start --rate 1000
sleep 2
echo "   $(grep -c '^A ' "$CL_DIR/writer.out") writes acknowledged so far"

old=1
oldn=$(cl_node $old)
pid=$(cl_pid "redis-$oldn")
say "kill -KILL $pid   ($(basename "$CL_SERVER") on $oldn, the primary)"
t0=$(cl_now_ns)
kill -KILL "$pid"
ok=0
for _ in $(seq 500); do
	if cl_has_event "$CL_CLOG" '.kind == "failover_end"' &&
		cl_has_event "$CL_CLOG" ".kind == \"dns_updated\" and .addr != \"$(cl_ip $old)\"" &&
		grep -q "^A .* $CL_NET\.[23]:" "$CL_DIR/writer.out"; then
		ok=1
		break
	fi
	sleep 0.02
done
[ "$ok" = 1 ] || echo "   (the failover did not complete within 10 s: the timeline shows how far it got)"
new=$(cl_idx_of_ip "$(cl_api_primary)")
sleep 1

say "restarting the old primary's $(basename "$CL_SERVER"), empty (no persistence): it must come back as a replica"
t_restart=$(cl_now_ns)
cl_redis_start $old
cl_until 10 cl_linked $old "$new" || echo "   ($oldn did not become a replica of $(cl_node "$new"))"
# A deficit the controller saw (a second with one replica) ends with the old primary back.
deficit_over() {
	! cl_has_event "$CL_CLOG" '.kind == "replica_deficit"' ||
		cl_has_event "$CL_CLOG" '.kind == "redundancy_restored"'
}
cl_until 5 deficit_over || echo "   (the controller still counts a replica missing)"
sleep 0.5
cl_writer_stop
CL_CLI_TIMEOUT=5 cl_redis "$new" wait 2 2000 >/dev/null || true
CL_CLI_TIMEOUT=10 cl_redis "$new" lrange w 0 -1 >"$CL_DIR/final"

say "the failover, from the agents' and the controller's event logs and the writer's record"
agents=()
for i in 1 2 3; do agents+=(--agent "$CL_DIR/events-$(cl_node "$i").jsonl"); done
until_ms=$((($(cl_now_ns) - t0) / 1000000))
"$CL_PY" tests/lib/cltimeline.py --fault-ns "$t0" --fault "primary $oldn killed (SIGKILL)" \
	--old "$(cl_ip $old)" --controller "$CL_CLOG" "${agents[@]}" --writer "$CL_DIR/writer.out" \
	--final "$CL_DIR/final" --dns-name "$CL_DNS_NAME" --until-ms "$until_ms" |
	sed -e "s/^T\( *\)+\([0-9]\)/T+\1\2/" -e 's/^/   /'
echo "   (restart of $oldn at T+$(((t_restart - t0) / 1000000)) ms; writer: $(cat "$CL_DIR/writer.json"))"

# The second fault: the new primary's whole host.
dead=$new
deadn=$(cl_node "$dead")
spare=$(cl_node 4)
say "the new primary's host $deadn dies: its $(basename "$CL_SERVER") and agent SIGKILLed, its cable pulled"
echo "   it does not come back: after restore_after_ms ($restore_ms ms in this demo; default 30000) the spare $spare takes its place"
cl_writer_start --rate 1000 --key w2
sleep 1
since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
t1=$(cl_now_ns)
kill -KILL "$(cl_pid "agent-$deadn")" "$(cl_pid "redis-$deadn")"
cl_link_down "$dead"
after() { cl_has_event "$CL_CLOG" "$1 and .ts >= \"$since\""; }
cl_until 15 after '.kind == "failover_end"' || echo "   (no failover within 15 s: the timeline shows how far it got)"
cl_until $((restore_ms / 1000 + 60)) after '.kind == "redundancy_restored"' ||
	echo "   (redundancy not restored within $((restore_ms / 1000 + 60)) s: the timeline shows how far it got)"
sleep 0.5
cl_writer_stop
third=$(cl_idx_of_ip "$(cl_api_primary)")
CL_CLI_TIMEOUT=5 cl_redis "$third" wait 2 2000 >/dev/null || true
CL_CLI_TIMEOUT=10 cl_redis "$third" lrange w2 0 -1 >"$CL_DIR/final"

say "the host failure and redundancy restored, from the event logs and the writer's record"
agents=()
for i in $(cl_hosts); do agents+=(--agent "$CL_DIR/events-$(cl_node "$i").jsonl"); done
"$CL_PY" tests/lib/cltimeline.py --fault-ns "$t1" --fault "host $deadn killed (server, agent, cable)" \
	--old "$(cl_ip "$dead")" --controller "$CL_CLOG" "${agents[@]}" --writer "$CL_DIR/writer.out" \
	--final "$CL_DIR/final" --dns-name "$CL_DNS_NAME" --until-ms $((($(cl_now_ns) - t1) / 1000000)) |
	sed -e "s/^T\( *\)+\([0-9]\)/T+\1\2/" -e 's/^/   /'
echo "   (writer: $(cat "$CL_DIR/writer.json"))"

say "flatline status"
cl_ctl "$FL" status -c "$CL_CONF" | sed 's/^/   /'

say "where everything points now"
for i in $(cl_hosts); do
	if [ "$i" = "$dead" ]; then
		printf '   %-4s (host killed)\n' "$(cl_node "$i")"
		continue
	fi
	printf '   %-4s role %-6s %s\n' "$(cl_node "$i")" "$(cl_role "$i")" \
		"$([ "$(cl_role "$i")" = slave ] && echo "of $(cl_info "$i" master_host), link $(cl_info "$i" master_link_status)")"
done
echo "   Sentinel API: $(cl_api_primary)    DNS: $CL_DNS_NAME -> $(cl_dns)"
