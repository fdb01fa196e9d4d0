#!/usr/bin/env bash
# SIGHUP, key by key (flatline.conf(5), "RELOAD"; common/config_table.c): on a whole
# cluster (tests/lib/cluster.sh), every key a daemon applies live is changed at once,
# with two that need a restart, and both daemons get SIGHUP. Each config_reloaded
# event names exactly what its daemon applied and what needs its restart (never "all
# applied" for a key it ignored), and each key needing a restart is a warning naming
# it. Then the rotated keys are used: a new node key and a new cluster secret, taken
# live by the controller (an agent restarted with them is accepted) and by the agents
# (the controller restarted, the running agents prove the new keys). Last, a change
# that would break freshness (heartbeat_ms not below node_down_after_ms) is refused
# by both, with the reason, and the running value stays.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

cluster() {
	need_root
	need_cmd ip nsenter nft named tsig-keygen dig jq setsid
	export FL_NODE_PREFIX=r${BASHPID}n
	CL_KEEP=1
	cl_init "$T/cl" "flr$BASHPID"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
}

hup_all() {
	kill -HUP "$(cl_pid controller)"
	for i in 1 2 3; do kill -HUP "$(cl_pid "agent-$(cl_node "$i")")"; done
}
# reloaded LOG N: the Nth config_reloaded of LOG (waits for it).
reloaded() {
	cl_until 5 eval "[ \"\$(jq -c 'select(.kind == \"config_reloaded\")' \"$1\" | wc -l)\" -ge $2 ]" ||
		fail "no config_reloaded #$2 in $1"
	jq -c 'select(.kind == "config_reloaded")' "$1" | sed -n "${2}p"
}
# connected_since NODE TS: the controller accepted NODE's agent after TS.
connected_since() {
	cl_has_event "$CL_CLOG" ".kind == \"agent_connected\" and .instance == \"$1\" and .ts >= \"$2\""
}

test_reload_every_live_key() {
	local ev n2 since key=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
	local applied_a applied_c
	cluster
	n2=$(cl_node 2)
	sed -i -e 's/^hung_after = 5$/hung_after = 6/' -e 's/^heartbeat_ms = 100$/heartbeat_ms = 150/' \
		-e 's/^ping_interval_ms = 100$/ping_interval_ms = 50/' \
		-e 's/^ttl = 1$/ttl = 2/' \
		-e 's/^secret = .*/secret = a-new-cluster-secret-0123456789/' \
		-e '/^\[agent\]$/a self_fence = no\nself_fence_after_ms = 2500\nstop_grace_ms = 80\nbusy_max_ms = 6000\nlease_ms = 700\nreplica_heartbeat_ms = 600' \
		-e '/^\[controller\]$/a node_down_after_ms = 1200\nfailover_block_ms = 12000\ntilt_ms = 25000\nagent_address_check = yes' \
		-e '/^\[dns\]$/a check_ms = 5000' \
		-e "/^\\[node \"$n2\"\\]\$/a key = $key" "$CL_CONF"
	"$FL" check -q -c "$CL_CONF" || fail "the edited file does not validate"
	hup_all
	applied_a="[cluster] secret, [agent] hung_after, [agent] heartbeat_ms, [agent] replica_heartbeat_ms, [agent] self_fence, [agent] self_fence_after_ms, [agent] stop_grace_ms, [agent] busy_max_ms, [node \"$n2\"] key"
	applied_c="[cluster] secret, [agent] heartbeat_ms, [agent] replica_heartbeat_ms, [agent] lease_ms, [controller] node_down_after_ms, [controller] failover_block_ms, [controller] tilt_ms, [controller] agent_address_check, [dns] check_ms, [node \"$n2\"] key"
	for i in 1 2 3; do
		ev=$(reloaded "$CL_DIR/events-$(cl_node "$i").jsonl" 1)
		expect_eq "agent h$i: changed" "$(jq -r .changed <<<"$ev")" 17
		expect_eq "agent h$i: applied" "$(jq -r .applied <<<"$ev")" "$applied_a"
		expect_eq "agent h$i: needs a restart" "$(jq -r .needs_restart <<<"$ev")" "[agent] ping_interval_ms, [agent] lease_ms"
		expect_eq "agent h$i: refused" "$(jq -r .refused <<<"$ev")" ""
		grep -q 'reload: \[agent\] lease_ms: needs a restart of the agent' "$CL_DIR/log/agent-$(cl_node "$i").out" ||
			fail "agent h$i: no warning naming lease_ms"
	done
	ev=$(reloaded "$CL_CLOG" 1)
	expect_eq "controller: changed" "$(jq -r .changed <<<"$ev")" 17
	expect_eq "controller: applied" "$(jq -r .applied <<<"$ev")" "$applied_c"
	expect_eq "controller: needs a restart" "$(jq -r .needs_restart <<<"$ev")" "[dns] ttl"
	grep -q 'reload: \[dns\] ttl: needs a restart of the controller' "$CL_DIR/log/controller.out" ||
		fail "controller: no warning naming ttl"
	# The controller took n2's new key: n2's agent, restarted, proves it.
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	cl_stop "agent-$n2" KILL
	cl_agent_start 2
	cl_until 5 connected_since "$n2" "$since" ||
		fail "the controller did not accept n2's new key: $(grep agent_rejected "$CL_CLOG" | tail -n 1)"
	# The agents took theirs (the new secret's, n2's own): the controller restarted with
	# the file, the running agents prove them on their next connection.
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	cl_stop controller
	cl_controller_start || fail "the controller did not restart"
	for i in 1 2 3; do
		cl_until 10 connected_since "$(cl_node "$i")" "$since" ||
			fail "agent h$i did not prove its new key: $(grep agent_rejected "$CL_CLOG" | tail -n 1)"
	done
	! cl_has_event "$CL_CLOG" '.kind == "agent_rejected"' || fail "an agent was rejected: $(grep agent_rejected "$CL_CLOG" | head -n 1)"

	# heartbeat_ms 1500 is not below node_down_after_ms 1200: refused by both.
	sed -i 's/^heartbeat_ms = 150$/heartbeat_ms = 1500/' "$CL_CONF"
	kill -HUP "$(cl_pid controller)" "$(cl_pid "agent-$(cl_node 1)")"
	ev=$(reloaded "$CL_DIR/events-$(cl_node 1).jsonl" 2)
	expect_eq "agent: applied" "$(jq -r .applied <<<"$ev")" ""
	jq -e '.refused | startswith("[agent] heartbeat_ms: [agent] heartbeat_ms 1500 is not below [controller] node_down_after_ms 1200")' <<<"$ev" >/dev/null ||
		fail "agent: not refused with the reason: $ev"
	ev=$(reloaded "$CL_CLOG" 2) # the log goes on across the controller's restart
	expect_eq "controller: applied" "$(jq -r .applied <<<"$ev")" ""
	jq -e '.refused | startswith("[agent] heartbeat_ms: [agent] heartbeat_ms 1500 is not below")' <<<"$ev" >/dev/null ||
		fail "controller: not refused with the reason: $ev"
	# Still reporting at the old pace: connected, healthy.
	sleep 1
	cl_healthy || fail "the cluster is not healthy after the refused reload"
}

TESTS=(test_reload_every_live_key)
run_tests
