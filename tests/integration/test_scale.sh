#!/usr/bin/env bash
# A few hundred shards on one controller reach a steady state and stay in it: every
# node healthy, no agent connection lost or re-made, no node judged lost or
# unreachable, a third of the primaries killed at once all replaced. The servers are
# bench/serversim (one process answering for every port as Redis 7 does), the agents
# bench/loadgen (the agent's protocol, REPORT keys, cadence and timeouts, without
# BPF); the controller is the real one at the shipped defaults (write lease on).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
TOOLS=${TOOLS:-$PWD/${BUILD:-build}/tools}
SHARDS=${FL_SCALE_SHARDS:-300}

# base_port N: a base port with N free consecutive ports above it, below the
# ephemeral range.
base_port() {
	local base p ok
	for base in 22000 25000 28000; do
		ok=1
		for ((p = base; p <= base + $1; p++)); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then ok=0; break; fi
		done
		[ $ok = 1 ] && { echo "$base"; return 0; }
	done
	return 1
}

# snap: loadgen's counters now (SIGUSR1 prints one JSON line).
snap() {
	local n
	n=$(wc -l <"$T/lg.out")
	kill -USR1 "$LG_PID"
	for _ in $(seq 100); do [ "$(wc -l <"$T/lg.out")" -gt "$n" ] && break; sleep 0.05; done
	tail -n 1 "$T/lg.out"
}

healthy() {
	"$FL" status -c "$CONF" --json 2>/dev/null |
		jq '[.shards[].nodes[] | select(.health == "ok")] | length' 2>/dev/null || echo 0
}

test_steady_state_and_mass_failover() {
	need_cmd jq redis-cli
	[ -x "$TOOLS/serversim" ] && [ -x "$TOOLS/loadgen" ] || skip "needs make tools"
	local nodes=$((SHARDS * 3)) kill=$((SHARDS / 3)) base s k a b n end
	base=$(base_port $((nodes + 1))) || skip "no $((nodes + 1)) free ports"
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl
	{
		printf '[cluster]\nname = scale\nsecret = scale-secret-scale-secret\n'
		printf '[controller]\nlisten = 127.0.0.1:%d\nstate_file = %s\nevent_log = %s\n' \
			"$base" "$T/state" "$CLOG"
		for ((s = 1; s <= SHARDS; s++)); do
			for k in 1 2 3; do
				printf '[node "s%04dn%d"]\naddress = ::1\nredis = 127.0.0.1:%d\n' \
					"$s" "$k" $((base + (s - 1) * 3 + k))
			done
			printf '[shard "s%04d"]\nnodes = s%04dn1 s%04dn2 s%04dn3\n' "$s" "$s" "$s" "$s"
		done
	} >"$CONF"
	chmod 600 "$CONF"
	: >"$T/nodes" && : >"$T/layout"
	for ((s = 1; s <= SHARDS; s++)); do
		for k in 1 2 3; do
			echo "$(printf 's%04dn%d' "$s" "$k") $((base + (s - 1) * 3 + k))" >>"$T/nodes"
			if [ "$k" = 1 ]; then echo "$((base + (s - 1) * 3 + 1)) master"
			else echo "$((base + (s - 1) * 3 + k)) replica-of $((base + (s - 1) * 3 + 1))"; fi >>"$T/layout"
		done
	done
	"$TOOLS/serversim" --layout "$T/layout" >"$T/sim.out" 2>"$T/sim.err" &
	on_exit "kill -TERM $!; wait $!"
	for _ in $(seq 200); do grep -q servers "$T/sim.out" 2>/dev/null && break; sleep 0.05; done
	grep -q servers "$T/sim.out" || fail "serversim did not start: $(cat "$T/sim.err")"
	spawn_controller
	: >"$T/lg.out"
	"$TOOLS/loadgen" --controller "127.0.0.1:$base" --secret scale-secret-scale-secret \
		--nodes-file "$T/nodes" >>"$T/lg.out" 2>"$T/lg.err" &
	LG_PID=$!
	on_exit "kill -TERM $LG_PID; wait $LG_PID"
	end=$((SECONDS + 60))
	until [ "$(healthy)" = "$nodes" ]; do
		[ $SECONDS -le $end ] || fail "$(healthy) of $nodes nodes healthy after 60 s"
		sleep 0.5
	done
	# Steady: 10 s in which nothing is lost, re-made or judged unreachable.
	a=$(snap)
	sleep 10
	b=$(snap)
	expect_eq "agent connections made" "$(count_events "$CLOG" '.kind == "agent_connected"')" "$nodes"
	for k in agent_disconnected agent_timeout agent_lost node_unreachable node_down failover_start; do
		expect_eq "$k events" "$(count_events "$CLOG" ".kind == \"$k\"")" 0
	done
	expect_eq "loadgen reconnects" "$(jq -n --argjson a "$a" --argjson b "$b" '$b.ctl_reconnects - $a.ctl_reconnects')" 0
	expect_eq "report slots without a session" "$(jq -n --argjson a "$a" --argjson b "$b" '$b.missed - $a.missed')" 0
	n=$(jq -n --argjson a "$a" --argjson b "$b" '$b.answered - $a.answered')
	# Quiet replicas every 500 ms, primaries every 100 ms: 10 + 2 × 2 a shard a second,
	# not the 30 of every node at 100 ms.
	[ "$n" -gt $((SHARDS * 14 * 10 / 2)) ] && [ "$n" -lt $((SHARDS * 20 * 10)) ] ||
		fail "$n REPORTs answered in 10 s ($SHARDS shards: about $((SHARDS * 14 * 10)) expected)"
	# A third of the primaries killed at once: every one replaced.
	redis-cli -p $((base + 3)) SIMKILL $(for ((s = 1; s <= kill; s++)); do echo $((base + (s - 1) * 3 + 1)); done) >/dev/null
	end=$((SECONDS + 30))
	until [ "$(count_events "$CLOG" '.kind == "failover_end"')" -ge "$kill" ]; do
		[ $SECONDS -le $end ] || fail "$(count_events "$CLOG" '.kind == "failover_end"') of $kill failovers ended after 30 s"
		sleep 0.2
	done
	expect_eq "promoted" "$(count_events "$CLOG" '.kind == "promoted"')" "$kill"
	expect_eq "failovers aborted" "$(count_events "$CLOG" '.kind == "failover_abort"')" 0
	expect_eq "agent connections lost" "$(count_events "$CLOG" '.kind == "agent_disconnected"')" 0
}

TESTS=(test_steady_state_and_mass_failover)
run_tests
