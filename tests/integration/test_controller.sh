#!/usr/bin/env bash
# The controller (issue 5): real redis-server x3 on loopback, real agents (BPF, root),
# real controller. Failover on kill -9 and SIGSTOP, the old primary demoted, planned
# switchover without losing an acknowledged write, a Sentinel client following,
# state file and bad input.
cd "$(dirname "$0")/../.." || exit 1
. tests/integration/lib.sh
PY=/usr/bin/python3

# setup_cluster: three servers (n1 primary, n2 n3 replicas), the cluster file $CONF,
# the controller on $CTL_PORT with its event log $CLOG; agents with START_AGENTS=1.
setup_cluster() {
	need_root
	need_cmd redis-server redis-cli jq
	P1=$(free_port) P2=$(free_port) P3=$(free_port) CTL_PORT=$(free_port)
	while [ "$P2" = "$P1" ] || [ "$P3" = "$P1" ] || [ "$P3" = "$P2" ] ||
		[ "$CTL_PORT" = "$P1" ] || [ "$CTL_PORT" = "$P2" ] || [ "$CTL_PORT" = "$P3" ]; do
		P2=$(free_port) P3=$(free_port) CTL_PORT=$(free_port)
	done
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl STATE=$T/state
	cat >"$CONF" <<-EOF
	[cluster]
	name = t
	secret = s3cret
	[agent]
	ping_interval_ms = 50
	hung_after = 4
	heartbeat_ms = 100
	[controller]
	listen = 127.0.0.1:$CTL_PORT
	node_down_after_ms = 1000
	state_file = $STATE
	event_log = $CLOG
	failover_block_ms = ${BLOCK_MS:-1000}
	[node "n1"]
	address = 127.0.0.1
	redis = 127.0.0.1:$P1
	[node "n2"]
	address = 127.0.0.1
	redis = 127.0.0.1:$P2
	priority = ${N2_PRIO:-100}
	[node "n3"]
	address = 127.0.0.1
	redis = 127.0.0.1:$P3
	[shard "s"]
	nodes = n1 n2 n3
	EOF
	start_node 1 "$P1"
	start_node 2 "$P2" --replicaof 127.0.0.1 "$P1"
	start_node 3 "$P3" --replicaof 127.0.0.1 "$P1"
	wait_linked "$P2" "$P1" && wait_linked "$P3" "$P1" || fail "replicas did not sync"
	start_controller
	if [ "${START_AGENTS:-1}" = 1 ]; then
		start_agents
	fi
}

# start_node I PORT [ARGS]: redis-server with a pid file; PID_<I> set.
start_node() {
	local i=$1 port=$2; shift 2
	start_redis "$port" --pidfile "$T/redis-$port.pid" "$@"
	eval "PID_$i=$REDIS_PID"
}

port_of() { case $1 in n1) echo "$P1" ;; n2) echo "$P2" ;; n3) echo "$P3" ;; esac; }
info_field() { redis-cli -p "$1" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }

# wait_linked REPLICA_PORT MASTER_PORT: replicating from it with the link up.
wait_linked() {
	local end=$((SECONDS + FL_WAIT_S))
	while [ $SECONDS -le $end ]; do
		[ "$(info_field "$1" master_port)" = "$2" ] &&
			[ "$(info_field "$1" master_link_status)" = up ] && return 0
		sleep 0.05
	done
	return 1
}

start_controller() {
	"$FL" controller -c "$CONF" -v >>"$T/controller.err" 2>&1 &
	CTL_PID=$!
	on_exit "kill -TERM $CTL_PID; wait $CTL_PID"
	wait_event "$CLOG" ".kind == \"controller_ready\" and (.ts > \"${1:-}\")" >/dev/null || {
		cat "$T/controller.err" >&2
		fail "controller did not start"
	}
}

start_agents() {
	local n
	for n in n1 n2 n3; do
		"$FL" agent -c "$CONF" --node "$n" --event-log "$T/events-$n.jsonl" \
			2>"$T/agent-$n.err" &
		on_exit "kill -TERM $!; wait $!"
	done
	for n in n1 n2 n3; do
		wait_event "$CLOG" ".kind == \"agent_connected\" and .instance == \"$n\"" >/dev/null ||
			fail "agent $n did not connect: $(cat "$T/agent-$n.err")"
	done
	# Every agent has reported its server up.
	local end=$((SECONDS + FL_WAIT_S))
	until [ "$(status_json | jq '[.shards[0].nodes[] | select(.health == "ok")] | length')" = 3 ]; do
		[ $SECONDS -le $end ] || fail "nodes not healthy: $(status_json)"
		sleep 0.05
	done
}

# has_event JQ-FILTER: the controller logged a matching event (jq 1.6's -e looks at the
# last input line only, so not that).
has_event() { [ -n "$(jq -c "select($1)" "$CLOG" 2>/dev/null)" ]; }

status_json() { "$FL" status -c "$CONF" --json; }
primary() { redis-cli -p "$CTL_PORT" sentinel get-master-addr-by-name s | tail -n 1; }

# fill N: N keys written on the primary and replicated to both replicas.
fill() {
	local port=$1 n=$2
	seq 1 "$n" | sed 's/.*/SET k& v&/' | redis-cli -p "$port" >/dev/null
	[ "$(redis-cli -p "$port" wait 2 5000)" = 2 ] || fail "fill: not replicated"
}

# never_followed LOG FROM_MARKER OLD_PORT: after the first line matching FROM_MARKER,
# the server whose log it is never connected to OLD_PORT as its master.
never_followed() {
	[ "$(sed -n "/$2/,\$p" "$1" | grep -c "Connecting to MASTER 127.0.0.1:$3")" = 0 ]
}

test_kill_primary() {
	setup_cluster
	fill "$P1" 1000
	kill -KILL "$PID_1"
	ev=$(wait_event "$CLOG" '.kind == "failover_end"') || fail "no failover: $(tail -n 5 "$CLOG")"
	new=$(jq -r .to <<<"$ev")
	[ "$new" = n2 ] || [ "$new" = n3 ] || fail "promoted $new"
	other=$([ "$new" = n2 ] && echo n3 || echo n2)
	expect_eq "primary via Sentinel API" "$(primary)" "$(port_of "$new")"
	expect_eq "new primary role" "$(info_field "$(port_of "$new")" role)" master
	wait_linked "$(port_of "$other")" "$(port_of "$new")" || fail "$other does not follow $new"
	has_event '.kind == "promoted" and .epoch == 1' || fail "epoch not 1"
	# The old primary restarts EMPTY: demoted at once, and nobody syncs from it.
	start_node 1 "$P1"
	wait_event "$CLOG" '.kind == "old_primary_demoted" and .instance == "n1"' >/dev/null ||
		fail "old primary not demoted"
	wait_linked "$P1" "$(port_of "$new")" || fail "n1 does not follow $new"
	for p in "$P1" "$P2" "$P3"; do
		expect_eq "keys on $p" "$(redis-cli -p "$p" dbsize)" 1000
	done
	sleep 1.5 # a replica that was still pointed at n1 would have reconnected by now
	for p in "$(port_of "$other")" "$(port_of "$new")"; do
		expect_eq "keys on $p after n1's return" "$(redis-cli -p "$p" dbsize)" 1000
		expect_eq "$p never followed n1 again" "$(info_field "$p" master_port | grep -c "^$P1$")" 0
	done
	never_followed "$T/redis-$(port_of "$other").log" "Connecting to MASTER 127.0.0.1:$(port_of "$new")" "$P1" ||
		fail "$other reconnected to the old primary"
	never_followed "$T/redis-$(port_of "$new").log" "MASTER MODE enabled" "$P1" ||
		fail "$new reconnected to the old primary"
	# Status shows it all.
	st=$(status_json)
	expect_eq "status primary" "$(jq -r '.shards[0].primary' <<<"$st")" "$new"
	expect_eq "status epoch" "$(jq -r '.shards[0].epoch' <<<"$st")" 1
	expect_eq "status last failover" "$(jq -r '.shards[0].last_failover.result' <<<"$st")" ok
	"$FL" status -c "$CONF" | grep -q "failover_start n1: proc_exit SIGKILL" ||
		fail "no timeline in status: $("$FL" status -c "$CONF")"
}

test_sigstop_primary() {
	setup_cluster
	fill "$P1" 100
	kill -STOP "$PID_1"
	on_exit "kill -CONT $PID_1"
	ev=$(wait_event "$CLOG" '.kind == "failover_end"') || fail "no failover after SIGSTOP"
	expect_eq reason "$(jq -r 'select(.kind == "failover_start") | .reason' "$CLOG")" proc_hung
	new=$(jq -r .to <<<"$ev")
	kill -CONT "$PID_1"
	wait_linked "$P1" "$(port_of "$new")" || fail "the resumed old primary does not follow $new"
	expect_eq "keys on n1" "$(redis-cli -p "$P1" dbsize)" 100
}

# Checks that every acknowledged value in ACKED is in the list KEY on PORT.
check_no_loss() {
	local port=$1 key=$2 acked=$3 got lost
	got=$T/got.$RANDOM
	redis-cli -p "$port" lrange "$key" 0 -1 | sort -n >"$got"
	lost=$(sort -n "$acked" | comm -23 - "$got" | wc -l)
	expect_eq "acknowledged writes lost ($(wc -l <"$acked") acked)" "$lost" 0
}

test_planned_switchover() {
	BLOCK_MS=30000 setup_cluster
	need_cmd "$PY"
	$PY tests/tools/flwriter.py --sentinel "$CTL_PORT" --service s --key w --rate 1000 \
		--out "$T/acked" >"$T/writer.out" 2>"$T/writer.err" &
	wpid=$!
	on_exit "kill $wpid"
	sleep 1
	"$FL" failover s --to n2 -c "$CONF" >"$T/failover.out" || fail "failover: $(cat "$T/failover.out")"
	grep -q "writes paused on n1" "$T/failover.out" || fail "no pause: $(cat "$T/failover.out")"
	expect_eq primary "$(primary)" "$P2"
	wait_linked "$P1" "$P2" || fail "old primary does not follow n2"
	wait_linked "$P3" "$P2" || fail "n3 does not follow n2"
	sleep 1
	kill -TERM "$wpid"
	wait "$wpid"
	[ "$(jq .acked "$T/writer.out")" -gt 1000 ] || fail "writer: $(cat "$T/writer.out" "$T/writer.err")"
	redis-cli -p "$P2" wait 2 2000 >/dev/null
	check_no_loss "$P2" w "$T/acked"
	# Blocked right after (failover_block_ms), with a reason.
	out=$("$FL" failover s -c "$CONF" 2>&1) && fail "a second switchover within the block window ran"
	grep -q "failover_block_ms" <<<"$out" || fail "no reason: $out"
}

test_sentinel_client_follows() {
	setup_cluster
	need_cmd "$PY"
	$PY tests/tools/flwriter.py --sentinel "$CTL_PORT" --service s --key w --rate 500 \
		--out "$T/acked" >"$T/writer.out" 2>"$T/writer.err" &
	wpid=$!
	on_exit "kill $wpid"
	sleep 1
	before=$(wc -l <"$T/acked")
	kill -KILL "$PID_1"
	ev=$(wait_event "$CLOG" '.kind == "failover_end"') || fail "no failover"
	new=$(jq -r .to <<<"$ev")
	sleep 1.5
	kill -TERM "$wpid"
	wait "$wpid"
	after=$(redis-cli -p "$(port_of "$new")" llen w)
	[ "$after" -gt $((before + 300)) ] || fail "writer did not keep writing: $before then $after; $(cat "$T/writer.out")"
	gap=$(jq .max_gap_ms "$T/writer.out")
	jq -e '.max_gap_ms < 2000' "$T/writer.out" >/dev/null || fail "writes stopped for $gap ms"
	echo "    sentinel client: longest gap without a write ${gap} ms" >&2
}

test_state_file_restart() {
	setup_cluster
	kill -KILL "$PID_1"
	wait_event "$CLOG" '.kind == "failover_end"' >/dev/null || fail "no failover"
	grep -q "^shard s epoch 1 primary n[23]$" "$STATE" || fail "state: $(cat "$STATE")"
	kill -TERM "$CTL_PID"
	wait "$CTL_PID" || true
	t0=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	start_controller "$t0"
	expect_eq "epoch after restart" "$(status_json | jq .shards[0].epoch)" 1
	! has_event ".kind == \"failover_start\" and .ts > \"$t0\"" || fail "a second failover after restart"
	# A damaged state file: a clear error, no start.
	kill -TERM "$CTL_PID"
	wait "$CTL_PID" || true
	sed -i 's/epoch 1/epoch 7/' "$STATE"
	out=$("$FL" controller -c "$CONF" 2>&1) && fail "started with a damaged state file"
	grep -q "failed to load state file $STATE: checksum mismatch" <<<"$out" || fail "error: $out"
}

# resp PAYLOAD: raw bytes to the controller, its answer (connection closed by it or after 1 s).
resp() { printf "$1" | timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$CTL_PORT; cat >&3; timeout 1 cat <&3"; }

test_bad_input() {
	START_AGENTS=0 setup_cluster
	r=$(redis-cli -p "$CTL_PORT" hello flatline 1 n1 wrong)
	grep -q "^AUTH" <<<"$r" || fail "wrong secret: $r"
	r=$(redis-cli -p "$CTL_PORT" hello flatline 1 n9 s3cret)
	grep -q "^NODE" <<<"$r" || fail "unknown node: $r"
	r=$(redis-cli -p "$CTL_PORT" hello flatline 2 n1 s3cret)
	grep -q "^VERSION" <<<"$r" || fail "version: $r"
	has_event '.kind == "agent_rejected" and .reason == "wrong secret"' || fail "rejection not logged"
	r=$(resp '*2\r\n$6\r\nREPORT\r\n$1\r\n1\r\n*1\r\n$4\r\nPING\r\n')
	grep -q "^-ERR REPORT before HELLO" <<<"$r" || fail "report before hello: $r"
	grep -q PONG <<<"$r" && fail "connection not closed after the error: $r"
	r=$(resp '*1\r\n$2000000\r\n')
	grep -q "^-ERR Protocol error: frame larger" <<<"$r" || fail "oversized: $r"
	r=$(resp '*2000\r\n')
	grep -q "^-ERR Protocol error: too many arguments" <<<"$r" || fail "too many args: $r"
	r=$(resp '*1\r\n:5\r\n')
	grep -q "^-ERR Protocol error" <<<"$r" || fail "malformed: $r"
	r=$(redis-cli -p "$CTL_PORT" frobnicate a b)
	grep -q "^ERR unknown command 'frobnicate', with args beginning with: 'a' 'b'" <<<"$r" ||
		fail "unknown command: $r"
	r=$(redis-cli -p "$CTL_PORT" sentinel failover s)
	grep -q "^NOAUTH" <<<"$r" || fail "unauthenticated failover: $r"
	r=$(redis-cli -p "$CTL_PORT" sentinel get-master-addr-by-name nope)
	[ -z "$r" ] || fail "unknown master: $r"
	# A well-behaved agent after all that: accepted, REPORT answered with epoch and primary.
	r=$(printf 'HELLO flatline 1 n2 s3cret\r\nREPORT 1 proc up role slave\r\n' |
		timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$CTL_PORT; cat >&3; timeout 0.5 cat <&3" | tr -d '\r')
	grep -q "^+OK" <<<"$r" && grep -q "^:0" <<<"$r" && grep -q "^n1" <<<"$r" || fail "agent: $r"
	# Sentinel's view.
	redis-cli -p "$CTL_PORT" sentinel masters | grep -q "^s$" || fail "SENTINEL masters"
	expect_eq "replicas listed" "$(redis-cli -p "$CTL_PORT" sentinel replicas s | grep -cx flags)" 2
	redis-cli -p "$CTL_PORT" info | grep -q "master0:name=s,status=ok" || fail "INFO"
}

test_pubsub_switch_master() {
	setup_cluster
	redis-cli -p "$CTL_PORT" subscribe +switch-master >"$T/sub" &
	on_exit "kill $!"
	redis-cli -p "$CTL_PORT" psubscribe 'flatline.*' >"$T/psub" &
	on_exit "kill $!"
	sleep 0.3
	kill -KILL "$PID_1"
	ev=$(wait_event "$CLOG" '.kind == "failover_end"') || fail "no failover"
	new=$(port_of "$(jq -r .to <<<"$ev")")
	sleep 0.3
	grep -qx "s 127.0.0.1 $P1 127.0.0.1 $new" "$T/sub" || fail "+switch-master: $(cat "$T/sub")"
	grep -q '"kind":"promoted"' "$T/psub" || fail "flatline.promoted: $(cat "$T/psub")"
}

TESTS=(test_kill_primary test_sigstop_primary test_planned_switchover test_sentinel_client_follows
	test_state_file_restart test_bad_input test_pubsub_switch_master)
run_tests
