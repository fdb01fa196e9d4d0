#!/usr/bin/env bash
# The agent with a cluster file: real redis-server, a recording
# controller peer (tests/lib/recpeer.py), real BPF.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
. tests/lib/agentlib.sh
PY=/usr/bin/python3
# Node ids of this run: another run of the tests (or a cluster) may hold n1's lock.
N1=a1-$$
N2=a2-$$

test_reports_replication() {
	need_root
	need_cmd redis-server redis-cli
	p1=$(free_port); start_redis "$p1"
	p2=$(free_port); start_redis "$p2" --replicaof 127.0.0.1 "$p1"
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1" "$N2=$p2"
	start_agent "$N1" -c "$T/c.conf"
	LOG1=$LOG
	start_agent "$N2" -c "$T/c.conf"
	redis-cli -p "$p1" set k v >/dev/null
	replid=$(redis-cli -p "$p1" info replication | sed -n 's/^master_replid:\(.*\)\r$/\1/p')
	[ -n "$replid" ] || fail "no master_replid from the primary"
	wait_event "$REC" ".cmd == \"HELLO\" and .argv[2] == \"$N1\"" >/dev/null || fail "no HELLO from $N1"
	r=$(wait_report ".args.role == \"master\" and .args.master_replid == \"$replid\" and (.args.repl_offset | tonumber) > 0") ||
		fail "no report of the primary with replid and offset"
	r=$(wait_report ".args.role == \"slave\" and .args.master_port == \"$p1\" and .args.master_link_status == \"up\" and .args.master_replid == \"$replid\" and (.args.repl_offset | tonumber) > 0") ||
		fail "no report of the replica following $p1 with link up: $(tail -n 1 "$REC")"
	expect_eq "replica's proc" "$(jq -r .args.proc <<<"$r")" up
	expect_eq "replica's pid" "$(jq -r .args.pid <<<"$r")" "$(redis-cli -p "$p2" info server | sed -n 's/^process_id:\(.*\)\r$/\1/p')"
	# Repointed: the report changes within a heartbeat or two.
	p3=$(free_port); start_redis "$p3"
	redis-cli -p "$p2" replicaof 127.0.0.1 "$p3" >/dev/null
	wait_report ".args.master_port == \"$p3\"" 5 >/dev/null || fail "no report after repointing to $p3"
	wait_event "$LOG" ".kind == \"role_change\" and .master_port == $p3" >/dev/null || fail "no role_change event"
	# Promoted: role master, and a role_change from slave.
	redis-cli -p "$p2" replicaof no one >/dev/null
	wait_event "$LOG" '.kind == "role_change" and .role == "master" and .was == "slave"' >/dev/null || fail "no role_change to master"
	expect_eq "controller_connected events" "$(count_events "$LOG1" '.kind == "controller_connected"')" 1
}

test_sigstop_hung_and_back() {
	need_root
	p1=$(free_port); start_redis "$p1"
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_report '.args.proc == "up"' >/dev/null || fail "no proc up report"
	t0=$(date +%s%N)
	kill -STOP "$REDIS_PID"
	on_exit "kill -CONT $REDIS_PID"
	ev=$(wait_event "$LOG" '.kind == "proc_hung"') || fail "no proc_hung after SIGSTOP"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	# stop_grace_ms (50 by default), bounded generously (10x) for a noisy machine;
	# test_hung_cause.sh has the details.
	[ "$ms" -ge 50 ] && [ "$ms" -le 500 ] || fail "proc_hung after $ms ms, want about 50"
	expect_eq "hung pid" "$(jq -r .pid <<<"$ev")" "$REDIS_PID"
	expect_eq "hung cause" "$(jq -r .cause <<<"$ev")" stopped
	wait_report '.args.proc == "hung"' >/dev/null || fail "no report with proc hung"
	kill -CONT "$REDIS_PID"
	wait_event "$LOG" '.kind == "proc_up" and .was == "hung"' >/dev/null || fail "no proc_up after SIGCONT"
	expect_eq "proc_hung events" "$(count_events "$LOG" '.kind == "proc_hung"')" 1
}

test_short_sleep_and_busy_script_not_hung() {
	need_root
	p1=$(free_port); start_redis "$p1" --enable-debug-command yes --lua-time-limit 100
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_report '.args.proc == "up"' >/dev/null || fail "no proc up report"
	# Shorter than the 500 ms threshold: slow, not hung.
	redis-cli -p "$p1" debug sleep 0.3 >/dev/null
	sleep 0.5
	expect_eq "proc_hung after DEBUG SLEEP 0.3" "$(count_events "$LOG" '.kind == "proc_hung"')" 0
	# A script running for 2 s: -BUSY is alive.
	redis-cli -p "$p1" eval 'while true do end' 0 >/dev/null 2>&1 &
	sleep 2
	redis-cli -p "$p1" script kill >/dev/null
	wait_event "$LOG" '.kind == "proc_busy"' >/dev/null || fail "no proc_busy during the script"
	wait_report '.args.proc == "busy"' >/dev/null || fail "no report with proc busy"
	wait_event "$LOG" '.kind == "proc_up" and .was == "busy"' >/dev/null || fail "no proc_up after the script"
	expect_eq "proc_hung during the script" "$(count_events "$LOG" '.kind == "proc_hung"')" 0
}

test_sigkill_reported_at_once_and_restart_followed() {
	need_root
	p1=$(free_port); start_redis "$p1"
	first=$REDIS_PID
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_report ".args.proc == \"up\" and .args.pid == \"$first\"" >/dev/null || fail "no report with pid $first"
	t0=$($PY -c 'import time; print(time.time())')
	kill -KILL "$first"
	r=$(wait_report '.args.proc == "down"') || fail "no report of the death"
	expect_eq exit "$(jq -r .args.exit <<<"$r")" SIGKILL
	lat=$($PY -c "print(int(($(jq -r .t <<<"$r") - $t0) * 1000))")
	# Milliseconds in practice (bench/detect.sh); far below the 500 ms
	# that missed pings would take. Bounded at 400 ms for a noisy machine.
	[ "$lat" -lt 400 ] || fail "death reached the controller after $lat ms"
	wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $first and .signal == \"SIGKILL\"" >/dev/null || fail "no proc_exit"
	# Restarted on the same port: found, followed, its death seen too.
	start_redis "$p1"
	second=$REDIS_PID
	wait_event "$LOG" ".kind == \"proc_up\" and .pid == $second" >/dev/null || fail "restart not found"
	wait_report ".args.proc == \"up\" and .args.pid == \"$second\"" >/dev/null || fail "no report with the new pid"
	kill -KILL "$second"
	wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $second" >/dev/null || fail "restarted server's death not seen"
}

# A server in its own pid namespace, as in a container: INFO says process_id 1, which
# here is this host's init. The agent (with no capability left: lease_ms = 0) watches
# the real server, not pid 1, says so once, and sees its kill -9 in the kernel.
test_pid_from_another_pid_namespace() {
	need_root
	need_cmd unshare pgrep bpftool
	p1=$(free_port)
	unshare --pid --fork --mount-proc --kill-child "${FL_SERVER:-redis-server}" --port "$p1" \
		--bind 127.0.0.1 --save '' --appendonly no --dir "$T" --logfile "$T/redis-$p1.log" &
	outer=$!
	on_exit "kill -KILL $outer"
	wait_redis "$p1" || fail "redis-server in a new pid namespace did not start"
	expect_eq "process_id it reports" "$(redis-cli -p "$p1" info server | sed -n 's/^process_id:\(.*\)\r$/\1/p')" 1
	real=$(pgrep -P "$outer")
	[ -n "$real" ] && [ "$real" -gt 1 ] || fail "no server process under unshare $outer"
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_report ".args.proc == \"up\" and .args.pid == \"$real\"" >/dev/null ||
		fail "no report with the server's pid here ($real): $(tail -n 1 "$REC")"
	ev=$(wait_event "$LOG" '.kind == "server_pid"') || fail "no server_pid event"
	expect_eq "server_pid pid" "$(jq -r .pid <<<"$ev")" "$real"
	expect_eq "server_pid process_id" "$(jq -r .process_id <<<"$ev")" 1
	jq -r .detail <<<"$ev" | grep -q "own pid namespace" || fail "detail: $ev"
	map=$(bpftool map dump pinned "/sys/fs/bpf/flatline/$N1/fl_watch_pids")
	grep -q "\"key\": $real\b" <<<"$map" || fail "server pid $real not watched: $map"
	! grep -q '"key": 1\b' <<<"$map" || fail "this host's pid 1 is watched: $map"
	# Found again (the INFO server of a reconnect) without a second event.
	redis-cli -p "$p1" client kill type normal >/dev/null
	sleep 0.5
	expect_eq "server_pid events" "$(count_events "$LOG" '.kind == "server_pid"')" 1
	t0=$($PY -c 'import time; print(time.time())')
	kill -KILL "$real"
	r=$(wait_report '.args.proc == "down"') || fail "no report of the death"
	expect_eq exit "$(jq -r .args.exit <<<"$r")" SIGKILL
	lat=$($PY -c "print(int(($(jq -r .t <<<"$r") - $t0) * 1000))")
	# As for a server of this namespace: the kernel's event, not missed PINGs.
	[ "$lat" -lt 400 ] || fail "death reached the controller after $lat ms"
	wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $real and .signal == \"SIGKILL\"" >/dev/null ||
		fail "no proc_exit of $real"
}

# A server of this pid namespace, with the agent holding no capability to read its
# descriptors: its process_id taken as before, watched, and no server_pid event.
test_pid_of_this_namespace_as_before() {
	need_root
	need_cmd bpftool
	p1=$(free_port); start_redis "$p1"
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_report ".args.proc == \"up\" and .args.pid == \"$REDIS_PID\"" >/dev/null || fail "no report with pid $REDIS_PID"
	map=$(bpftool map dump pinned "/sys/fs/bpf/flatline/$N1/fl_watch_pids")
	grep -q "\"key\": $REDIS_PID\b" <<<"$map" || fail "server pid $REDIS_PID not watched: $map"
	expect_eq "server_pid events (a server of this namespace)" "$(count_events "$LOG" '.kind == "server_pid"')" 0
}

test_server_unreachable_at_start() {
	need_root
	p1=$(free_port)
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_report '.args.proc == "down"' >/dev/null || fail "no report of a server that is not running"
	start_redis "$p1"
	wait_report '.args.proc == "up"' >/dev/null || fail "server started later not found"
	wait_event "$LOG" '.kind == "proc_up"' >/dev/null || fail "no proc_up"
}

test_wrong_password_once() {
	need_root
	p1=$(free_port); start_redis "$p1" --requirepass right
	ctl=$(free_port); start_recpeer "$ctl"
	PASSWORD=wrong cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_report '.args.auth_error != null' >/dev/null || fail "no auth_error in the report"
	sleep 1.5
	n=$(grep -c "failed to authenticate" "$T/agent-$N1.err")
	expect_eq "authentication errors logged in 1.5 s" "$n" 1
	wait_report '.args.proc == "up"' >/dev/null || fail "a server refusing our password is still alive"
}

test_controller_rejects_or_misbehaves() {
	need_root
	p1=$(free_port); start_redis "$p1"
	ctl=$(free_port); start_recpeer "$ctl" --reject
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_event "$LOG" '.kind == "controller_rejected"' >/dev/null || fail "no controller_rejected"
	sleep 2
	expect_eq "controller_rejected events" "$(count_events "$LOG" '.kind == "controller_rejected"')" 1
	n=$(grep -c "rejected HELLO" "$T/agent-$N1.err")
	expect_eq "rejections on stderr" "$n" 1
	# Monitoring goes on without a controller.
	kill -KILL "$REDIS_PID"
	wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $REDIS_PID" >/dev/null || fail "no proc_exit while the controller rejects us"
	kill -0 "$AGENT_PID" || fail "agent died"
}

test_garbage_from_controller_and_server() {
	need_root
	p1=$(free_port); start_recpeer "$p1" --garbage # a "server" that answers garbage
	ctl=$(free_port)
	$PY tests/lib/recpeer.py "$ctl" "$T/ctl.jsonl" --garbage &
	on_exit "kill $!"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	wait_event "$LOG" '.kind == "controller_lost"' >/dev/null || fail "no controller_lost on garbage"
	sleep 2
	kill -0 "$AGENT_PID" || fail "agent died on garbage"
	[ "$(wc -l <"$T/ctl.jsonl")" -ge 2 ] || fail "agent did not reconnect to the controller"
	expect_eq "controller_lost events" "$(count_events "$LOG" '.kind == "controller_lost"')" 1
}

test_silent_controller_dropped() {
	need_root
	p1=$(free_port); start_redis "$p1"
	ctl=$(free_port); start_recpeer "$ctl" --silent
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1"
	start_agent "$N1" -c "$T/c.conf"
	ev=$(wait_event "$LOG" '.kind == "controller_lost"') || fail "silent controller not dropped"
	grep -q "stopped answering" <<<"$ev" || fail "unclear reason: $ev"
	wait_event "$REC" '.cmd == "HELLO" and .conn == 2' >/dev/null || fail "no reconnect"
}

test_config_errors() {
	check_conf() { # TEXT EXPECTED
		printf '%b' "$1" >"$T/bad.conf"
		chmod "${MODE:-600}" "$T/bad.conf"
		set +e; "$FL" agent -c "$T/bad.conf" --node n1 2>"$T/err"; rc=$?; set -e
		[ $rc -eq 1 ] || fail "exit $rc for: $1"
		grep -qF -- "$2" "$T/err" || fail "message '$(cat "$T/err")' lacks '$2'"
		[ "$(wc -l <"$T/err")" -eq 1 ] || fail "more than one line: $(cat "$T/err")"
	}
	f=$T/bad.conf
	check_conf '[node "n1"]\naddress = 127.0.0.1\nredis = 127.0.0.1:6379\npriority = high\n' \
		"$f:4: [node \"n1\"] priority: not a number: 'high'"
	check_conf '[agent]\nhung_after = 0\n' "$f:2: [agent] hung_after: 0 is out of range"
	check_conf '[agent]\nping_interval = 100\n' "$f:2: [agent] ping_interval: unknown key"
	check_conf '[controller]\nlisten = nowhere:0\n' "$f:2: [controller] listen: not host:port"
	check_conf '[node "n1"]\naddress = 127.0.0.1\n' "$f:1: [node \"n1\"] redis: missing"
	check_conf '[cluster]\nsecret = 0123456789abcdef\n[node "n2"]\naddress = 127.0.0.1\nredis = h:1\n' "node n1 is not in $f"
	# Secrets as ssh treats keys.
	check_conf '[node "n1"]\naddress = 127.0.0.1\nredis = h:1\n' "$f:1: [cluster] secret: missing"
	check_conf '[cluster]\nsecret = short\n' "$f:2: [cluster] secret: too short (5 bytes)"
	check_conf '[cluster]\nsecret = 0123456789abcdef ;x\n' "a ';' after a space starts a comment"
	MODE=644 check_conf '[cluster]\nsecret = 0123456789abcdef\n' "$f:2: holds a secret and group or others have access to the file (mode 0644)"
	check_conf '[dns]\ntsig_algorithm = hmac-sha384\n' "ldns 1.8.3 cannot sign"
	check_conf 'garbage\n' "$f:1: not a 'key = value' line or a [section] header"
	set +e; "$FL" agent -c "$T/missing.conf" --node n1 2>"$T/err"; rc=$?; set -e
	expect_eq "missing file status" "$rc" 1
	grep -q "failed to open cluster file $T/missing.conf: No such file or directory" "$T/err" || fail "$(cat "$T/err")"
}

# A healthy replica with nothing new reports every replica_heartbeat_ms (500 ms), the
# primary every heartbeat_ms (100 ms), each saying so in the key heartbeat_ms; the
# replica's link going down goes out at once, at the primary's cadence again.
test_quiet_replica_reports() {
	need_root
	need_cmd redis-server redis-cli
	local p1 p2 ctl c1 c2 t0 n1 n2
	p1=$(free_port); start_redis "$p1"
	p2=$(free_port); start_redis "$p2" --replicaof 127.0.0.1 "$p1"
	ctl=$(free_port); start_recpeer "$ctl" --primary "$N1"
	cluster_file "$T/c.conf" "$ctl" "$N1=$p1" "$N2=$p2"
	start_agent "$N1" -c "$T/c.conf"
	start_agent "$N2" -c "$T/c.conf"
	wait_report '.args.role == "master" and .args.heartbeat_ms == "100"' >/dev/null ||
		fail "no primary REPORT with heartbeat_ms 100: $(tail -n 2 "$REC")"
	wait_report '.args.role == "slave" and .args.master_link_status == "up" and .args.heartbeat_ms == "500"' >/dev/null ||
		fail "no quiet replica REPORT with heartbeat_ms 500: $(grep '"slave"' "$REC" | tail -n 1)"
	c1=$(jq -r "select(.cmd == \"HELLO\" and .argv[2] == \"$N1\") | .conn" "$REC" | tail -n 1)
	c2=$(jq -r "select(.cmd == \"HELLO\" and .argv[2] == \"$N2\") | .conn" "$REC" | tail -n 1)
	t0=$(date +%s.%N)
	sleep 3
	n1=$(jq -r --argjson c "$c1" --argjson t "$t0" 'select(.cmd == "REPORT" and .conn == $c and .t > $t and .t < $t + 3)' "$REC" | grep -c '"cmd"')
	n2=$(jq -r --argjson c "$c2" --argjson t "$t0" 'select(.cmd == "REPORT" and .conn == $c and .t > $t and .t < $t + 3)' "$REC" | grep -c '"cmd"')
	[ "$n1" -ge 15 ] || fail "primary: $n1 REPORTs in 3 s (every 100 ms: about 30)"
	[ "$n2" -ge 3 ] && [ "$n2" -le 9 ] || fail "quiet replica: $n2 REPORTs in 3 s (every 500 ms: about 6)"
	# A change goes at once, and the replica is not quiet any more.
	redis-cli -p "$p2" replicaof 127.0.0.1 "$(free_port)" >/dev/null
	wait_report ".conn == $c2 and .args.master_link_status == \"down\" and .args.heartbeat_ms == \"100\"" 5 >/dev/null ||
		fail "no REPORT of the link down at heartbeat_ms 100: $(grep '"slave"' "$REC" | tail -n 1)"
}

TESTS=(test_reports_replication test_quiet_replica_reports test_sigstop_hung_and_back test_short_sleep_and_busy_script_not_hung
	test_sigkill_reported_at_once_and_restart_followed test_server_unreachable_at_start
	test_wrong_password_once test_controller_rejects_or_misbehaves
	test_garbage_from_controller_and_server test_silent_controller_dropped test_config_errors
	test_pid_from_another_pid_namespace test_pid_of_this_namespace_as_before)
run_tests
