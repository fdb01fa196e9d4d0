#!/usr/bin/env bash
# Self-fencing: a primary whose host is cut off pauses its own
# writes, and lifts the pause only on the controller's word. Namespaces: a bridge,
# host a (redis primary + agent n1), host b (peer n2 + the recording controller),
# addresses in 198.18.1.0/24 that exist only inside them; all removed on exit.
# FL_FLAVOUR=valkey (test_fence_valkey.sh): valkey-server in place of redis-server.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/flavour.sh
. tests/lib/flavour.sh
PY=/usr/bin/python3
A_IP=198.18.1.1
B_IP=198.18.1.2

# setup PRIMARY: redis + agent in a, recording controller in b whose answers name
# PRIMARY as the shard's primary ("self": the agent's own node).
setup() {
	need_cmd nft
	fl_flavour_set "${FL_FLAVOUR:-redis}" || skip "$FL_FLAVOUR_WHY"
	P=flf$BASHPID
	make_hosts "$P" 198.18.1
	NODE=f1$P
	RPORT=$(free_port)
	$NA "$FL_SERVER" --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$T" \
		--logfile "$T/redis.log" &
	on_exit "kill -KILL $!"
	local end=$((SECONDS + FL_WAIT_S))
	until $NA "$FL_CLI" -p "$RPORT" ping 2>/dev/null | grep -q PONG; do
		[ $SECONDS -le $end ] || fail "redis did not start"
		sleep 0.05
	done
	CPORT=$(free_port)
	REC=$T/rec.jsonl
	local primary=$1
	[ "$primary" != self ] || primary=$NODE
	$NB $PY tests/lib/recpeer.py "$CPORT" "$REC" --bind $B_IP --primary "$primary" &
	on_exit "kill $!"
	cat >"$T/c.conf" <<-EOC
		[cluster]
		secret = s3cret-s3cret-s3cret
		[agent]
		lease_ms = 0 ; the write lease has its own tests (test_lease.sh), in namespaces
		probe_interval_ms = 100
		peer_down_after_ms = 500
		heartbeat_ms = 100
		[controller]
		listen = $B_IP:$CPORT
		[node "$NODE"]
		address = $A_IP
		redis = 127.0.0.1:$RPORT
		[node "n2"]
		address = $B_IP
		redis = $B_IP:6379
		[shard "s"]
		nodes = $NODE n2
	EOC
	chmod 600 "$T/c.conf"
	LOG=$T/events.jsonl
	$NA "$FL" agent -c "$T/c.conf" --node "$NODE" --event-log "$LOG" 2>"$T/agent.err" &
	AGENT_PID=$!
	on_exit "kill -TERM $AGENT_PID; wait $AGENT_PID; rm -rf /sys/fs/bpf/flatline/$NODE"
	wait_event "$LOG" '.kind == "controller_connected"' >/dev/null || { cat "$T/agent.err" >&2; fail "agent did not reach the controller"; }
	wait_event "$LOG" '.kind == "peer_up" and .peer == "n2"' >/dev/null || { cat "$T/agent.err" >&2; fail "no peer_up for n2"; }
}

# Host a cut off from everything but its own loopback.
isolate_a() {
	$NA nft -f - <<-EOF
		table inet flfence {
			chain in { type filter hook input priority 0; policy drop; iif lo accept; }
			chain out { type filter hook output priority 0; policy drop; oif lo accept; }
		}
	EOF
}
heal_a() { $NA nft delete table inet flfence; }

# write_held: a write from inside host a does not complete within 1 s.
write_held() { ! $NA timeout 1 "$FL_CLI" -p "$RPORT" set fence probe >/dev/null 2>&1; }
write_ok() { $NA timeout 2 "$FL_CLI" -p "$RPORT" set fence probe 2>/dev/null | grep -q OK; }

test_isolated_primary_fences_and_controller_lifts() {
	setup self
	write_ok || fail "writes fail before the isolation"
	t0=$(date +%s%N)
	isolate_a
	ev=$(wait_event "$LOG" '.kind == "self_fenced"') || fail "no self_fenced"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	# self_fence_after_ms = 2 x 500; bounded generously for a noisy machine.
	[ "$ms" -ge 800 ] && [ "$ms" -le 10000 ] || fail "self_fenced after $ms ms, want about 1000"
	write_held || fail "a write went through on the fenced primary"
	sleep 1.5 # the pause is renewed: still held after it would have lapsed
	write_held || fail "the pause lapsed while isolated"
	heal_a
	ev=$(wait_event "$LOG" '.kind == "self_fence_lifted"') || fail "pause not lifted after the controller confirmed"
	grep -q "confirmed" <<<"$ev" || fail "lifted for another reason: $ev"
	write_ok || fail "writes still held after the lift"
	wait_event "$REC" '.cmd == "REPORT" and .args.fenced == "1"' >/dev/null || fail "no report said fenced"
}

test_lifted_only_on_controllers_word() {
	setup n2 # the controller says n2 is the primary now
	isolate_a
	wait_event "$LOG" '.kind == "self_fenced"' >/dev/null || fail "no self_fenced"
	heal_a
	healed=$(date +%s.%N)
	# The same TCP connection may have survived the short cut, or a new one is made.
	wait_event "$REC" ".cmd == \"REPORT\" and .args.fenced == \"1\" and .t > $healed" 15 >/dev/null ||
		fail "the agent did not report to the controller after the heal"
	sleep 1
	write_held || fail "writes allowed though the controller names another primary"
	expect_eq "self_fence_lifted before the demotion" "$(count_events "$LOG" '.kind == "self_fence_lifted"')" 0
	# The controller's demotion, as it would do it: now the pause goes.
	$NA "$FL_CLI" -p "$RPORT" replicaof $B_IP 1 >/dev/null
	ev=$(wait_event "$LOG" '.kind == "self_fence_lifted"') || fail "pause not lifted after the demotion"
	grep -q "demoted" <<<"$ev" || fail "lifted for another reason: $ev"
}

TESTS=(test_isolated_primary_fences_and_controller_lifts test_lifted_only_on_controllers_word)
run_tests
