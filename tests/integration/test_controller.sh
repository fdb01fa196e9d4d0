#!/usr/bin/env bash
# The controller: real redis-server x3 on loopback, real agents (BPF, root),
# real controller. Failover on kill -9 and SIGSTOP, the old primary demoted, planned
# switchover without losing an acknowledged write, a Sentinel client following,
# state file and bad input.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
PY=/usr/bin/python3

# setup_cluster: three servers (ct1 primary, ct2 ct3 replicas), the cluster file $CONF,
# the controller on $CTL_PORT with its event log $CLOG; agents with START_AGENTS=1.
setup_cluster() {
	need_root
	need_cmd redis-server redis-cli jq
	P1=$(free_port) P2=$(free_port) P3=$(free_port) CTL_PORT=$(free_port)
	while [ "$P2" = "$P1" ] || [ "$P3" = "$P1" ] || [ "$P3" = "$P2" ] ||
		[ "$CTL_PORT" = "$P1" ] || [ "$CTL_PORT" = "$P2" ] || [ "$CTL_PORT" = "$P3" ]; do
		P2=$(free_port) P3=$(free_port) CTL_PORT=$(free_port)
	done
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl STATE=${STATE_PATH:-$T/state}
	cat >"$CONF" <<-EOF
	[cluster]
	name = t
	secret = s3cret-s3cret-s3cret
	[agent]
	lease_ms = 0 ; the write lease has its own tests (test_lease.sh), in namespaces
	ping_interval_ms = 50
	hung_after = 4
	heartbeat_ms = 100
	[controller]
	listen = 127.0.0.1:$CTL_PORT
	node_down_after_ms = 1000
	state_file = $STATE
	event_log = $CLOG
	failover_block_ms = ${BLOCK_MS:-1000}
	[node "ct1"]
	address = 127.0.0.11
	redis = 127.0.0.1:$P1
	[node "ct2"]
	address = 127.0.0.12
	redis = 127.0.0.1:$P2
	priority = ${N2_PRIO:-100}
	[node "ct3"]
	address = 127.0.0.13
	redis = 127.0.0.1:$P3
	[shard "s"]
	nodes = ct1 ct2 ct3
	EOF
	chmod 600 "$CONF" # it holds the secret
	if [ -n "${SERVERS_LATE:-}" ]; then # the controller and agents first, as a boot may
		start_controller
		agents_launch
	fi
	start_node 1 "$P1"
	start_node 2 "$P2" --replicaof 127.0.0.1 "$P1"
	start_node 3 "$P3" --replicaof 127.0.0.1 "$P1"
	wait_linked "$P2" "$P1" && wait_linked "$P3" "$P1" || fail "replicas did not sync"
	if [ -n "${SERVERS_LATE:-}" ]; then
		agents_wait
	else
		start_controller
		[ "${START_AGENTS:-1}" != 1 ] || start_agents
	fi
}

# start_node I PORT [ARGS]: redis-server with a pid file; PID_<I> set.
start_node() {
	local i=$1 port=$2; shift 2
	start_redis "$port" --pidfile "$T/redis-$port.pid" "$@"
	eval "PID_$i=$REDIS_PID"
}

# diag: the servers' replication state, their logs' sync lines and the controller's events.
diag() {
	local p
	for p in "$P1" "$P2" "$P3"; do
		echo "    $p: keys $(timeout 2 redis-cli -p "$p" dbsize) role $(info_field "$p" role)" \
			"master_port $(info_field "$p" master_port) link $(info_field "$p" master_link_status)"
		grep -hE "Connecting to MASTER|MASTER MODE|Full resync|Partial resync|keys loaded|REPLICAOF" \
			"$T/redis-$p.log" | sed 's/^/      /' | tail -n 12
	done
	jq -c 'del(.ts, .node)' "$CLOG" | grep -v agent_connected | sed 's/^/    /' | tail -n 25
} >&2

# keys_eq PORT N: the server has N keys, or fail with diag.
keys_eq() {
	local got
	got=$(redis-cli -p "$1" dbsize)
	[ "$got" = "$2" ] || { diag; fail "keys on $1: got '$got', want '$2'"; }
}

port_of() { case $1 in ct1) echo "$P1" ;; ct2) echo "$P2" ;; ct3) echo "$P3" ;; esac; }
info_field() { timeout 2 redis-cli -p "$1" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }


start_controller() {
	"$FL" controller --allow-root -c "$CONF" -v >>"$T/controller.err" 2>&1 &
	CTL_PID=$!
	on_exit "kill -TERM $CTL_PID; wait $CTL_PID"
	wait_event "$CLOG" ".kind == \"controller_ready\" and (.ts > \"${1:-}\")" >/dev/null || {
		cat "$T/controller.err" >&2
		fail "controller did not start"
	}
}

start_agents() { agents_launch && agents_wait; }
agents_launch() {
	local n
	for n in ct1 ct2 ct3; do
		"$FL" agent -c "$CONF" --node "$n" --event-log "$T/events-$n.jsonl" \
			2>"$T/agent-$n.err" &
		on_exit "kill -TERM $!; wait $!"
	done
}
agents_wait() {
	local n
	for n in ct1 ct2 ct3; do
		wait_event "$CLOG" ".kind == \"agent_connected\" and .instance == \"$n\"" >/dev/null ||
			fail "agent $n did not connect: $(cat "$T/agent-$n.err")"
	done
	# Every agent has reported its server up.
	wait_nodes_healthy "$CONF" 3
}

# has_event JQ-FILTER: the controller logged a matching event (jq 1.6's -e looks at the
# last input line only, so not that).
has_event() { [ -n "$(jq -c "select($1)" "$CLOG" 2>/dev/null)" ]; }

status_json() { "$FL" status -c "$CONF" --json; }
primary() { redis-cli -p "$CTL_PORT" sentinel get-master-addr-by-name s | tail -n 1; }

# fill PORT N: N keys written on the primary, then seen on both replicas (polled: a
# replica just past its full sync may be online only after its first ACK).
fill() {
	local port=$1 n=$2 p end
	seq 1 "$n" | sed 's/.*/SET k& v&/' | redis-cli -p "$port" >/dev/null
	keys_eq "$port" "$n"
	for p in "$P1" "$P2" "$P3"; do
		[ "$p" != "$port" ] || continue
		end=$((SECONDS + FL_WAIT_S))
		until [ "$(redis-cli -p "$p" dbsize)" = "$n" ]; do
			[ $SECONDS -le $end ] || { diag; fail "fill: $p did not get the $n keys"; }
			sleep 0.02
		done
	done
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
	[ "$new" = ct2 ] || [ "$new" = ct3 ] || fail "promoted $new"
	other=$([ "$new" = ct2 ] && echo ct3 || echo ct2)
	expect_eq "primary via Sentinel API" "$(primary)" "$(port_of "$new")"
	expect_eq "new primary role" "$(info_field "$(port_of "$new")" role)" master
	wait_linked "$(port_of "$other")" "$(port_of "$new")" || fail "$other does not follow $new"
	has_event '.kind == "promoted" and .epoch == 1' || fail "epoch not 1"
	# The old primary restarts EMPTY: demoted at once, and nobody syncs from it.
	start_node 1 "$P1"
	wait_event "$CLOG" '.kind == "old_primary_demoted" and .instance == "ct1"' >/dev/null ||
		fail "old primary not demoted"
	wait_linked "$P1" "$(port_of "$new")" || fail "ct1 does not follow $new"
	for p in "$P1" "$P2" "$P3"; do
		keys_eq "$p" 1000
	done
	sleep 1.5 # a replica that was still pointed at ct1 would have reconnected by now
	for p in "$(port_of "$other")" "$(port_of "$new")"; do
		keys_eq "$p" 1000
		expect_eq "$p never followed ct1 again" "$(info_field "$p" master_port | grep -c "^$P1$")" 0
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
	"$FL" status -c "$CONF" | grep -q "failover_start ct1: proc_exit SIGKILL" ||
		fail "no timeline in status: $("$FL" status -c "$CONF")"
}

# The controller and the agents start before the servers (a boot's order, or the
# servers down for a while): primary_unknown is said once, the primary is discovered
# as soon as its servers answer, and its failure is then handled, nothing lost.
test_servers_started_late() {
	SERVERS_LATE=1 setup_cluster
	local ev new
	ev=$(wait_event "$CLOG" '.kind == "primary_discovered"') ||
		fail "no primary discovered after the servers started: $(tail -n 5 "$CLOG")"
	expect_eq "discovered primary" "$(jq -r .instance <<<"$ev")" ct1
	expect_eq "primary_unknown said" "$(jq -c 'select(.kind == "primary_unknown")' "$CLOG" | wc -l)" 1
	expect_eq "primary via Sentinel API" "$(primary)" "$P1"
	fill "$P1" 500
	kill -KILL "$PID_1"
	ev=$(wait_event "$CLOG" '.kind == "failover_end"') || fail "no failover: $(tail -n 5 "$CLOG")"
	new=$(jq -r .to <<<"$ev")
	[ "$new" = ct2 ] || [ "$new" = ct3 ] || fail "promoted $new"
	expect_eq "new primary role" "$(info_field "$(port_of "$new")" role)" master
	keys_eq "$(port_of "$new")" 500
}

test_sigstop_primary() {
	setup_cluster
	fill "$P1" 100
	redis-cli -p "$CTL_PORT" subscribe +sdown >"$T/sub" &
	on_exit "kill $!"
	sleep 0.3
	kill -STOP "$PID_1"
	on_exit "kill -CONT $PID_1"
	ev=$(wait_event "$CLOG" '.kind == "failover_end"') || fail "no failover after SIGSTOP"
	expect_eq reason "$(jq -r 'select(.kind == "failover_start") | .reason' "$CLOG")" "proc_hung stopped"
	expect_eq "node_down cause" "$(jq -r 'select(.kind == "node_down") | .cause' "$CLOG")" stopped
	expect_eq "status cause" "$(status_json | jq -r '.shards[0].nodes[] | select(.id == "ct1") | .cause')" stopped
	"$FL" status -c "$CONF" | grep -q "^  ct1 .* proc_hung:stopped " ||
		fail "no proc_hung:stopped in status: $("$FL" status -c "$CONF")"
	grep -qx "master s 127.0.0.1 $P1 #proc_hung stopped" "$T/sub" || fail "+sdown: $(cat "$T/sub")"
	new=$(jq -r .to <<<"$ev")
	keys_eq "$(port_of "$new")" 100
	kill -CONT "$PID_1"
	wait_linked "$P1" "$(port_of "$new")" || fail "the resumed old primary does not follow $new"
	keys_eq "$(port_of "$new")" 100
	keys_eq "$P1" 100
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
	$PY tests/lib/flwriter.py --sentinel "$CTL_PORT" --service s --key w --rate 1000 \
		--out "$T/acked" >"$T/writer.out" 2>"$T/writer.err" &
	wpid=$!
	on_exit "kill $wpid"
	sleep 1
	"$FL" failover s --to ct2 -c "$CONF" >"$T/failover.out" || fail "failover: $(cat "$T/failover.out")"
	grep -q "writes paused on ct1" "$T/failover.out" || fail "no pause: $(cat "$T/failover.out")"
	expect_eq primary "$(primary)" "$P2"
	wait_linked "$P1" "$P2" || fail "old primary does not follow ct2"
	wait_linked "$P3" "$P2" || fail "ct3 does not follow ct2"
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
	$PY tests/lib/flwriter.py --sentinel "$CTL_PORT" --service s --key w --rate 500 \
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
	# Written by the state thread, off the failover's path: within moments.
	for _ in $(seq 100); do grep -q "^shard s epoch 1 primary ct[23]$" "$STATE" && break; sleep 0.02; done
	grep -q "^shard s epoch 1 primary ct[23]$" "$STATE" || fail "state: $(cat "$STATE")"
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
	out=$("$FL" controller --allow-root -c "$CONF" 2>&1) && fail "started with a damaged state file"
	grep -q "failed to load state file $STATE: checksum mismatch" <<<"$out" || fail "error: $out"
}

# A state file that cannot be written (its directory is missing): the failover is not
# held up, status says so, and the write is retried until it succeeds.
test_state_file_retry() {
	STATE_PATH=$T/later/state setup_cluster
	kill -KILL "$PID_1"
	wait_event "$CLOG" '.kind == "failover_end"' >/dev/null || fail "no failover"
	sleep 0.3
	status_json | jq -e '.controller.state_file_error | test("later/state")' >/dev/null ||
		fail "status does not show the failed write: $(status_json | jq -c .controller)"
	"$FL" status -c "$CONF" | grep -q "STATE FILE NOT WRITTEN" || fail "text status silent"
	mkdir "$T/later"
	for _ in $(seq 150); do grep -q "^shard s epoch 1 primary ct[23]$" "$STATE" 2>/dev/null && break; sleep 0.02; done
	grep -q "^shard s epoch 1 primary ct[23]$" "$STATE" || fail "not written after the directory came"
	[ "$(status_json | jq -r '.controller.state_file_error // "none"')" = none ] ||
		fail "status still shows an error: $(status_json | jq -c .controller)"
}

# resp PAYLOAD: raw bytes to the controller, its answer (connection closed by it or after 1 s).
resp() { printf "$1" | timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$CTL_PORT; cat >&3; timeout 1 cat <&3"; }

test_bad_input() {
	START_AGENTS=0 setup_cluster
	# Protocol version 2 (tests/lib/flauth.py): challenge-response, no secret on the wire.
	r=$($PY tests/lib/flauth.py prove-wrong "127.0.0.1:$CTL_PORT" ct1)
	grep -q "^-AUTH wrong key" <<<"$r" || fail "wrong proof: $r"
	r=$($PY tests/lib/flauth.py hello-only "127.0.0.1:$CTL_PORT" n9 2)
	grep -q "^-NODE" <<<"$r" || fail "unknown node: $r"
	r=$($PY tests/lib/flauth.py hello-only "127.0.0.1:$CTL_PORT" ct1 1)
	grep -q "^-VERSION" <<<"$r" || fail "version 1 (secret in clear) accepted: $r"
	r=$(redis-cli -p "$CTL_PORT" hello flatline 1 ct1 s3cret-s3cret-s3cret)
	grep -q "^VERSION" <<<"$r" || fail "version 1 HELLO: $r"
	has_event '.kind == "agent_rejected" and .reason == "wrong key"' || fail "rejection not logged"
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
	r=$($PY tests/lib/flauth.py hello "127.0.0.1:$CTL_PORT" ct2 s3cret-s3cret-s3cret "REPORT 1 proc up role slave")
	# (then the lease admission grant: term, grant number, the admitted peers)
	grep -q "^+OK flatline" <<<"$r" && grep -qE "^\['\+OK', 0, 'ct1', 'leader', 'active', [0-9]+, [0-9]+, 'ct1 ct3'\]" <<<"$r" || fail "agent: $r"
	# Sentinel's view.
	redis-cli -p "$CTL_PORT" sentinel masters | grep -q "^s$" || fail "SENTINEL masters"
	expect_eq "replicas listed" "$(redis-cli -p "$CTL_PORT" sentinel replicas s | grep -cx flags)" 2
	redis-cli -p "$CTL_PORT" info | grep -q "master0:name=s,status=ok" || fail "INFO"
}

# An agent connection reads with its own event once proved: pipelined
# REPORTs split across writes are answered in order, and an agent silent for 10
# heartbeats (of the longer of heartbeat_ms and replica_heartbeat_ms: 5 s here) is
# closed with agent_timeout, not before: a late agent keeps its link.
test_silent_agent_closed() {
	START_AGENTS=0 setup_cluster
	r=$($PY tests/lib/flauth.py hello-silent "127.0.0.1:$CTL_PORT" ct2 s3cret-s3cret-s3cret \
		"REPORT 1 proc up role slave" "REPORT 2 proc up role slave" "PING") || fail "agent: $r"
	grep -q "^+OK flatline" <<<"$r" || fail "not accepted: $r"
	expect_eq "answers" "$(grep -cE "^\['\+OK', 0, 'ct1', 'leader', 'active', [0-9]+, [0-9]+, '[a-z0-9 ]*'\]" <<<"$r")" 2
	grep -q "^+PONG" <<<"$r" || fail "PING after the REPORTs: $r"
	ms=$(sed -n 's/^closed after \([0-9]*\) ms$/\1/p' <<<"$r")
	[ -n "$ms" ] || fail "not closed: $r"
	[ "$ms" -ge 4500 ] && [ "$ms" -le 9900 ] || fail "closed after $ms ms (10 heartbeats: 5000 ms)"
	has_event '.kind == "agent_timeout" and .instance == "ct2" and .silent_ms == 5000' ||
		fail "no agent_timeout event"
}

# A primary busy on a CPU (a 1.5 s Lua loop, with PINGs every 50 ms x 4) is alive:
# node_busy with the cause, never a failover.
test_busy_primary_no_failover() {
	setup_cluster
	redis-cli -p "$P1" eval 'local s=redis.call("TIME") local t0=s[1]*1000000+s[2]
		repeat local t=redis.call("TIME") until t[1]*1000000+t[2]-t0 >= 1500000 return 1' 0 >/dev/null
	ev=$(wait_event "$CLOG" '.kind == "node_busy" and .instance == "ct1"' 3) ||
		fail "no node_busy for the primary"
	expect_eq "node_busy cause" "$(jq -r .cause <<<"$ev")" busy
	expect_eq "node_busy role" "$(jq -r .role <<<"$ev")" primary
	sleep 0.5
	! has_event '.kind == "failover_start"' || fail "failover of a busy primary"
	! has_event '.kind == "node_down"' || fail "node_down for a busy primary"
	expect_eq primary "$(primary)" "$P1"
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

# The host path's safety: a silent agent whose host is still reachable is an alert,
# never a failover; a replica's death is reported, never promotes anything.
test_agent_lost_and_replica_down() {
	setup_cluster
	apid=$(pgrep -f -- "--node ct1 --event-log $T/events-ct1.jsonl" | head -n 1)
	[ -n "$apid" ] || fail "no agent pid for ct1"
	kill -STOP "$apid"
	on_exit "kill -CONT $apid"
	wait_event "$CLOG" '.kind == "agent_lost" and .instance == "ct1"' 5 >/dev/null ||
		fail "no agent_lost after the heartbeat went stale"
	sleep 0.5
	! has_event '.kind == "failover_start"' || fail "failover on a lost agent"
	has_event '.kind == "node_reachable" or .kind == "node_unreachable"' ||
		wait_event "$CLOG" '.kind == "node_reachable" or .kind == "node_unreachable"' 3 >/dev/null ||
		true # the controller's own PING: logged only when it changes
	expect_eq "health" "$(status_json | jq -r '.shards[0].nodes[0].health')" agent_lost
	kill -CONT "$apid"
	wait_event "$CLOG" '.kind == "agent_back" and .instance == "ct1"' 5 >/dev/null || fail "no agent_back"
	kill -KILL "$PID_3"
	wait_event "$CLOG" '.kind == "node_down" and .instance == "ct3" and .role == "replica"' >/dev/null ||
		fail "replica death not reported"
	sleep 0.3
	! has_event '.kind == "failover_start"' || fail "a replica's death started a failover"
	expect_eq primary "$(primary)" "$P1"
}

# The host path: ct1's agent goes silent and its peers stop getting ICMP replies from
# its address (nftables drops them), its server still running: a host failure.
test_host_down() {
	setup_cluster
	need_cmd nft
	fill "$P1" 100
	apid=$(pgrep -f -- "--node ct1 --event-log $T/events-ct1.jsonl" | head -n 1)
	tbl=fl_ctl_$$
	nft add table inet "$tbl"
	on_exit "nft delete table inet $tbl"
	nft add chain inet "$tbl" out '{ type filter hook output priority 0; }'
	nft add rule inet "$tbl" out ip daddr 127.0.0.11 icmp type echo-request drop
	kill -STOP "$apid"
	on_exit "kill -CONT $apid"
	ev=$(wait_event "$CLOG" '.kind == "failover_end"' 15) || { diag; fail "no failover on host_down"; }
	has_event '.kind == "failover_start" and .reason == "host_down"' || { diag; fail "not the host path"; }
	has_event '.kind == "node_down" and .instance == "ct1" and (.peers_down | length > 0)' ||
		fail "node_down without the peers that saw it"
	new=$(jq -r .to <<<"$ev")
	keys_eq "$(port_of "$new")" 100
	# The host comes back: its server, still a master, is demoted as soon as its agent says so.
	nft delete table inet "$tbl"
	kill -CONT "$apid"
	wait_event "$CLOG" '.kind == "old_primary_demoted" and .instance == "ct1"' >/dev/null ||
		{ diag; fail "ct1 not demoted when its agent came back"; }
	wait_linked "$P1" "$(port_of "$new")" || fail "ct1 does not follow $new"
}

# FLATLINE FAILOVER answers when the switchover is over; commands pipelined behind it
# are answered after it, in order. SENTINEL failover needs AUTH.
test_pipelined_failover() {
	setup_cluster
	r=$(printf 'AUTH s3cret-s3cret-s3cret\r\nFLATLINE FAILOVER s ct3\r\nPING\r\n' |
		timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$CTL_PORT; cat >&3; timeout 5 cat <&3" |
		tr -d '\r' | grep -E '^\+|^-|failover of s')
	expect_eq "answers in order" "$(cut -c1-16 <<<"$r" | tr '\n' '|')" "+OK|failover of s at|+PONG|"
	expect_eq primary "$(primary)" "$P3"
}

# A controller that died between the promotion and the state file: on restart it
# adopts the promoted replica (epoch bumped), repairs the others, never promotes again.
test_restart_mid_failover() {
	setup_cluster
	fill "$P1" 100
	kill -TERM "$CTL_PID"
	wait "$CTL_PID" || true
	kill -KILL "$PID_1"
	redis-cli -p "$P2" replicaof no one >/dev/null
	t0=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	start_controller "$t0"
	has_event ".kind == \"primary_discovered\" and .instance == \"ct2\" and .epoch == 1 and .ts > \"$t0\"" ||
		{ diag; fail "ct2 not adopted"; }
	wait_linked "$P3" "$P2" || { diag; fail "ct3 not repointed to ct2"; }
	sleep 0.5
	! has_event ".kind == \"failover_start\" and .ts > \"$t0\"" || { diag; fail "a second promotion"; }
	keys_eq "$P3" 100
	grep -q "^shard s epoch 1 primary ct2$" "$STATE" || fail "state: $(cat "$STATE")"
	start_node 1 "$P1"
	wait_linked "$P1" "$P2" || { diag; fail "the restarted ct1 does not follow ct2"; }
	keys_eq "$P1" 100
}

TESTS=(test_servers_started_late test_state_file_retry test_restart_mid_failover test_pipelined_failover test_kill_primary test_host_down test_agent_lost_and_replica_down test_sigstop_primary test_planned_switchover test_sentinel_client_follows
	test_state_file_restart test_bad_input test_silent_agent_closed test_pubsub_switch_master test_busy_primary_no_failover)
run_tests
