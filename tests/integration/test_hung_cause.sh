#!/usr/bin/env bash
# Hung with a cause from the scheduler: real redis-server, real BPF
# (bpf/sched.bpf.c), a recording controller peer. A busy server is alive, a
# stopped one is hung at stop_grace_ms, the others at hung_after with a cause.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
. tests/lib/agentlib.sh
PY=/usr/bin/python3
N1=h1-$$

# A Lua script that works (calls TIME in a loop) for $1 ms.
LOOP='local s=redis.call("TIME") local t0=s[1]*1000000+s[2] local n=0
repeat local t=redis.call("TIME") n=n+1 until t[1]*1000000+t[2]-t0 >= tonumber(ARGV[1])*1000
return n'

# up PORT [REDIS ARGS]: redis on PORT, the peer, the agent; waits for proc up.
up() {
	local port=$1; shift
	need_root
	need_cmd redis-server redis-cli jq
	start_redis "$port" "$@"
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "$N1=$port"
	start_agent "$N1" -c "$T/c.conf"
	wait_report ".args.proc == \"up\" and .args.pid == \"$REDIS_PID\"" >/dev/null ||
		fail "no proc up report"
}

# A 1 s and a 3 s script: busy, never hung; proc_busy with the kernel's evidence.
test_busy_scripts_not_hung() {
	p=$(free_port); up "$p"
	for ms in 1000 3000; do
		t0=$(date +%s%N)
		n=$(redis-cli -p "$p" eval "$LOOP" 0 "$ms")
		took=$(( ($(date +%s%N) - t0) / 1000000 ))
		[ "$took" -ge "$ms" ] || fail "the $ms ms script returned after $took ms ($n loops)"
	done
	ev=$(wait_event "$LOG" '.kind == "proc_busy" and .cause == "busy" and .by == "kernel"') ||
		fail "no proc_busy from the kernel: $(jq -c 'select(.kind|startswith("proc"))' "$LOG")"
	expect_eq "proc_busy pid" "$(jq -r .pid <<<"$ev")" "$REDIS_PID"
	run=$(jq -r .run_ms <<<"$ev"); win=$(jq -r .window_ms <<<"$ev")
	[ "$win" -gt 0 ] && [ $((run * 10)) -ge "$win" ] || fail "busy with run_ms $run in window_ms $win"
	wait_report '.args.proc == "busy" and .args.cause == "busy" and (.args.run_ms | tonumber) > 0' >/dev/null ||
		fail "no report with proc busy, cause busy"
	wait_event "$LOG" '.kind == "proc_up" and .was == "busy"' >/dev/null || fail "no proc_up after the scripts"
	expect_eq "proc_busy events (one per script)" "$(count_events "$LOG" '.kind == "proc_busy"')" 2
	expect_eq "proc_hung events" "$(count_events "$LOG" '.kind == "proc_hung"')" 0
	expect_eq "hung reports" "$(count_events "$REC" '.args.proc == "hung"')" 0
}

# KEYS * over a few million keys blocks the loop for longer than hung_after.
test_keys_over_millions_not_hung() {
	p=$(free_port); up "$p" --enable-debug-command yes
	redis-cli -p "$p" debug populate 3000000 >/dev/null
	t0=$(date +%s%N)
	n=$(redis-cli -p "$p" keys '*' | wc -l)
	took=$(( ($(date +%s%N) - t0) / 1000000 ))
	expect_eq "keys returned" "$n" 3000000
	[ "$took" -ge 700 ] || fail "KEYS * took $took ms: too short to test against the 500 ms threshold"
	wait_event "$LOG" '.kind == "proc_busy" and .cause == "busy" and .by == "kernel"' >/dev/null ||
		fail "no proc_busy during KEYS * ($took ms)"
	wait_event "$LOG" '.kind == "proc_up" and .was == "busy"' >/dev/null || fail "no proc_up after KEYS *"
	expect_eq "proc_hung events" "$(count_events "$LOG" '.kind == "proc_hung"')" 0
}

# SIGSTOP: hung with cause stopped at stop_grace_ms (50), not at 5 x 100 ms.
test_sigstop_hung_at_stop_grace() {
	p=$(free_port); up "$p"
	t0=$(date +%s%N)
	kill -STOP "$REDIS_PID"
	on_exit "kill -CONT $REDIS_PID"
	ev=$(wait_event "$LOG" '.kind == "proc_hung"') || fail "no proc_hung after SIGSTOP"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	expect_eq "cause" "$(jq -r .cause <<<"$ev")" stopped
	expect_eq "thread_state" "$(jq -r .thread_state <<<"$ev")" stopped
	st=$(jq -r .state_ms <<<"$ev")
	[ "$st" -ge 50 ] || fail "hung after $st ms stopped, want >= stop_grace_ms 50"
	# 50 ms, bounded generously (10x) for a noisy machine.
	[ "$ms" -le 500 ] || fail "proc_hung $ms ms after SIGSTOP, want about 50"
	wait_report '.args.proc == "hung" and .args.cause == "stopped"' >/dev/null ||
		fail "no report with proc hung, cause stopped"
	kill -CONT "$REDIS_PID"
	wait_event "$LOG" '.kind == "proc_up" and .was == "hung"' >/dev/null || fail "no proc_up after SIGCONT"
	expect_eq "proc_hung events" "$(count_events "$LOG" '.kind == "proc_hung"')" 1
}

# The cgroup v2 freezer: stopped too (thread_state frozen).
test_frozen_cgroup_stopped() {
	need_root
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$cg2" ] || skip "no cgroup2 mount"
	p=$(free_port); up "$p"
	cg=$cg2/fl-hung-$$
	mkdir "$cg"
	on_exit "echo 0 > $cg/cgroup.freeze; echo $REDIS_PID > $cg2/cgroup.procs; rmdir $cg"
	echo "$REDIS_PID" >"$cg/cgroup.procs"
	echo 1 >"$cg/cgroup.freeze"
	ev=$(wait_event "$LOG" '.kind == "proc_hung"') || fail "no proc_hung while frozen"
	expect_eq "cause" "$(jq -r .cause <<<"$ev")" stopped
	expect_eq "thread_state" "$(jq -r .thread_state <<<"$ev")" frozen
	echo 0 >"$cg/cgroup.freeze"
	wait_event "$LOG" '.kind == "proc_up" and .was == "hung"' >/dev/null || fail "no proc_up after thawing"
}

# DEBUG SLEEP: the command thread asleep in nanosleep, by its own choice. A
# command at work: busy (alive up to busy_max_ms), never hung.
test_debug_sleep_busy() {
	p=$(free_port); up "$p" --enable-debug-command yes
	t0=$(date +%s%N)
	redis-cli -p "$p" debug sleep 1.5 >"$T/sleep.out"
	took=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ "$took" -ge 1500 ] || fail "DEBUG SLEEP 1.5 returned after $took ms"
	ev=$(wait_event "$LOG" '.kind == "proc_busy"') || fail "no proc_busy during DEBUG SLEEP"
	expect_eq "cause" "$(jq -r .cause <<<"$ev")" busy
	expect_eq "by" "$(jq -r .by <<<"$ev")" kernel
	expect_eq "thread_state" "$(jq -r .thread_state <<<"$ev")" sleeping
	case $(jq -r .syscall <<<"$ev") in
	nanosleep | clock_nanosleep) ;;
	*) fail "proc_busy without the timed sleep it is in: $ev" ;;
	esac
	wait_report '.args.proc == "busy" and .args.cause == "busy"' >/dev/null ||
		fail "no report with proc busy, cause busy"
	wait_event "$LOG" '.kind == "proc_up" and .was == "busy"' >/dev/null || fail "no proc_up after the sleep"
	expect_eq "proc_hung events" "$(count_events "$LOG" '.kind == "proc_hung"')" 0
	expect_eq "hung reports" "$(count_events "$REC" '.args.proc == "hung"')" 0
}

# A sleep that does not end is no progress: past busy_max_ms (1 s here) SCRIPT
# KILL (-NOTBUSY, which it cannot even answer), and hung (cause busy) a hung
# window after it.
test_sleep_past_busy_max_hung() {
	AGENT_EXTRA='busy_max_ms = 1000\n'
	p=$(free_port); up "$p" --enable-debug-command yes
	t0=$(date +%s%N)
	redis-cli -p "$p" debug sleep 4 >/dev/null 2>&1 &
	ev=$(wait_event "$LOG" '.kind == "proc_hung"') || fail "no proc_hung for a 4 s sleep"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	expect_eq "cause" "$(jq -r .cause <<<"$ev")" busy
	# busy_max_ms (1000) + a hung window (500); bounded above by the sleep (4000).
	[ "$ms" -ge 1400 ] && [ "$ms" -lt 4000 ] || fail "proc_hung $ms ms after DEBUG SLEEP 4, want ~1500"
	expect_eq "proc_busy events before" "$(count_events "$LOG" '.kind == "proc_busy"')" 1
	wait_event "$LOG" '.kind == "proc_up" and .was == "hung"' >/dev/null || fail "no proc_up after the sleep"
}

# CLIENT PAUSE: the command thread asleep in its event loop (epoll_wait), not
# in a command, and no answer: unresponsive, hung at hung_after.
test_paused_unresponsive() {
	p=$(free_port); up "$p"
	t0=$(date +%s%N)
	redis-cli -p "$p" client pause 1500 all >/dev/null
	ev=$(wait_event "$LOG" '.kind == "proc_hung"') || fail "no proc_hung during CLIENT PAUSE"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	expect_eq "cause" "$(jq -r .cause <<<"$ev")" unresponsive
	expect_eq "thread_state" "$(jq -r .thread_state <<<"$ev")" sleeping
	expect_eq "syscall" "$(jq -r .syscall <<<"$ev")" null
	[ "$ms" -ge 400 ] || fail "proc_hung after $ms ms, want hung_after x ping_interval_ms (500)"
	wait_report '.args.proc == "hung" and .args.cause == "unresponsive"' >/dev/null ||
		fail "no report with cause unresponsive"
	wait_event "$LOG" '.kind == "proc_up" and .was == "hung"' >/dev/null || fail "no proc_up after the pause"
}

# A working server whose cgroup gets 1 % of a CPU: runnable, not running.
test_cpu_throttled() {
	need_root
	p=$(free_port); up "$p"
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	cg1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/mounts)
	if [ -n "$cg2" ] && grep -qw cpu "$cg2/cgroup.subtree_control" 2>/dev/null; then
		cg=$cg2/fl-thr-$$
		mkdir "$cg"
		on_exit "rmdir $cg"
		on_exit "kill -KILL $REDIS_PID; sleep 0.2"
		echo "1000 100000" >"$cg/cpu.max"
	elif [ -n "$cg1" ]; then
		cg=$cg1/fl-thr-$$
		mkdir "$cg"
		on_exit "rmdir $cg"
		on_exit "kill -KILL $REDIS_PID; sleep 0.2"
		echo 100000 >"$cg/cpu.cfs_period_us"
		echo 1000 >"$cg/cpu.cfs_quota_us"
	else
		skip "no cgroup with the cpu controller (cgroup v2 cpu.max or v1 cpu)"
	fi
	echo "$REDIS_PID" >"$cg/cgroup.procs"
	# Idle, 1 % of a CPU is plenty: it still answers.
	sleep 0.7
	expect_eq "proc_hung while idle in the cgroup" "$(count_events "$LOG" '.kind == "proc_hung"')" 0
	redis-cli -p "$p" eval "$LOOP" 0 60000 >/dev/null 2>&1 &
	ev=$(wait_event "$LOG" '.kind == "proc_hung"') || fail "no proc_hung while throttled"
	expect_eq "cause" "$(jq -r .cause <<<"$ev")" throttled
	thr=$(jq -r .throttled_ms <<<"$ev")
	[ "$thr" != null ] && [ "$thr" -gt 0 ] || fail "no throttling evidence: $ev"
	wait_report '.args.proc == "hung" and .args.cause == "throttled" and (.args.throttled_ms | tonumber) > 0' >/dev/null ||
		fail "no report with cause throttled"
}

# Busy past busy_max_ms: SCRIPT KILL as Sentinel does; a script that has
# written cannot be killed, and the server is hung (cause busy) then.
test_script_past_busy_max() {
	AGENT_EXTRA='busy_max_ms = 1500\n'
	p=$(free_port); up "$p" --busy-reply-threshold 1000
	# Read-only: killed, alive again, never hung.
	redis-cli -p "$p" eval "$LOOP" 0 20000 >"$T/ro.out" 2>&1 &
	ev=$(wait_event "$LOG" '.kind == "script_kill"') || fail "no SCRIPT KILL past busy_max_ms"
	expect_eq "SCRIPT KILL reply" "$(jq -r .reply <<<"$ev")" OK
	wait_event "$LOG" '.kind == "proc_up" and .was == "busy"' >/dev/null || fail "no proc_up after the kill"
	grep -q 'killed by user' "$T/ro.out" || fail "the script was not killed: $(cat "$T/ro.out")"
	expect_eq "proc_hung events" "$(count_events "$LOG" '.kind == "proc_hung"')" 0
	# It has written: UNKILLABLE, hung with cause busy at once.
	redis-cli -p "$p" eval "redis.call('SET','k','v') $LOOP" 0 60000 >/dev/null 2>&1 &
	on_exit "kill -KILL $REDIS_PID"
	ev=$(wait_event "$LOG" '.kind == "proc_hung"') || fail "no proc_hung for an unkillable script"
	expect_eq "cause" "$(jq -r .cause <<<"$ev")" busy
	jq -r .detail <<<"$ev" | grep -q UNKILLABLE || fail "no UNKILLABLE in the detail: $ev"
	wait_report '.args.proc == "hung" and .args.cause == "busy"' >/dev/null || fail "no report with hung, busy"
	# Its -BUSY answers do not make it merely busy again.
	n=$(count_events "$LOG" '.kind == "proc_busy"')
	sleep 0.5
	expect_eq "proc_busy events after hung" "$(count_events "$LOG" '.kind == "proc_busy"')" "$n"
	expect_eq "state after hung" "$(jq -r 'select(.kind | startswith("proc_")) | .kind' "$LOG" | tail -n 1)" proc_hung
}

# The state map is pinned with BTF; the server's threads are in it.
test_state_map_pinned() {
	need_cmd bpftool
	p=$(free_port); up "$p"
	pin=/sys/fs/bpf/flatline/$N1/fl_sched_thr
	[ -e "$pin" ] || fail "no pin $pin"
	dump=$(bpftool -j map dump pinned "$pin") || fail "bpftool map dump failed"
	n=$(jq "[.[] | select(.formatted.value.tgid == $REDIS_PID)] | length" <<<"$dump")
	threads=$(ls /proc/"$REDIS_PID"/task | wc -l)
	expect_eq "threads of the server in the map" "$n" "$threads"
	j=$(jq "[.[] | select(.formatted.key == $REDIS_PID)][0].formatted.value.judged" <<<"$dump")
	expect_eq "main thread judged" "$j" 1
	# A server restarted under the agent: its threads replace the old ones.
	old=$REDIS_PID
	kill -KILL "$old"
	wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $old" >/dev/null || fail "no proc_exit"
	start_redis "$p"
	wait_report ".args.proc == \"up\" and .args.pid == \"$REDIS_PID\"" >/dev/null ||
		fail "no report of the restarted server"
	dump=$(bpftool -j map dump pinned "$pin") || fail "bpftool map dump failed"
	expect_eq "old server's threads in the map" \
		"$(jq "[.[] | select(.formatted.value.tgid == $old)] | length" <<<"$dump")" 0
	expect_eq "new server judged" \
		"$(jq "[.[] | select(.formatted.key == $REDIS_PID)][0].formatted.value.judged" <<<"$dump")" 1
	stop_agent
	[ ! -e "$pin" ] || fail "pin left after SIGTERM"
}

TESTS=(test_busy_scripts_not_hung test_keys_over_millions_not_hung test_sigstop_hung_at_stop_grace
	test_frozen_cgroup_stopped test_debug_sleep_busy test_sleep_past_busy_max_hung
	test_paused_unresponsive test_cpu_throttled
	test_script_past_busy_max test_state_map_pinned)
run_tests
