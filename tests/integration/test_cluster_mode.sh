#!/usr/bin/env bash
# Cluster shards ([shard] mode = cluster): a real Redis Cluster (redis-server
# --cluster-enabled yes, 3 primaries with a replica each, cluster-node-timeout 15000, the
# default) on loopback, an agent per node, the controller (tests/lib/rcluster.sh);
# redis-py's RedisCluster writes throughout. kill -9 of a primary: its slots writable
# again within 1 s (10 x the 100 ms goal; the cluster alone would take its node timeout,
# 15 s) through flatline's CLUSTER FAILOVER FORCE, and no write acknowledged after the
# kill lost; on Redis 7.0 and Valkey 8. SIGSTOP of a primary: the replica promoted once
# the primary's write lease is over (the agents run at the shipped defaults, lease
# 200 ms), no write acknowledged after the stop lost. The lease leaves the cluster bus
# flowing: a primary fenced by its lease (its agent stopped) is not failed by the
# cluster. A listed node that is not the primary's replica
# in the cluster is said (cluster_mismatch); flatline failover is a plain CLUSTER
# FAILOVER with no acknowledged write lost, and --takeover a TAKEOVER fenced by a
# CLIENT PAUSE, with none lost either.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
. tests/lib/flavour.sh
. tests/lib/rcluster.sh
PY=/usr/bin/python3

has_event() { [ -n "$(jq -c "select($1)" "$CLOG" 2>/dev/null)" ]; }

setup_rcluster() {
	need_root
	need_cmd "${FL_SERVER:-redis-server}" "${FL_CLI:-redis-cli}" jq
	rcluster_start 15000
	rcluster_flatline
}

# last_verdict_consistent PORT: the shard's last word on its primary's CLUSTER NODES.
last_verdict_consistent() {
	[ "$(jq -r "select(.shard == \"s$1\" and (.kind | test(\"^cluster_\"))) | .kind" "$CLOG" | tail -n 1)" = cluster_consistent ]
}

cluster_kill_case() {
	local vp rp t0 ev end
	setup_rcluster
	vp=${PRIMARIES[0]} rp=${REPLICA_OF[${PRIMARIES[0]}]}
	rcluster_kill "$vp"
	ev=$(wait_event "$CLOG" ".kind == \"promoted\" and .shard == \"s$vp\"" 5) ||
		fail "no promotion: $(jq -c 'del(.ts)' "$CLOG" | tail -n 12)"
	expect_eq "promoted" "$(jq -r .instance <<<"$ev")" "c$rp"
	echo "    $FL_SERVER_NAME kill -9: slots writable on $KILL_ON after $KILL_MS ms;" \
		"promoted after $(jq .elapsed_ms <<<"$ev") ms; client: $KILL_RES"
	# The servers' side: a SET of the victim's slots answered OK (not MOVED) within 1 s
	# of the kill (10 x the 100 ms goal; the cluster alone: its 15 s node timeout).
	[ "$KILL_MS" -lt 1000 ] || fail "slots writable only after $KILL_MS ms"
	expect_eq "writable on" "$KILL_ON" "$rp"
	# The cluster agrees: the replica is the master of the slots.
	rc_cli -p "$rp" cluster nodes | grep -q "myself,master.* ${KILL_SLOTS%%,*}" ||
		fail "c$rp not master of $KILL_SLOTS: $(rc_cli -p "$rp" cluster nodes)"
	# flatline's own election request, not the cluster's timeout.
	"$FL" status -c "$CONF" | grep -q "CLUSTER FAILOVER FORCE to c$rp" ||
		fail "no FORCE in the timeline: $("$FL" status -c "$CONF")"
	! has_event '.kind == "repointed" or .kind == "old_primary_demoted"' ||
		fail "a cluster shard was repointed by flatline"
	expect_eq "acknowledged after the kill, lost" "$(jq .lost_after <<<"$KILL_RES")" 0
	jq -e '.gap_ms != null' <<<"$KILL_RES" >/dev/null || fail "no outage seen: $KILL_RES"
	# The client's side: redis-py 4.3.4 waits 4 x 250 ms on a connection error before it
	# asks for the slot map again, so its own gap is about 1 s more (bound: 3 s).
	jq -e '.writable_ms != null and .writable_ms < 3000' <<<"$KILL_RES" >/dev/null ||
		fail "the client wrote to the slots again only after: $KILL_RES"
	# The old primary back: the cluster makes it a replica of c$rp. While it rejoins (up
	# again, not yet a replica in CLUSTER NODES) a mismatch may be said; once it is a
	# replica, nothing more, and the shard's last word is consistent.
	rcluster_server "$vp" 15000
	end=$((SECONDS + 20))
	until rc_cli -p "$vp" role | sed -n 2p | grep -qx 127.0.0.1 &&
		[ "$(rc_cli -p "$vp" role | sed -n 3p)" = "$rp" ]; do
		[ $SECONDS -le $end ] || fail "c$vp not a replica of c$rp: $(rc_cli -p "$vp" role | paste -sd' ')"
		sleep 0.1
	done
	sleep 2.2 # the checks (every second) that may still see it rejoining, the primary's view a gossip behind
	wait_for 10 last_verdict_consistent "$vp" ||
		fail "no consistent CLUSTER NODES after the return: $(jq -c 'select(.kind | test("cluster"))' "$CLOG" | tail -n 4)"
	t0=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	sleep 2 # two checks of CLUSTER NODES
	! has_event ".kind == \"cluster_mismatch\" and .shard == \"s$vp\" and .ts > \"$t0\"" ||
		fail "mismatch after the return: $(jq -c 'select(.kind | test("cluster"))' "$CLOG" | tail -n 4)"
	last_verdict_consistent "$vp" || fail "the shard's last cluster verdict is not consistent"
	has_event ".kind == \"cluster_consistent\" and .shard == \"s$vp\" and .instance == \"c$rp\"" ||
		fail "the new primary's view never judged: $(jq -c 'select(.kind | test("cluster"))' "$CLOG")"
	# Status says so too: a cluster shard, its primary's CLUSTER NODES consistent.
	"$FL" status --json -c "$CONF" | jq -e ".shards[] | select(.name == \"s$vp\") |
		.mode == \"cluster\" and .cluster_nodes == \"consistent\" and .primary == \"c$rp\"" \
		>/dev/null || fail "status: $("$FL" status --json -c "$CONF" | jq -c ".shards[] | select(.name == \"s$vp\")")"
	"$FL" status -c "$CONF" | grep -q "cluster shard: CLUSTER NODES agrees" ||
		fail "status text: $("$FL" status -c "$CONF")"
}

# SIGSTOP of a primary (hung): its agent sees it stopped and gives its lease up, the
# controller asks its replica for CLUSTER FAILOVER FORCE once the lease is over (no
# node timeout); SIGCONT once the slots are served by the replica: the old primary
# acknowledges nothing (its lease is gone), the cluster makes it a replica over the bus
# (which the lease leaves flowing), and no write acknowledged after the stop is lost.
cluster_stop_case() {
	local vp rp ev end
	setup_rcluster
	vp=${PRIMARIES[0]} rp=${REPLICA_OF[${PRIMARIES[0]}]}
	RC_SIG=STOP rcluster_kill "$vp"
	ev=$(wait_event "$CLOG" ".kind == \"promoted\" and .shard == \"s$vp\"" 5) ||
		fail "no promotion: $(jq -c 'del(.ts)' "$CLOG" | tail -n 12)"
	expect_eq "promoted" "$(jq -r .instance <<<"$ev")" "c$rp"
	echo "    $FL_SERVER_NAME SIGSTOP: slots writable on $KILL_ON after $KILL_MS ms;" \
		"promoted after $(jq .elapsed_ms <<<"$ev") ms; client: $KILL_RES"
	has_event ".kind == \"proc_hung\" or .kind == \"node_hung\" or (.kind == \"failover_start\" and .shard == \"s$vp\")" ||
		fail "no hung failover: $(jq -c 'del(.ts)' "$CLOG" | tail -n 12)"
	# Writable within 5 s: the stop seen (stop_grace_ms), the lease over (200 ms), the
	# election; about 10 x what it takes here. The cluster alone: its 15 s node timeout.
	[ "$KILL_MS" -lt 5000 ] || fail "slots writable only after $KILL_MS ms"
	expect_eq "writable on" "$KILL_ON" "$rp"
	"$FL" status -c "$CONF" | grep -q "CLUSTER FAILOVER FORCE to c$rp" ||
		fail "no FORCE in the timeline: $("$FL" status -c "$CONF")"
	# Its agent gave the lease up before the promotion.
	wait_event "$T/events-c$vp.jsonl" '.kind == "lease_lost"' 1 >/dev/null ||
		fail "c$vp kept its lease: $(jq -c 'select(.kind | test("lease"))' "$T/events-c$vp.jsonl")"
	expect_eq "acknowledged after the stop, lost" "$(jq .lost_after <<<"$KILL_RES")" 0
	# The old primary, resumed, is made a replica of c$rp by the cluster.
	end=$((SECONDS + 20))
	until [ "$(rc_cli -p "$rp" cluster nodes | awk -v p=":$vp@" 'index($2, p) {print $3}')" = slave ]; do
		[ $SECONDS -le $end ] || fail "c$vp not a replica after SIGCONT: $(rc_cli -p "$rp" cluster nodes)"
		sleep 0.1
	done
}

test_cluster_stop_redis() {
	fl_flavour_set redis || skip "$FL_FLAVOUR_WHY"
	cluster_stop_case
}

test_cluster_stop_valkey() {
	fl_flavour_set valkey || skip "$FL_FLAVOUR_WHY"
	cluster_stop_case
}

# A FORCE that cannot win is said, with why: two primaries of three stopped (the
# second with its agent, so that flatline leaves its shard alone: a stalled agent never
# moves a primary), the first's replica asks the one primary left and gets 1 of the 2
# votes it needs. promote_failed says the election was lost and its votes; asked again,
# that no election was held (the cluster lets a replica that lost one stand again only
# 4 node timeouts later); nobody is promoted.
test_cluster_election_lost() {
	fl_flavour_set redis || skip "$FL_FLAVOUR_WHY"
	setup_rcluster
	local vp=${PRIMARIES[0]} bp=${PRIMARIES[1]} rp ev
	rp=${REPLICA_OF[$vp]}
	kill -STOP "${AGENT_PID[$bp]}"
	eval "kill -STOP \$PID_$bp"
	on_exit "kill -CONT \$PID_$bp"
	eval "kill -STOP \$PID_$vp"
	on_exit "kill -CONT \$PID_$vp"
	ev=$(wait_event "$CLOG" ".kind == \"promote_failed\" and .instance == \"c$rp\"" 10) ||
		fail "no promote_failed: $(jq -c 'del(.ts)' "$CLOG" | tail -n 12)"
	jq -e '.reason | test("lost the election for epoch [0-9]+ \\(1 of the 2 votes needed in time\\)")' \
		<<<"$ev" >/dev/null || fail "the first attempt's reason: $ev"
	wait_for 10 has_event ".kind == \"promote_failed\" and .instance == \"c$rp\" and
		(.reason | test(\"no election held\"))" ||
		fail "the next attempt's reason: $(jq -c 'select(.kind == "promote_failed")' "$CLOG")"
	! has_event '.kind == "promoted"' || fail "promoted without the votes: $(jq -c 'select(.kind == "promoted")' "$CLOG")"
	expect_eq "c$rp still a replica" "$(rc_cli -p "$rp" role | head -n 1)" slave
}

# The lease fences a primary's client port only: its agent stopped (SIGSTOP), the lease
# runs out and its clients get no reply, but its cluster bus keeps answering, so the
# cluster sees it alive past three node timeouts (2 s here) and elects nobody; nor does
# flatline (a stalled agent never moves the primary). The agent resumed, the lease
# comes back and the clients are served again.
test_cluster_bus_outside_lease() {
	fl_flavour_set redis || skip "$FL_FLAVOUR_WHY"
	need_root
	need_cmd "${FL_SERVER:-redis-server}" "${FL_CLI:-redis-cli}" jq
	rcluster_start 2000
	rcluster_flatline
	local vp rp other flags end
	vp=${PRIMARIES[0]} rp=${REPLICA_OF[${PRIMARIES[0]}]} other=${PRIMARIES[1]}
	timeout 2 "${FL_CLI:-redis-cli}" -p "$vp" ping | grep -q PONG || fail "c$vp does not answer before the test"
	kill -STOP "${AGENT_PID[$vp]}"
	sleep 1 # the lease (200 ms) runs out
	! timeout 2 "${FL_CLI:-redis-cli}" -p "$vp" ping >/dev/null 2>&1 || fail "c$vp answers a client without its lease"
	# Three node timeouts: the cluster would have flagged it failed and promoted c$rp.
	end=$((SECONDS + 6))
	while [ $SECONDS -lt $end ]; do
		flags=$(rc_cli -p "$other" cluster nodes | awk -v p=":$vp@" 'index($2, p) {print $3}')
		[[ $flags != *fail* ]] || fail "the cluster sees c$vp failed ($flags): its bus is fenced"
		sleep 0.2
	done
	expect_eq "c$rp still a replica" \
		"$(rc_cli -p "$rp" cluster nodes | awk '/myself/ {print $3}')" "myself,slave"
	expect_eq "cluster state" "$(rc_cli -p "$other" cluster info | tr -d '\r' | sed -n 's/^cluster_state://p')" ok
	! has_event ".kind == \"failover_start\" or .kind == \"promoted\"" ||
		fail "flatline failed over for a stopped agent: $(jq -c 'select(.kind | test("failover|promoted"))' "$CLOG")"
	kill -CONT "${AGENT_PID[$vp]}"
	end=$((SECONDS + 10))
	until timeout 1 "${FL_CLI:-redis-cli}" -p "$vp" ping 2>/dev/null | grep -q PONG; do
		[ $SECONDS -le $end ] || fail "c$vp not answering after its agent resumed"
		sleep 0.1
	done
}

# A server whose CONFIG the agent may not run (renamed here; an ACL that denies it is
# the same answer) and whose bus is not at its port + 10000: the agent reads the bus
# port from CLUSTER NODES, leaves the bus out of the lease (rcluster_flatline: the bus's
# sockets unmarked, every lease held) and guesses nothing (port + 10000 could be a
# client listener, which would then answer clients past the lease).
test_cluster_bus_port_without_config() {
	fl_flavour_set redis || skip "$FL_FLAVOUR_WHY"
	need_root
	need_cmd "${FL_SERVER:-redis-server}" "${FL_CLI:-redis-cli}" jq
	local p
	RC_BUS_OFFSET=5000
	RC_SERVER_ARGS="--rename-command CONFIG flatline-test-config-$$"
	rcluster_start 15000
	rc_cli -p "${P[0]}" config get cluster-port 2>&1 | grep -q "unknown command" ||
		fail "CONFIG still answers: $(rc_cli -p "${P[0]}" config get cluster-port 2>&1)"
	rcluster_flatline
	for p in "${P[@]}"; do
		grep -q "bus port $((p + 5000)) (CLUSTER NODES) stays outside" "$T/agent-c$p.err" ||
			fail "c$p: bus port not read from CLUSTER NODES: $(grep -i 'bus' "$T/agent-c$p.err")"
		! grep -q "cluster bus $((p + 10000))" "$T/agent-c$p.err" ||
			fail "c$p: the bus port guessed as port + 10000: $(grep 'lease guards' "$T/agent-c$p.err")"
	done
	echo "    CONFIG refused: every agent read its bus port from CLUSTER NODES and held its lease" >&2
}

test_cluster_kill_redis() {
	fl_flavour_set redis || skip "$FL_FLAVOUR_WHY"
	cluster_kill_case
}

test_cluster_kill_valkey() {
	fl_flavour_set valkey || skip "$FL_FLAVOUR_WHY"
	cluster_kill_case
}

# ioredis's Cluster client (npm, the version pinned in tests/node) writing through a
# kill -9 of a primary: it finds the slots on the promoted replica by itself, and no
# write it saw acknowledged after the kill is lost.
test_cluster_kill_ioredis() {
	fl_flavour_set redis || skip "$FL_FLAVOUR_WHY"
	need_cmd node
	[ -d tests/node/node_modules/ioredis ] ||
		skip "ioredis not installed in tests/node (scripts/install-deps.sh)"
	setup_rcluster
	local vp=${PRIMARIES[0]}
	RC_WRITER=ioredis rcluster_kill "$vp"
	echo "    ioredis Cluster, kill -9: slots writable on $KILL_ON after $KILL_MS ms; client: $KILL_RES"
	[ "$KILL_MS" -lt 1000 ] || fail "slots writable only after $KILL_MS ms"
	expect_eq "acknowledged after the kill, lost" "$(jq .lost_after <<<"$KILL_RES")" 0
	[ "$(jq .acked <<<"$KILL_RES")" -gt 100 ] || fail "too few writes: $KILL_RES"
	# ioredis retries on its own (no error reaches the application): back on the
	# victim's slots within the writer's 3 s after the probe saw them writable, its
	# longest wait for an acknowledgement there is max_gap_ms.
	jq -e '.slots_acked_after > 0' <<<"$KILL_RES" >/dev/null ||
		fail "ioredis never wrote the victim's slots again: $KILL_RES"
}

# A listed node that is not the primary's replica in the cluster: said, not silent.
test_cluster_mismatch() {
	fl_flavour_set redis || skip "$FL_FLAVOUR_WHY"
	setup_rcluster
	local a=${PRIMARIES[0]} b=${PRIMARIES[1]} rb t0
	rb=${REPLICA_OF[$b]}
	# Move s$b's replica under s$a's primary, as an operator's mistake would.
	t0=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	rc_cli -p "$rb" cluster replicate "$(rc_cli -p "$a" cluster myid)" >/dev/null
	wait_event "$CLOG" ".kind == \"cluster_mismatch\" and .shard == \"s$b\" and .ts > \"$t0\"" 10 >/dev/null ||
		fail "no mismatch for s$b: $(jq -c 'select(.kind | test("cluster"))' "$CLOG")"
	wait_event "$CLOG" ".kind == \"cluster_mismatch\" and .shard == \"s$a\" and .ts > \"$t0\"" 10 >/dev/null ||
		fail "no mismatch for s$a: $(jq -c 'select(.kind | test("cluster"))' "$CLOG")"
	"$FL" status --json -c "$CONF" | jq -e ".shards[] | select(.name == \"s$b\") |
		.cluster_nodes == \"mismatch\" and (.cluster_mismatch | length > 0)" >/dev/null ||
		fail "status: $("$FL" status --json -c "$CONF" | jq -c ".shards[] | select(.name == \"s$b\")")"
}

# planned_move WHAT [ARGS]: flatline failover of s$A [ARGS] while redis-py's
# RedisCluster writes throughout; its output in MOVE_OUT, A and RA (its replica) set;
# no acknowledged write lost, the replica master.
planned_move() {
	local what=$1 res
	shift
	fl_flavour_set redis || skip "$FL_FLAVOUR_WHY"
	setup_rcluster
	A=${PRIMARIES[0]}
	RA=${REPLICA_OF[$A]}
	"$PY" tests/lib/rcwriter.py write "${P[1]}" "$T/writes" &
	WPID=$!
	on_exit "kill -TERM $WPID"
	sleep 1
	MOVE_OUT=$("$FL" failover -c "$CONF" "s$A" "$@" 2>&1) || fail "failover $*: $MOVE_OUT"
	rc_cli -p "$RA" cluster nodes | grep -q "myself,master" || fail "c$RA not master"
	sleep 1
	kill -TERM "$WPID"
	wait "$WPID" 2>/dev/null
	res=$("$PY" tests/lib/rcwriter.py check "${P[1]}" "$T/writes" 0 "")
	echo "    $what: $res"
	expect_eq "acknowledged writes lost in a $what" "$(jq .lost <<<"$res")" 0
	[ "$(jq .acked <<<"$res")" -gt 100 ] || fail "too few writes: $res"
}

# flatline failover of a cluster shard: plain CLUSTER FAILOVER (the cluster pauses the
# primary and waits for the offset), no acknowledged write lost.
test_cluster_planned() {
	planned_move "planned move"
	grep -q "CLUSTER FAILOVER to c$RA" <<<"$MOVE_OUT" || fail "not a plain CLUSTER FAILOVER: $MOVE_OUT"
	! grep -q "FORCE\|TAKEOVER" <<<"$MOVE_OUT" || fail "FORCE or TAKEOVER in a planned move: $MOVE_OUT"
}

# flatline failover --takeover: CLUSTER FAILOVER TAKEOVER has no handshake with the
# primary, so flatline fences it itself: writes paused on the primary, the replica's
# offset waited for, then TAKEOVER, then unpaused; no acknowledged write lost.
test_cluster_takeover() {
	planned_move TAKEOVER --takeover
	grep -q "writes paused on c$A at offset" <<<"$MOVE_OUT" || fail "TAKEOVER without writes paused first: $MOVE_OUT"
	grep -q "CLUSTER FAILOVER TAKEOVER to c$RA" <<<"$MOVE_OUT" || fail "not a TAKEOVER: $MOVE_OUT"
	grep -q "writes unpaused on c$A" <<<"$MOVE_OUT" || fail "c$A not unpaused: $MOVE_OUT"
}

TESTS=(test_cluster_kill_redis test_cluster_kill_valkey test_cluster_stop_redis test_cluster_stop_valkey
	test_cluster_bus_outside_lease test_cluster_bus_port_without_config test_cluster_election_lost
	test_cluster_kill_ioredis test_cluster_mismatch test_cluster_planned test_cluster_takeover)
run_tests
