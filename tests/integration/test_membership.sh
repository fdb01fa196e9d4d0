#!/usr/bin/env bash
# Runtime membership with real servers, agents and controllers (tests/lib/cluster.sh: three
# namespace hosts, a fourth made here for the node added at runtime): `flatline node
# add|remove` and `flatline shard add|remove` with one controller and across its restart,
# the same with three controllers and etcd across a leader change (FL_HA=1:
# test_membership_ha.sh), a replica in
# the primary's INFO that no shard knows (replica_unknown), the primary's removal refused,
# a node added at runtime promoted when the primary is killed, and SENTINEL
# MONITOR/REMOVE as redis-py's Sentinel client sees them (+monitor, +slave, -monitor).
# MEMBERSHIP_TESTS="test_a test_b" runs only those.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

PY=/usr/bin/python3
N4=

cluster() {
	need_root
	need_cmd ip nsenter nft named tsig-keygen dig jq setsid "$PY"
	[ -z "${FL_HA:-}" ] || need_cmd etcd
	export FL_NODE_PREFIX=m${BASHPID}n
	CL_KEEP=1
	cl_init "$T/cl" "flm$BASHPID"
	[ -z "$CL_FLAVOUR_WHY" ] || skip "$CL_FLAVOUR_WHY"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	N4=$(cl_node 4)
}

# Host 4: a namespace on the bridge and a server, a replica of host 1 (in no shard yet).
h4_up() {
	cl_netns_attach "$(cl_ns 4)" veth4 "$(cl_ip 4)"
	[ -z "$CL_CG_KIND" ] || mkdir -p "$(cl_cg 4)"
	on_exit h4_clean
	cl_redis_start 4 1 || fail "server on host 4 did not start"
}
h4_clean() {
	local cg
	cl_stop "agent-$N4"
	cl_stop "redis-$N4"
	rm -rf "/sys/fs/bpf/flatline/$N4" "/run/flatline/agent-$N4.lock"
	cg=$(cl_cg 4)
	if [ -n "$cg" ] && [ -d "$cg" ]; then
		while read -r p; do kill -KILL "$p"; done <"$cg/cgroup.procs"
		for _ in $(seq 100); do rmdir "$cg" 2>/dev/null && break; sleep 0.02; done
	fi
}
# h4_agent [KEYFILE]: the agent of the node added at runtime; with KEYFILE, from a copy
# of the cluster file without the secret (the key node add printed).
h4_agent() {
	local conf=$CL_CONF extra=()
	if [ -n "${1:-}" ]; then
		conf=$CL_DIR/agent-n4.conf
		grep -v '^secret' "$CL_CONF" >"$conf"
		chmod 600 "$conf"
		extra=(--key-file "$1")
	fi
	cl_spawn "agent-$N4" "$(cl_ns 4)" "$FL" agent -c "$conf" --node "$N4" \
		--address "$(cl_ip 4)" --redis "$(cl_hp "$(cl_ip 4)" 6379)" "${extra[@]}" \
		--event-log "$CL_DIR/events-$N4.jsonl" --peer "$(cl_node 1)=$(cl_ip 1)"
}

fl() { cl_ctl timeout 15 "$FL" "$@" -c "$CL_CONF"; }
ctl_ev() { cl_has_event "$CL_CLOG" "$1"; }
wait_ctl() { # JQ-FILTER [SECONDS]
	cl_until "${2:-10}" ctl_ev "$1" || fail "no controller event ($1) within ${2:-10} s: $(tail -n 5 "$CL_CLOG")"
}
# node_json ID: that node's object in the status (empty if none).
node_json() { cl_status_json | jq -c --arg n "$1" '.shards[] | .nodes[] | select(.id == $n)' 2>/dev/null; }
node_is() { [ "$(node_json "$1" | jq -r "$2" 2>/dev/null)" = true ]; }
no_node() { [ -z "$(node_json "$1")" ]; }
status_unknown() { cl_ctl "$FL" status -c "$CL_CONF" 2>/dev/null | grep -q "REPLICAS IN NO SHARD.*$1"; }
shard_is() { [ "$(cl_status_json | jq -r --arg s "$1" '.shards[] | select(.name == $s) | .source' 2>/dev/null)" = "$2" ]; }
ha_has_node() { # IDX ID: that controller's status lists the node, from runtime
	[ "$(cl_ha_status "$1" | jq -r --arg n "$2" '.shards[].nodes[] | select(.id == $n) | .source' 2>/dev/null)" = runtime ]
}
restart_controller() {
	if [ -n "${FL_HA:-}" ]; then
		local l
		l=$(cl_ha_leader) || fail "no leader"
		cl_stop "controller-c$l"
		cl_until 20 cl_ha_leader_ready || fail "no new leader after c$l stopped"
		CL_CLOG=$(cl_ha_log "$(cl_ha_leader)")
		cl_ha_controller_start "$l"
	else
		cl_stop controller
		cl_controller_start || fail "controller did not start again"
	fi
}

test_add_remove() {
	local out
	cluster
	h4_up
	# In the primary's INFO and in no shard: reported (the scan runs every 10 s).
	wait_ctl ".kind == \"replica_unknown\" and .replica == \"$(cl_ip 4)\" and .port == 6379" 25
	# (each controller scans on its own: the one status asks may be another one)
	cl_until 15 status_unknown "$(cl_ip 4):6379" ||
		fail "status does not show the unknown replica: $(cl_ctl "$FL" status -c "$CL_CONF")"
	expect_eq "replica_unknown events (once per appearance)" \
		"$(count_events "$CL_CLOG" '.kind == "replica_unknown"')" 1
	out=$(fl node add "$CL_SHARD" "$N4" --address "$(cl_ip 4)" --redis "$(cl_hp "$(cl_ip 4)" 6379)" \
		--priority 50) || fail "node add failed: $out"
	grep -q "key" <<<"$out" || fail "node add printed no key: $out"
	[ "$(grep -o '[0-9a-f]\{64\}' <<<"$out")" = "$(fl node-key "$N4" 2>/dev/null)" ] ||
		fail "node add's key is not node-key's: $out"
	grep -o '[0-9a-f]\{64\}' <<<"$out" >"$CL_DIR/n4.key"
	wait_ctl ".kind == \"node_added\" and .instance == \"$N4\" and .source == \"runtime\""
	cl_until 10 node_is "$N4" '.source == "runtime"' || fail "status: $(node_json "$N4")"
	if [ -n "${FL_HA:-}" ]; then # every controller has it, from the watch
		for i in 1 2 3; do
			cl_until 5 ha_has_node "$i" "$N4" || fail "controller c$i does not list $N4"
		done
	fi
	node_is "$(cl_node 1)" '.source == "file"' || fail "status: n1 is not from the file"
	# Added twice: refused.
	if out=$(fl node add "$CL_SHARD" "$N4" --address "$(cl_ip 4)" --redis "$(cl_hp "$(cl_ip 4)" 6380)" 2>&1); then
		fail "a second add of $N4 was accepted: $out"
	fi
	grep -q "exists" <<<"$out" || fail "second add: $out"
	h4_agent "$CL_DIR/n4.key"
	wait_ctl ".kind == \"agent_connected\" and .instance == \"$N4\"" 15
	cl_until 10 node_is "$N4" '.health == "ok"' || fail "n4 not healthy: $(node_json "$N4")"
	# Kept across a restart (the state file, or etcd and another leader).
	restart_controller
	cl_until 15 node_is "$N4" '.source == "runtime" and .health == "ok"' ||
		fail "after the restart: $(node_json "$N4")"
	# The primary cannot be removed.
	if out=$(fl node remove "$CL_SHARD" "$(cl_node 1)" 2>&1); then
		fail "removing the primary was accepted: $out"
	fi
	grep -q "is the primary" <<<"$out" || fail "primary removal: $out"
	node_is "$(cl_node 1)" '.role == "primary"' || fail "n1 is not primary any more"
	out=$(fl node remove "$CL_SHARD" "$N4") || fail "node remove failed: $out"
	wait_ctl ".kind == \"node_removed\" and .instance == \"$N4\""
	cl_until 5 no_node "$N4" || fail "status still lists $N4"
	restart_controller
	cl_until 10 cl_healthy || fail "not healthy after the restart"
	no_node "$N4" || fail "$N4 is back after the restart: $(node_json "$N4")"
	# A shard at runtime, and away again.
	out=$(fl shard add web --dns-name "web.$CL_ZONE.") || fail "shard add: $out"
	cl_until 5 shard_is web runtime || fail "shard web not in status"
	out=$(fl shard remove web) || fail "shard remove: $out"
	wait_ctl '.kind == "shard_removed" and .shard == "web"'
	[ -z "$(cl_status_json | jq -r '.shards[] | select(.name == "web") | .name')" ] || fail "web still there"
}

# A replica added at runtime, the file's two replicas removed: the primary killed, it is
# the one promoted.
test_promote_runtime() {
	local out
	cluster
	h4_up
	out=$(fl node add "$CL_SHARD" "$N4" --address "$(cl_ip 4)" --redis "$(cl_hp "$(cl_ip 4)" 6379)") ||
		fail "node add: $out"
	h4_agent
	wait_ctl ".kind == \"agent_connected\" and .instance == \"$N4\"" 15
	for i in 2 3; do
		out=$(fl node remove "$CL_SHARD" "$(cl_node "$i")") || fail "remove $(cl_node "$i"): $out"
	done
	cl_until 10 node_is "$N4" '.health == "ok"' || fail "n4 not healthy: $(node_json "$N4")"
	cl_until 10 cl_linked 4 1 || fail "n4 not linked to n1"
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	wait_ctl ".kind == \"promoted\" and .instance == \"$N4\"" 15
	[ "$(cl_role 4)" = master ] || fail "n4's server is not a master: $(cl_role 4)"
	[ "$(cl_api_primary)" = "$(cl_ip 4)" ] || fail "the Sentinel API names $(cl_api_primary)"
}

# SENTINEL MONITOR / REMOVE as redis-py's Sentinel client sees them.
test_sentinel_monitor() {
	cluster
	h4_up
	# A second server on host 4, a replica of the first: MONITOR finds it.
	cl_spawn "redis-$N4-b" "$(cl_ns 4)" "$CL_SERVER" --port 6380 --bind "$(cl_ip 4)" \
		--protected-mode no --save '' --appendonly no --dir "$CL_DIR/$N4" \
		--replicaof "$(cl_ip 4)" 6379 --logfile "$CL_DIR/$N4/b.log"
	# host 4's first server is a replica of host 1: make it a primary of its own.
	cl_redis 4 replicaof no one >/dev/null
	cl_ctl "$PY" - "$(cl_api_ips | head -n 1)" "$CL_CTL_PORT" "$CL_SECRET" "$(cl_ip 4)" \
		>"$T/monitor.out" 2>&1 <<-'PYEOF' || fail "redis-py: $(cat "$T/monitor.out")"
		import sys, time, redis
		from redis.sentinel import Sentinel, MasterNotFoundError
		host, port, secret, ip = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
		admin = redis.Redis(host=host, port=port, password=secret, decode_responses=True)
		ps = redis.Redis(host=host, port=port, decode_responses=True).pubsub()
		ps.subscribe("+monitor", "-monitor", "+slave")
		ps.get_message(timeout=1)
		sen = Sentinel([(host, port)], socket_timeout=2)
		try:
		    sen.discover_master("mymaster")
		    sys.exit("mymaster known before MONITOR")
		except MasterNotFoundError:
		    pass
		assert admin.execute_command("SENTINEL MONITOR mymaster %s 6379 2" % ip) in (True, "OK")
		try:
		    admin.execute_command("SENTINEL MONITOR mymaster %s 6379 2" % ip)
		    sys.exit("a second MONITOR was accepted")
		except redis.ResponseError as e:
		    assert "Duplicated master name" in str(e), e
		for bad, want in (("x 1.2.3.4 0 2", "Invalid port"), ("x 1.2.3.4 6379 0", "Quorum"),
		                  ("x nohost 6379 2", "Invalid IP")):
		    try:
		        admin.execute_command("SENTINEL MONITOR " + bad)
		        sys.exit("MONITOR %s accepted" % bad)
		    except redis.ResponseError as e:
		        assert want in str(e), (bad, e)
		seen = {}
		deadline = time.time() + 20
		while time.time() < deadline and not ("+monitor" in seen and "+slave" in seen):
		    m = ps.get_message(timeout=0.5)
		    if m and m["type"] == "message":
		        seen[m["channel"]] = m["data"]
		assert seen.get("+monitor", "").startswith("master mymaster %s 6379" % ip), seen
		assert seen.get("+slave", "").startswith("slave %s:6380" % ip), seen
		assert sen.discover_master("mymaster") == (ip, 6379), sen.discover_master("mymaster")
		deadline = time.time() + 5  # the controller's link to the new replica, then its INFO
		while time.time() < deadline and (ip, 6380) not in sen.discover_slaves("mymaster"):
		    time.sleep(0.1)
		assert (ip, 6380) in sen.discover_slaves("mymaster"), admin.execute_command("SENTINEL REPLICAS mymaster")
		assert admin.execute_command("SENTINEL RESET mymaster") == 1
		assert admin.execute_command("SENTINEL REMOVE mymaster") in (True, "OK")
		deadline = time.time() + 5
		while time.time() < deadline and "-monitor" not in seen:
		    m = ps.get_message(timeout=0.5)
		    if m and m["type"] == "message":
		        seen[m["channel"]] = m["data"]
		assert seen.get("-monitor", "").startswith("master mymaster"), seen
		try:
		    sen.discover_master("mymaster")
		    sys.exit("mymaster still known after REMOVE")
		except MasterNotFoundError:
		    pass
		try:
		    admin.execute_command("SENTINEL REMOVE mymaster")
		    sys.exit("a second REMOVE was accepted")
		except redis.ResponseError as e:
		    assert "No such master" in str(e), e
		print("ok")
	PYEOF
	wait_ctl '.kind == "shard_added" and .shard == "mymaster"'
	wait_ctl '.kind == "shard_removed" and .shard == "mymaster"'
}

if [ -n "${MEMBERSHIP_TESTS:-}" ]; then
	read -r -a TESTS <<<"$MEMBERSHIP_TESTS"
else
	TESTS=(test_add_remove test_promote_runtime test_sentinel_monitor)
fi
run_tests
