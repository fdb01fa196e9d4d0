#!/usr/bin/env bash
# Process-death detection in the kernel: real BPF, real processes.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh

# spawn CMD...: a watched victim in the background, in its own session. Sets VPID.
spawn() {
	setsid "$@" </dev/null >/dev/null 2>&1 &
	VPID=$!
	on_exit "kill -KILL $VPID"
}

test_sigkill() {
	need_root
	spawn sleep 600
	start_agent t1 --watch-pid "$VPID"
	kill -KILL "$VPID"
	ev=$(wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $VPID") || fail "no proc_exit for $VPID"
	expect_eq signal "$(jq -r .signal <<<"$ev")" SIGKILL
	expect_eq core_dumped "$(jq -r .core_dumped <<<"$ev")" false
	expect_eq oom "$(jq -r .oom <<<"$ev")" false
	expect_eq comm "$(jq -r .comm <<<"$ev")" sleep
	expect_eq node "$(jq -r .node <<<"$ev")" t1
	jq -r .ts <<<"$ev" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$' ||
		fail "ts is not RFC 3339 UTC with microseconds: $ev"
}

test_segfault_core() {
	need_root
	[ "$(cat /proc/sys/kernel/core_pattern)" = core ] || [ "$(head -c1 /proc/sys/kernel/core_pattern)" != "|" ] ||
		skip "core_pattern pipes to a helper; core flag depends on it"
	mkdir "$T/cores"
	# A shell that dumps core on SIGSEGV, in a directory it may write cores to.
	(cd "$T/cores" && ulimit -c unlimited && exec setsid sh -c 'read x; kill -SEGV $$' </dev/fd/0) < <(sleep 1; echo go) &
	VPID=$!
	on_exit "kill -KILL $VPID"
	start_agent t1 --watch-pid "$VPID"
	ev=$(wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $VPID") || fail "no proc_exit for $VPID"
	expect_eq signal "$(jq -r .signal <<<"$ev")" SIGSEGV
	expect_eq core_dumped "$(jq -r .core_dumped <<<"$ev")" true
}

test_exit_status() {
	need_root
	(exec setsid sh -c 'sleep 1; exit 3') &
	VPID=$!
	on_exit "kill -KILL $VPID"
	start_agent t1 --watch-pid "$VPID"
	ev=$(wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $VPID") || fail "no proc_exit for $VPID"
	expect_eq exit_status "$(jq -r .exit_status <<<"$ev")" 3
	expect_eq signal "$(jq -r .signal <<<"$ev")" null
}

# A process whose main thread exits first is not dead until its last thread is.
test_threads_whole_process() {
	need_root
	need_cmd /usr/bin/python3
	/usr/bin/python3 -c '
import threading, time, os, sys
def worker():
    time.sleep(1.5); os._exit(4)
threading.Thread(target=worker).start()
import ctypes; ctypes.CDLL(None).pthread_exit(None)' &
	VPID=$!
	on_exit "kill -KILL $VPID"
	start_agent t1 --watch-pid "$VPID"
	ev=$(wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $VPID") || fail "no proc_exit for $VPID"
	expect_eq exit_status "$(jq -r .exit_status <<<"$ev")" 4
	expect_eq "exit events" "$(count_events "$LOG" ".kind == \"proc_exit\"")" 1
}

# The memory controller: cgroup v1 here; v2 where it is enabled.
make_mem_cgroup() {
	local limit=$1
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		MEMCG=/sys/fs/cgroup/flatline-oom-$$
		mkdir "$MEMCG"
		on_exit "rmdir $MEMCG"
		echo "$limit" > "$MEMCG/memory.max"
		[ ! -f "$MEMCG/memory.swap.max" ] || echo 0 > "$MEMCG/memory.swap.max"
	elif [ -d /sys/fs/cgroup/memory ]; then
		MEMCG=/sys/fs/cgroup/memory/flatline-oom-$$
		mkdir "$MEMCG"
		on_exit "rmdir $MEMCG"
		echo "$limit" > "$MEMCG/memory.limit_in_bytes"
		[ ! -f "$MEMCG/memory.memsw.limit_in_bytes" ] || echo "$limit" > "$MEMCG/memory.memsw.limit_in_bytes"
	else
		skip "no memory cgroup controller (v1 or v2) available"
	fi
}

test_oom_kill() {
	need_root
	make_mem_cgroup $((64 << 20))
	# tail reading /dev/zero buffers one endless "line": it grows until the OOM killer.
	sh -c "echo \$\$ > $MEMCG/cgroup.procs; read x; exec tail /dev/zero" < <(sleep 1; echo go) &
	VPID=$!
	on_exit "kill -KILL $VPID"
	start_agent t1 --watch-pid "$VPID"
	ev=$(wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $VPID") || fail "no proc_exit for $VPID"
	expect_eq oom "$(jq -r .oom <<<"$ev")" true
	expect_eq signal "$(jq -r .signal <<<"$ev")" SIGKILL
	# Linux 6.8+ mark_victim carries the memory figures; older ones only the pid.
	if bpftool btf dump file /sys/kernel/btf/vmlinux | grep -A4 "STRUCT 'trace_event_raw_mark_victim'" |
		grep -q total_vm; then
		rss=$(jq -r .anon_rss_kb <<<"$ev")
		[ "$rss" != null ] && [ "$rss" -gt 30000 ] || fail "anon_rss_kb missing or too small: $ev"
	fi
	wait_event "$LOG" ".kind == \"oom_kill\" and .pid == $VPID" >/dev/null || fail "no oom_kill event for $VPID"
}

test_redis_sigkill() {
	need_root
	need_cmd redis-server redis-cli
	port=$(free_port)
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
		--dir "$T" >/dev/null 2>&1 &
	VPID=$!
	on_exit "kill -KILL $VPID"
	for _ in $(seq 100); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
	start_agent t1 --watch-pid "$VPID"
	kill -KILL "$VPID"
	ev=$(wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $VPID") || fail "no proc_exit for redis $VPID"
	expect_eq signal "$(jq -r .signal <<<"$ev")" SIGKILL
	expect_eq comm "$(jq -r .comm <<<"$ev")" redis-server
}

# cgroup v2 directory for a test; sets CG.
make_v2_cgroup() {
	local root
	root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$root" ] || skip "no cgroup v2 hierarchy mounted"
	CG=$root/flatline-test-$$
	mkdir "$CG"
	on_exit "cat $CG/cgroup.procs | xargs -r kill -KILL; sleep 0.1; rmdir $CG"
}

test_cgroup_restart() {
	need_root
	make_v2_cgroup
	start_agent t1 --watch-cgroup "$CG"
	# A "service" started in the cgroup, killed, started again, as systemd would.
	for round in 1 2; do
		sh -c "echo \$\$ > $CG/cgroup.procs; exec sleep 600" &
		p=$!
		ev=$(wait_event "$LOG" ".kind == \"proc_start\" and .pid == $p") || fail "round $round: no proc_start for $p"
		expect_eq comm "$(jq -r .comm <<<"$ev")" sleep
		expect_eq cgroup "$(jq -r .cgroup <<<"$ev")" "$CG"
		kill -KILL $p
		ev=$(wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $p") || fail "round $round: no proc_exit for $p"
		expect_eq signal "$(jq -r .signal <<<"$ev")" SIGKILL
	done
	# A nested cgroup below the watched one counts too.
	mkdir "$CG/inner"
	on_exit "rmdir $CG/inner"
	sh -c "echo \$\$ > $CG/inner/cgroup.procs; exec sleep 600" &
	p=$!
	wait_event "$LOG" ".kind == \"proc_start\" and .pid == $p" >/dev/null || fail "no proc_start in nested cgroup"
	kill -KILL $p
	wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $p" >/dev/null || fail "no proc_exit in nested cgroup"
}

test_storm_no_events() {
	need_root
	spawn sleep 600
	start_agent t1 --watch-pid "$VPID"
	# 10,000 unrelated short-lived processes, with the watched death in the middle.
	( for i in $(seq 5000); do /bin/true; done ) &
	s1=$!
	( for i in $(seq 5000); do /bin/true; done ) &
	s2=$!
	sleep 0.5
	kill -KILL "$VPID"
	wait $s1 $s2
	wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $VPID" >/dev/null || fail "watched death missed during the storm"
	sleep 0.2
	expect_eq "events other than start/exit of the watched pid" \
		"$(count_events "$LOG" ".kind != \"agent_start\" and .pid != $VPID")" 0
	expect_eq "drops" "$(count_events "$LOG" ".kind == \"events_dropped\"")" 0
}

test_pins_and_restart() {
	need_root
	need_cmd bpftool
	spawn sleep 600
	start_agent pin1 --watch-pid "$VPID"
	dir=/sys/fs/bpf/flatline/pin1
	on_exit "rm -rf $dir"
	for m in fl_watch_pids fl_watch_cgrps fl_drops; do
		[ -e "$dir/$m" ] || fail "pin $dir/$m missing while the agent runs"
	done
	# BTF: bpftool pretty-prints the watched pid as a key.
	bpftool map dump pinned "$dir/fl_watch_pids" | grep -q "\"key\": $VPID" || fail "pinned map has no BTF key for $VPID"
	bpftool prog show | grep -q 'name fl_proc_exit' || fail "fl_proc_exit not in bpftool prog show"
	stop_agent
	[ ! -e "$dir" ] || fail "$dir left behind after SIGTERM"
	# A SIGKILLed agent leaves its pins; the next one starts cleanly anyway.
	start_agent pin1 --watch-pid "$VPID"
	kill -KILL "$AGENT_PID"
	rc=0; wait "$AGENT_PID" || rc=$?
	expect_eq "SIGKILLed agent's status" "$rc" 137
	[ -e "$dir/fl_watch_pids" ] || fail "expected stale pins after SIGKILL"
	start_agent pin1 --watch-pid "$VPID"
	kill -KILL "$VPID"
	wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $VPID" >/dev/null || fail "second agent missed the death"
	stop_agent
	[ ! -e "$dir" ] || fail "$dir left behind"
}

test_second_agent_refused() {
	need_root
	spawn sleep 600
	start_agent dup1 --watch-pid "$VPID"
	set +e
	"$FL" agent --node dup1 --watch-pid "$VPID" --event-log "$T/x.jsonl" 2>"$T/err"
	rc=$?
	set -e
	[ $rc -ne 0 ] || fail "second agent for the same node started"
	grep -q "another agent or prober (pid $AGENT_PID) is running" "$T/err" || fail "unclear message: $(cat "$T/err")"
	# A clean stop takes its lock file with it (a SIGKILLed one leaves it to the next).
	[ -e /run/flatline/agent-dup1.lock ] || fail "no lock file while the agent runs"
	stop_agent
	[ ! -e /run/flatline/agent-dup1.lock ] || fail "the lock file outlived the agent's clean stop"
}

# Bad input: one readable line and a non-zero status each.
test_bad_input() {
	need_root
	check() { # WANT_RC PATTERN ARGS...
		local want=$1 pat=$2 rc; shift 2
		set +e; "$FL" "$@" >"$T/out" 2>"$T/err"; rc=$?; set -e
		[ $rc -eq "$want" ] || fail "flatline $*: exit $rc, want $want ($(cat "$T/err"))"
		grep -q -- "$pat" "$T/err" || fail "flatline $*: message '$(head -c 300 "$T/err")' lacks '$pat'"
	}
	check 2 "unrecognized option" agent --bogus
	check 2 "not a process id" agent --watch-pid abc
	check 1 "no such process" agent --node b1 --watch-pid 999999999 --event-log "$T/e.jsonl"
	pid_max=$(cat /proc/sys/kernel/pid_max)
	check 1 "no such process" agent --node b1 --watch-pid "$pid_max" --event-log "$T/e.jsonl"
	check 1 "not a cgroup v2 directory" agent --node b1 --watch-cgroup /tmp --event-log "$T/e.jsonl"
	check 1 "failed to open cgroup" agent --node b1 --watch-cgroup /nonexistent --event-log "$T/e.jsonl"
	check 2 "node id" agent --node ../evil --watch-pid $$
	check 1 "failed to open event log" agent --node b1 --watch-pid $$ --event-log /proc/flatline.jsonl
	check 2 "unknown command" bogus
	# Not root: runuser drops to nobody.
	if command -v runuser >/dev/null; then
		cp "$FL" "$T/flatline"; chmod 0755 "$T" "$T/flatline"
		set +e; runuser -u nobody -- "$T/flatline" agent --watch-pid $$ 2>"$T/err"; rc=$?; set -e
		[ $rc -eq 1 ] || fail "non-root agent: exit $rc"
		grep -q "missing capabilities cap_perfmon,cap_bpf" "$T/err" || fail "non-root message: $(cat "$T/err")"
	fi
}

TESTS=(test_sigkill test_segfault_core test_exit_status test_threads_whole_process test_oom_kill
	test_redis_sigkill test_cgroup_restart test_storm_no_events test_pins_and_restart
	test_second_agent_refused test_bad_input)
run_tests
