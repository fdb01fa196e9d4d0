#!/usr/bin/env bash
# Client libraries nobody here wrote, with their default options, following the shard
# through the controller's Sentinel API: ioredis (npm, the version pinned in
# tests/node/package.json, installed by scripts/install-deps.sh) and redis-py (Debian's
# python3-redis). Each test brings up a cluster (tests/lib/cluster.sh), starts four
# applications (tests/node/app.js, tests/lib/clientapp.py, each a writer — RPUSH at
# 200/s through master_for / the default role — and a reader of the replicas — LLEN
# through slave_for / role "slave"; one command at a time), drives one change of
# primary and checks that every one now talks to the right server and how many errors
# reached it, and when.
#
# A planned switchover is the case that strands a client that is never told: the old
# primary stays up as a replica, so a connection to it answers READONLY for ever.
# flatline, as Sentinel, kills the normal and pub/sub clients of every server it
# reconfigures (in the same MULTI as REPLICAOF), and the libraries reconnect through
# the Sentinel API; a client asking the API while the shard is between two primaries
# is answered once it has the new one (at most 1 s later), so redis-py never sees
# MasterNotFoundError.
#
# test_clients_vs_sentinel runs the same applications through the same two faults
# against three real redis-sentinel (Debian's) on the same kind of cluster and prints
# the error counts side by side (docs/sentinel.md).
# test_clients_ha_discovery: HA mode, every controller discovered (SENTINEL SENTINELS,
# ioredis's updateSentinels), runtime settings in etcd. test_runtime_per_shard:
# SENTINEL SET per master, kept over a restart. test_hooks_async_timeout_retry:
# Sentinel's scripts' timeout and retries, the loop never blocked.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

PY=/usr/bin/python3
NODE_DIR=$PWD/tests/node
RATE=200

need_clients() {
	need_root
	need_cmd ip nsenter nft redis-server redis-cli named tsig-keygen dig jq setsid node "$PY"
	[ -d "$NODE_DIR/node_modules/ioredis" ] ||
		skip "ioredis not installed in $NODE_DIR (scripts/install-deps.sh)"
	"$PY" -c 'import redis.sentinel' 2>/dev/null || skip "no python3-redis"
}

cluster() {
	need_clients
	export FL_NODE_PREFIX=c${BASHPID}n
	# Sentinel's scripts: each call's arguments, a line in $T/hook.out.
	printf '#!/bin/sh\necho "$@" >>%s/hook.out\n' "$T" >"$T/hook.sh"
	chmod +x "$T/hook.sh"
	export FL_CTL_CONF="notification_script = $T/hook.sh
client_reconfig_script = $T/hook.sh"
	CL_KEEP=1
	cl_init "$T/cl" "flc$BASHPID"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	OLD=1
	local s="$CL_CTL_IP:$CL_CTL_PORT"
	cl_spawn events "$CL_NS_CTL" "$PY" "$PWD/tests/lib/sentinel_events.py" "$CL_CTL_IP" "$CL_CTL_PORT" "$CL_DIR/events.txt"
	cl_spawn ioredis "$CL_NS_CTL" node "$NODE_DIR/app.js" "$s" "$CL_SHARD" wio "$RATE" "$CL_DIR/ioredis.out"
	start_apps "$s"
}
# start_apps SENTINELS: the two writers and the two readers, each 100 commands in.
start_apps() {
	local s=$1 a
	cl_spawn ioredis "$CL_NS_CTL" node "$NODE_DIR/app.js" "$s" "$CL_SHARD" wio "$RATE" "$CL_DIR/ioredis.out"
	cl_spawn redispy "$CL_NS_CTL" "$PY" "$PWD/tests/lib/clientapp.py" "$s" "$CL_SHARD" wpy "$RATE" "$CL_DIR/redispy.out"
	cl_spawn ioredis_r "$CL_NS_CTL" node "$NODE_DIR/app.js" "$s" "$CL_SHARD" wio "$RATE" "$CL_DIR/ioredis_r.out" replica
	cl_spawn redispy_r "$CL_NS_CTL" "$PY" "$PWD/tests/lib/clientapp.py" "$s" "$CL_SHARD" wpy "$RATE" "$CL_DIR/redispy_r.out" replica
	for a in ioredis redispy ioredis_r redispy_r; do
		cl_until 15 acked_over "$a" 100 || fail "$a did nothing: $(tail -n 3 "$CL_DIR/log/$a.out" "$CL_DIR/$a.out")"
	done
}
APPS=(ioredis redispy ioredis_r redispy_r)
count_lines() { # KIND FILE: lines starting with KIND (0 when none or no file)
	awk -v k="$1" '$1 == k { n++ } END { print n + 0 }' "$2" 2>/dev/null || echo 0
}
acked_over() { [ "$(count_lines A "$CL_DIR/$1.out")" -gt "$2" ]; }

ctl_ev() { cl_has_event "$CL_CLOG" "$1"; }

# The wall time (ns) of the last controller event of KIND.
ev_ns() { date -d "$(jq -r "select(.kind == \"$1\") | .ts" "$CL_CLOG" | tail -n 1)" +%s%N; }

# moved APP [window]: after the failover, APP has had 100 more commands answered, by
# the new primary (a writer) or by a replica of it (a reader: *_r); no error reached
# it — or, with "window", one at most (each application has one connection and one
# command at a time), a lost connection (ConnectionError: what redis-py's default,
# no retry, raises for a command in flight when its server dies or drops it), issued
# after the fault (T_FAULT_NS) and answered before the controller's failover_end.
moved() {
	local app=$1 window=${2:-} n addr errs late end ip
	n=$(count_lines A "$CL_DIR/$app.out")
	cl_until 10 acked_over "$app" $((n + 100)) ||
		fail "$app stopped: $(tail -n 3 "$CL_DIR/$app.out")"
	addr=$(grep '^A ' "$CL_DIR/$app.out" | tail -n 1 | awk '{ print $4 }')
	ip=${addr%:*}
	if [[ $app == *_r ]]; then
		[ "$ip" != "$(cl_ip "$NEW")" ] && [ "$(cl_role "$(cl_idx_of_ip "$ip")")" = slave ] ||
			fail "$app reads from $addr, not from a replica of $(cl_ip "$NEW")"
	else
		[ "$ip" = "$(cl_ip "$NEW")" ] || fail "$app writes to $addr, not to the new primary $(cl_ip "$NEW")"
	fi
	errs=$(count_lines E "$CL_DIR/$app.out")
	if [ -z "$window" ] && [ "$errs" != 0 ]; then
		fail "$errs errors reached $app: $(grep '^E ' "$CL_DIR/$app.out" | head -n 3)"
	fi
	[ "$errs" -le 1 ] || fail "$errs errors reached $app (one at most): $(grep '^E ' "$CL_DIR/$app.out" | head -n 5)"
	end=$(ev_ns failover_end)
	late=$(awk -v from="$T_FAULT_NS" -v end="$end" '$1 == "E" && ($3 < from || $3 > end + 50000000 ||
		$0 !~ /ConnectionError|Connection closed|Error while reading|Connection reset/)' "$CL_DIR/$app.out")
	[ -z "$late" ] || fail "an error reached $app outside the failover or not a lost connection (failover_end $end): $(head -n 3 <<<"$late")"
	echo "    $app: $(count_lines A "$CL_DIR/$app.out") commands answered, $errs errors, now on $addr" >&2
	record_fig "$app $errs"
}
record_fig() { FIGS="${FIGS:+$FIGS, }$*"; }

new_primary() {
	cl_until 10 ctl_ev '.kind == "failover_end"' || fail "no failover_end: $(tail -n 5 "$CL_CLOG")"
	NEW=$(cl_masters)
	[ "$(grep -c . <<<"$NEW")" = 1 ] && [ "$NEW" != "$OLD" ] || fail "primaries now: $(tr '\n' ' ' <<<"$NEW")"
}

# events_in_order CHANNEL-OR-"CHANNEL PAYLOAD-REGEX"...: each appears in the recorded
# Sentinel event stream, after the one before it (Sentinel's order).
events_in_order() {
	local from=0 e line
	for e in "$@"; do
		line=$(awk -v from="$from" -v e="$e" 'BEGIN { sub(/^[+]/, "[+]", e); re = "^" e "( |$)" }
			NR > from && $0 ~ re { print NR; exit }' "$CL_DIR/events.txt")
		[ -n "$line" ] || fail "no '$e' after line $from of the event stream: $(cat "$CL_DIR/events.txt")"
		from=$line
	done
}

# The replica addresses as Sentinel words them.
slave_of() { # IDX MASTER-IDX
	echo "slave $(cl_ip "$1"):6379 $(cl_ip "$1") 6379 @ $CL_SHARD $(cl_ip "$2") 6379"
}
master_at() { echo "master $CL_SHARD $(cl_ip "$1") 6379"; }

# The stream of a failover from OLD to NEW, the third node R: Sentinel's kinds, payloads
# and order (sentinel.c: sentinelStartFailover ... sentinelFailoverSwitchToPromotedSlave),
# but for +switch-master, published at the promotion (clients learn the new primary
# then, not after the repoints), once.
failover_stream() { # OLD NEW R [crash]
	local o=$1 n=$2 r=$3 crash=${4:-}
	local head=() tail=()
	[ -z "$crash" ] || head=("+sdown $(master_at "$o")" "+odown $(master_at "$o") #quorum 1/1")
	[ -z "$crash" ] || tail=("-odown $(master_at "$o")")
	cl_until 10 grep -q '^+switch-master ' "$CL_DIR/events.txt" || fail "no +switch-master: $(cat "$CL_DIR/events.txt")"
	events_in_order "${head[@]}" "+new-epoch [0-9]+" "+try-failover $(master_at "$o")" \
		"+elected-leader $(master_at "$o")" "+failover-state-select-slave $(master_at "$o")" \
		"+selected-slave $(slave_of "$n" "$o")" \
		"+failover-state-send-slaveof-noone $(slave_of "$n" "$o")" \
		"+failover-state-wait-promotion $(slave_of "$n" "$o")" \
		"+promoted-slave $(slave_of "$n" "$o")" "+failover-state-reconf-slaves $(master_at "$o")" \
		"+switch-master $CL_SHARD $(cl_ip "$o") 6379 $(cl_ip "$n") 6379" \
		"+slave-reconf-sent $(slave_of "$r" "$o")" "+slave-reconf-inprog $(slave_of "$r" "$o")" \
		"+slave-reconf-done $(slave_of "$r" "$o")" "${tail[@]}" \
		"+failover-end $(master_at "$o")" \
		"+slave $(slave_of "$r" "$n")"
	[ "$(grep -c '^+switch-master ' "$CL_DIR/events.txt")" = 1 ] ||
		fail "+switch-master published more than once: $(cat "$CL_DIR/events.txt")"
}

test_clients_sigkill() {
	cluster
	T_FAULT_NS=$(cl_now_ns)
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	new_primary
	moved ioredis
	moved redispy window
	moved ioredis_r window
	moved redispy_r window
	echo "    errors (kill -9): $FIGS" | tee "$T/figures" >&2
	failover_stream 1 "$NEW" $((5 - NEW)) crash
	events_in_order "+switch-master" "+sdown $(slave_of 1 "$NEW")"
	# The scripts ran, with Sentinel's arguments.
	cl_until 10 grep -q "^$CL_SHARD leader start $(cl_ip 1) 6379 $(cl_ip "$NEW") 6379\$" "$T/hook.out" ||
		fail "client_reconfig_script not run as Sentinel runs it: $(cat "$T/hook.out" 2>&1)"
	grep -q "^+switch-master $CL_SHARD $(cl_ip 1) 6379 $(cl_ip "$NEW") 6379\$" "$T/hook.out" &&
		grep -q "^+odown master $CL_SHARD $(cl_ip 1) 6379 #quorum 1/1\$" "$T/hook.out" ||
		fail "notification_script not run as Sentinel runs it: $(cat "$T/hook.out")"
	cl_redis_start 1 # back, empty: converted
	cl_until 10 cl_linked 1 "$NEW" || fail "the old primary did not come back as a replica"
	cl_until 10 grep -q '^+convert-to-slave ' "$CL_DIR/events.txt" || fail "no +convert-to-slave"
	events_in_order "+switch-master" "-sdown $(slave_of 1 "$NEW")"
	events_in_order "+switch-master" "-role-change $(slave_of 1 "$NEW") new reported role is master" \
		"+convert-to-slave $(slave_of 1 "$NEW")"
}

test_clients_switchover() {
	cluster
	T_FAULT_NS=$(cl_now_ns)
	cl_ctl "$FL" failover "$CL_SHARD" --to "$(cl_node 2)" -c "$CL_CONF" >"$T/failover.out" 2>&1 ||
		fail "flatline failover: $(cat "$T/failover.out")"
	new_primary
	[ "$NEW" = 2 ] || fail "primary is $(cl_node "$NEW"), asked for $(cl_node 2)"
	cl_until 10 cl_linked 1 2 || fail "the old primary does not follow the new one: $(cl_role 1)"
	moved ioredis
	moved redispy window
	moved ioredis_r window
	moved redispy_r window
	echo "    errors (planned switchover): $FIGS" | tee "$T/figures" >&2
	failover_stream 1 2 3
	events_in_order "+switch-master" "+slave $(slave_of 1 2)" \
		"-role-change $(slave_of 1 2) new reported role is master" "+convert-to-slave $(slave_of 1 2)"
	! grep -q '^[+-]odown\|^+sdown' "$CL_DIR/events.txt" || fail "a planned switchover with sdown/odown: $(cat "$CL_DIR/events.txt")"
}

ctl_cli() { cl_ctl timeout 5 redis-cli -h "$CL_CTL_IP" -p "$CL_CTL_PORT" "$@"; }

# What a client library and an operator ask beyond the failover: the identity
# (runid, a myid that survives a restart, replica-announced, HELLO, INFO sections,
# CLIENT and COMMAND through redis-py's own methods) and runtime configuration
# (SENTINEL SET kept across a restart, shown by flatline status).
test_identity_and_runtime_config() {
	local myid runid out
	cluster
	myid=$(ctl_cli sentinel myid)
	runid=$(cl_redis 1 info server | tr -d '\r' | sed -n 's/^run_id://p')
	[ "$(ctl_cli sentinel master "$CL_SHARD" | sed -n '/^runid$/{n;p}')" = "$runid" ] ||
		fail "runid is not the server's ($runid): $(ctl_cli sentinel master "$CL_SHARD" | head -8 | tr '\n' ' ')"
	ctl_cli sentinel replicas "$CL_SHARD" | grep -qx replica-announced || fail "no replica-announced"
	out=$(ctl_cli hello 2 | tr '\n' ' ')
	[[ $out == "server redis version "*" proto 2 id "*" mode sentinel modules "* ]] || fail "HELLO: $out"
	out=$(ctl_cli info sentinel | tr -d '\r')
	grep -q '^# Sentinel' <<<"$out" && ! grep -q '^# Server' <<<"$out" || fail "INFO sentinel: $out"
	cl_ctl "$PY" - "$CL_CTL_IP" "$CL_CTL_PORT" <<-'PYEOF' || fail "redis-py's client and command methods failed"
		import sys, redis
		r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), decode_responses=True)
		i = r.client_id()
		assert r.client_setname("app") and r.client_getname() == "app"
		assert r.client_info()["id"] == i and r.client_info()["name"] == "app"
		assert any(c["id"] == str(i) for c in r.client_list())
		assert r.command_count() > 10
	PYEOF
	# RESP3 after HELLO 3: a map for SENTINEL MASTER, push messages for pub/sub.
	cl_ctl "$PY" - "$CL_CTL_IP" "$CL_CTL_PORT" "$CL_SHARD" <<-'PYEOF' || fail "RESP3 replies"
		import socket, sys, time
		s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
		def cmd(*a):
		    s.sendall(("*%d\r\n" % len(a) + "".join("$%d\r\n%s\r\n" % (len(x), x) for x in a)).encode())
		def read():
		    time.sleep(0.2)
		    return s.recv(65536).decode()
		cmd("HELLO", "3"); r = read(); assert r.startswith("%6\r\n") and "proto\r\n:3" in r, r
		cmd("SENTINEL", "MASTER", sys.argv[3]); r = read(); assert r.startswith("%20\r\n"), r[:40]
		cmd("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nosuch"); r = read(); assert r == "_\r\n", r
		cmd("SUBSCRIBE", "+switch-master"); r = read(); assert r.startswith(">3\r\n"), r
	PYEOF
	# Runtime configuration: AUTH first, kept in <state_file>.runtime, over a restart.
	out=$(ctl_cli sentinel set "$CL_SHARD" down-after-milliseconds 4321)
	[[ $out == NOAUTH* ]] || fail "SENTINEL SET without AUTH: $out"
	out=$(ctl_cli -a "$CL_SECRET" --no-auth-warning sentinel set "$CL_SHARD" down-after-milliseconds 4321)
	[ "$out" = OK ] || fail "SENTINEL SET: $out"
	cl_stop controller
	cl_controller_start || fail "controller did not restart"
	[ "$(ctl_cli sentinel myid)" = "$myid" ] || fail "myid changed over a restart"
	[ "$(ctl_cli sentinel master "$CL_SHARD" | sed -n '/^down-after-milliseconds$/{n;p}')" = 4321 ] ||
		fail "down-after-milliseconds not kept: $(ctl_cli sentinel master "$CL_SHARD" | tr '\n' ' ')"
	cl_ctl "$FL" status -c "$CL_CONF" | grep -q 'set at runtime.*down-after-milliseconds=4321' ||
		fail "flatline status does not show it: $(cl_ctl "$FL" status -c "$CL_CONF" | tail -n 3)"
}

# runs FILE ARGS-REGEX: how many runs of a script FILE records with those arguments.
runs() { awk -v re="$2" '{ $1 = ""; $2 = ""; sub(/^  /, "") } $0 ~ re { n++ } END { print n + 0 }' "$1" 2>/dev/null; }
runs_ge() { [ "$(runs "$1" "$2")" -ge "$3" ]; }
# run_gaps_ok FILE ARGS-REGEX MIN_MS MAX_MS: every run after the first started MIN..MAX ms
# after the one before it.
run_gaps_ok() {
	awk -v re="$2" -v lo="$3" -v hi="$4" '{ t = $1; $1 = ""; $2 = ""; sub(/^  /, "") }
		$0 ~ re { if (last && ((t - last) / 1e6 < lo || (t - last) / 1e6 > hi)) bad = bad " " (t - last) / 1e6; last = t }
		END { if (bad) { print "gaps (ms):" bad; exit 1 } }' "$1"
}
fo_elapsed() { jq -r 'select(.kind == "failover_end") | .elapsed_ms' "$CL_CLOG" | sed -n "$1p"; }

# Sentinel's scripts as Sentinel runs them (sentinel.c, sentinelRunPendingScripts):
# asynchronously, killed at script-max-runtime, run again after script-retry-delay when
# they exit 1 or are killed, 10 runs at most; exit 2 is final. Set here to 1000 and 100
# ms with SENTINEL DEBUG, as Sentinel's own tests do. While client_reconfig_script hangs
# (each run killed at the timeout), a second failover takes as long as the first.
test_hooks_async_timeout_retry() {
	local out t0 el1 el2 a12 a23 pid
	need_root
	need_cmd ip nsenter nft redis-server redis-cli named tsig-keygen dig jq setsid
	export FL_NODE_PREFIX=k${BASHPID}n
	cat >"$T/notify.sh" <<-EOF
		#!/bin/sh
		echo "\$(date +%s%N) \$\$ \$*" >>$T/notify.out
		case "\$1" in
		+switch-master) exit 1 ;;
		+failover-end) exit 2 ;;
		esac
		exit 0
	EOF
	cat >"$T/reconf.sh" <<-EOF
		#!/bin/sh
		echo "\$(date +%s%N) \$\$ \$*" >>$T/reconf.out
		exec sleep 600
	EOF
	chmod +x "$T/notify.sh" "$T/reconf.sh"
	export FL_CTL_CONF="notification_script = $T/notify.sh
client_reconfig_script = $T/reconf.sh
failover_block_ms = 0"
	CL_KEEP=1
	cl_init "$T/cl" "flk$BASHPID"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	out=$(ctl_cli -a "$CL_SECRET" --no-auth-warning sentinel debug script-max-runtime 1000 script-retry-delay 100)
	[ "$out" = OK ] || fail "SENTINEL DEBUG script-max-runtime: $out"
	out=$(ctl_cli sentinel debug | tr '\n' ' ')
	[[ $out == *"script-max-runtime 1000 script-retry-delay 100"* ]] || fail "SENTINEL DEBUG: $out"
	a12="$CL_SHARD leader start $(cl_ip 1) 6379 $(cl_ip 2) 6379\$"
	a23="$CL_SHARD leader start $(cl_ip 2) 6379 $(cl_ip 3) 6379\$"
	cl_ctl "$FL" failover "$CL_SHARD" --to "$(cl_node 2)" -c "$CL_CONF" >"$T/fo1.out" 2>&1 ||
		fail "failover 1: $(cat "$T/fo1.out")"
	cl_until 5 grep -q "$a12" "$T/reconf.out" || fail "client_reconfig_script not run: $(cat "$T/reconf.out" 2>&1)"
	# It hangs: running, not finished, and the loop goes on.
	sleep 0.3
	out=$(ctl_cli sentinel pending-scripts | tr '\n' ' ')
	[[ $out == *"$T/reconf.sh"*"running"* ]] || fail "PENDING-SCRIPTS does not show the hanging script: $out"
	t0=$(cl_now_ns)
	out=$(ctl_cli ping)
	[ "$out" = PONG ] && [ $(($(cl_now_ns) - t0)) -lt 500000000 ] || fail "the controller answers slowly while a script hangs: $out"
	cl_ctl "$FL" failover "$CL_SHARD" --to "$(cl_node 3)" -c "$CL_CONF" >"$T/fo2.out" 2>&1 ||
		fail "failover 2 while a script hangs: $(cat "$T/fo2.out")"
	el1=$(fo_elapsed 1)
	el2=$(fo_elapsed 2)
	echo "    failover took $el1 ms, then $el2 ms while client_reconfig_script hung" >&2
	[ -n "$el2" ] && [ "$el2" -le $((el1 * 10 + 100)) ] || fail "failover while a script hangs: $el2 ms (before: $el1 ms)"
	# Exit 1: run 10 times, 100 ms apart (+ the 100 ms tick); exit 2 once; exit 0 once.
	cl_until 10 runs_ge "$T/notify.out" "^[+]switch-master $CL_SHARD $(cl_ip 1) " 10 ||
		fail "+switch-master (exit 1) not retried: $(runs "$T/notify.out" "^[+]switch-master")"
	# Killed at 1000 ms (a signal: run again), 10 runs at most: about 11 s.
	cl_until 25 runs_ge "$T/reconf.out" "$a23" 10 ||
		fail "client_reconfig_script (hangs) ran $(runs "$T/reconf.out" "$a23") times"
	sleep 2.5 # an 11th run would have started
	for out in "$a12" "$a23"; do
		[ "$(runs "$T/reconf.out" "$out")" = 10 ] || fail "client_reconfig_script ($out) ran $(runs "$T/reconf.out" "$out") times, not 10"
		run_gaps_ok "$T/reconf.out" "$out" 1000 2500 || fail "client_reconfig_script not killed at 1000 ms: $(run_gaps_ok "$T/reconf.out" "$out")"
	done
	for out in 1 2; do
		[ "$(runs "$T/notify.out" "^[+]switch-master $CL_SHARD $(cl_ip "$out") ")" = 10 ] ||
			fail "+switch-master (exit 1) ran $(runs "$T/notify.out" "^[+]switch-master $CL_SHARD $(cl_ip "$out") ") times, not 10"
		[ "$(runs "$T/notify.out" "^[+]failover-end master $CL_SHARD $(cl_ip "$out") ")" = 1 ] ||
			fail "+failover-end (exit 2) ran $(runs "$T/notify.out" "^[+]failover-end master $CL_SHARD $(cl_ip "$out") ") times, not once"
		[ "$(runs "$T/notify.out" "^[+]try-failover master $CL_SHARD $(cl_ip "$out") ")" = 1 ] ||
			fail "+try-failover (exit 0) ran more or less than once: $(cat "$T/notify.out")"
	done
	run_gaps_ok "$T/notify.out" "^[+]switch-master $CL_SHARD $(cl_ip 1) " 100 1000 ||
		fail "+switch-master retries not script-retry-delay apart: $(run_gaps_ok "$T/notify.out" "^[+]switch-master $CL_SHARD $(cl_ip 1) ")"
	# Nothing left behind: every run of the hanging script was killed.
	for pid in $(awk '{ print $2 }' "$T/reconf.out"); do
		! cl_running "$pid" || fail "a client_reconfig_script run ($pid) is still running"
	done
	cl_has_event "$CL_CLOG" '.kind == "script_failed" and (.reason | test("signal 9")) and .retries == 9' ||
		fail "no script_failed after the 10th killed run: $(grep script_ "$CL_CLOG" | tail -n 3)"
	cl_has_event "$CL_CLOG" '.kind == "script_failed" and .reason == "exit code 2" and .retries == 0' ||
		fail "no script_failed for exit code 2 at once"
	[ "$(ctl_cli sentinel pending-scripts)" = "" ] || fail "scripts still pending: $(ctl_cli sentinel pending-scripts | tr '\n' ' ')"
}

# ---- the same applications and faults against real redis-sentinel ----

rs_cli() { cl_ctl timeout 5 redis-cli -h "$CL_CTL_IP" -p "$1" "${@:2}"; }
rs_ready() {
	local p
	for p in 26380 26381 26382; do
		[ "$(rs_cli "$p" sentinel master "$CL_SHARD" 2>/dev/null | sed -n '/^num-other-sentinels$/{n;p}')" = 2 ] &&
			[ "$(rs_cli "$p" sentinel master "$CL_SHARD" 2>/dev/null | sed -n '/^num-slaves$/{n;p}')" = 2 ] || return 1
	done
}
rs_primary() { rs_cli 26380 sentinel get-master-addr-by-name "$CL_SHARD" 2>/dev/null | head -n 1; }
rs_moved_from() { local ip; ip=$(rs_primary); [ -n "$ip" ] && [ "$ip" != "$(cl_ip "$1")" ]; }
# errs_between APP FROM_NS TO_NS: errors that reached APP in [FROM, TO).
errs_between() { awk -v a="$2" -v b="$3" '$1 == "E" && $3 >= a && $3 < b { n++ } END { print n + 0 }' "$CL_DIR/$1.out"; }
# settled APP: 100 more commands answered, by the primary NEW (a writer); a reader by
# any server (redis-py falls back to the primary when Sentinel lists no usable replica).
settled() {
	local app=$1 n ip
	n=$(count_lines A "$CL_DIR/$app.out")
	cl_until 30 acked_over "$app" $((n + 100)) || fail "$app stopped: $(tail -n 3 "$CL_DIR/$app.out")"
	ip=$(grep '^A ' "$CL_DIR/$app.out" | tail -n 1 | awk '{ print $4 }')
	ip=${ip%:*}
	[[ $app == *_r ]] || [ "$ip" = "$(cl_ip "$NEW")" ] ||
		fail "$app writes to $ip, not to the new primary $(cl_ip "$NEW")"
}

# Three redis-sentinel (Debian's, quorum 2, down-after-milliseconds 1000 as flatline's
# node_down_after_ms here) on the same kind of cluster, the same four applications with
# their defaults; kill -9 of the primary, then SENTINEL FAILOVER. Prints the errors each
# application saw in each (docs/sentinel.md's table); checks that every application follows.
test_clients_vs_sentinel() {
	local p d a t1 t2 t3 old figs=""
	need_clients
	need_cmd redis-sentinel
	export FL_NODE_PREFIX=v${BASHPID}n
	CL_KEEP=1
	cl_init "$T/cl" "flv$BASHPID"
	on_exit cl_down
	cl_up_servers || fail "servers did not come up"
	for p in 26380 26381 26382; do
		d=$CL_DIR/rs$p
		mkdir -p "$d"
		cat >"$d/sentinel.conf" <<-EOF2
			port $p
			bind $CL_CTL_IP
			daemonize no
			dir $d
			logfile $d/sentinel.log
			sentinel monitor $CL_SHARD $(cl_ip 1) 6379 2
			sentinel down-after-milliseconds $CL_SHARD 1000
			sentinel failover-timeout $CL_SHARD 10000
		EOF2
		cl_spawn "rs$p" "$CL_NS_CTL" redis-sentinel "$d/sentinel.conf"
	done
	cl_until 40 rs_ready || fail "the sentinels did not find each other and the replicas: $(tail -n 5 "$CL_DIR/rs26380/sentinel.log")"
	start_apps "$CL_CTL_IP:26380,$CL_CTL_IP:26381,$CL_CTL_IP:26382"
	# 1. kill -9 of the primary.
	t1=$(cl_now_ns)
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	cl_until 30 rs_moved_from 1 || fail "redis-sentinel did not fail over: $(tail -n 5 "$CL_DIR/rs26380/sentinel.log")"
	NEW=$(cl_idx_of_ip "$(rs_primary)")
	for a in "${APPS[@]}"; do settled "$a"; done
	# 2. SENTINEL FAILOVER (the old primary stays dead: to the remaining replica).
	t2=$(cl_now_ns)
	old=$NEW
	[ "$(rs_cli 26380 sentinel failover "$CL_SHARD")" = OK ] || fail "SENTINEL FAILOVER refused"
	cl_until 30 rs_moved_from "$old" || fail "SENTINEL FAILOVER did not move the primary"
	NEW=$(cl_idx_of_ip "$(rs_primary)")
	cl_until 30 cl_linked "$old" "$NEW" || fail "the old primary does not follow the new one: $(cl_role "$old")"
	for a in "${APPS[@]}"; do settled "$a"; done
	t3=$(cl_now_ns)
	for a in "${APPS[@]}"; do
		figs="$figs $a: kill -9 $(errs_between "$a" "$t1" "$t2"), switchover $(errs_between "$a" "$t2" "$t3");"
	done
	echo "    redis-sentinel, errors per application:$figs" | tee "$T/figures" >&2
	echo "    first errors: $(grep -h '^E' "$CL_DIR"/*.out | awk '{ $1 = $2 = $3 = ""; print }' | sort | uniq -c | sort -rn | head -n 8 | tr '\n' ';')" | tee -a "$T/figures" >&2
}

# ---- runtime settings: per master, kept, and in HA mode in etcd ----

# field PORT MASTER NAME: a field of SENTINEL MASTER on the controller at 127.0.0.1:PORT.
field() { timeout 5 redis-cli -p "$1" sentinel master "$2" | sed -n "/^$3\$/{n;p}"; }

runid_known() { [ -n "$(field "$1" "$2" runid)" ]; }

# SENTINEL SET applies to the master named, as Sentinel's: two shards on loopback (no
# agents: the API answers from the cluster file and the servers), one set, the other
# not; kept over a restart; a password set for one shard is the one its server is
# asked with (its run_id then comes from INFO); flatline status shows them per shard.
test_runtime_per_shard() {
	local pa pb pc
	need_cmd redis-server redis-cli jq
	pa=$(free_port) pb=$(free_port) pc=$(free_port)
	while [ "$pb" = "$pa" ] || [ "$pc" = "$pa" ] || [ "$pc" = "$pb" ]; do pb=$(free_port) pc=$(free_port); done
	start_redis "$pa"
	start_redis "$pb" --requirepass "b-only-pass-0123456789"
	cat >"$T/cluster.conf" <<-EOF
		[cluster]
		name = rt
		secret = s3cret-s3cret-s3cret
		[controller]
		listen = 127.0.0.1:$pc
		node_down_after_ms = 1000
		failover_block_ms = 10000
		state_file = $T/state
		event_log = $T/controller.jsonl
		[node "ra"]
		address = 127.0.0.21
		redis = 127.0.0.1:$pa
		[node "rb"]
		address = 127.0.0.22
		redis = 127.0.0.1:$pb
		[shard "a"]
		nodes = ra
		[shard "b"]
		nodes = rb
	EOF
	chmod 600 "$T/cluster.conf"
	rt_start() {
		"$FL" controller --allow-root -c "$T/cluster.conf" >>"$T/controller.err" 2>&1 &
		RT_PID=$!
		on_exit "kill -TERM $RT_PID 2>/dev/null; wait $RT_PID 2>/dev/null"
		wait_event "$T/controller.jsonl" ".kind == \"controller_ready\" and .ts > \"${1:-}\"" >/dev/null ||
			fail "controller did not start: $(tail -n 3 "$T/controller.err")"
	}
	rt_start
	local au=(-p "$pc" -a s3cret-s3cret-s3cret --no-auth-warning)
	[ "$(field "$pc" b runid)" = "" ] || fail "b's server answered INFO without its password"
	[ "$(timeout 5 redis-cli "${au[@]}" sentinel set a down-after-milliseconds 4321)" = OK ] || fail "SET a"
	[ "$(timeout 5 redis-cli "${au[@]}" sentinel set b failover-timeout 7777 auth-pass b-only-pass-0123456789)" = OK ] ||
		fail "SET b"
	[ "$(field "$pc" a down-after-milliseconds)" = 4321 ] && [ "$(field "$pc" b down-after-milliseconds)" = 1000 ] ||
		fail "down-after-milliseconds: a $(field "$pc" a down-after-milliseconds), b $(field "$pc" b down-after-milliseconds) (want 4321, 1000)"
	[ "$(field "$pc" b failover-timeout)" = 7777 ] && [ "$(field "$pc" a failover-timeout)" = 10000 ] ||
		fail "failover-timeout: a $(field "$pc" a failover-timeout), b $(field "$pc" b failover-timeout) (want 10000, 7777)"
	[[ $(timeout 5 redis-cli "${au[@]}" sentinel set a notification-script /bin/true) == "ERR Reconfiguration of scripts path"* ]] ||
		fail "scripts set at runtime"
	[[ $(timeout 5 redis-cli "${au[@]}" sentinel set nosuch quorum 1) == "ERR No such master"* ]] || fail "SET of an unknown master"
	grep -qx "master a down-after-milliseconds 4321" "$T/state.runtime" &&
		grep -qx "master b failover-timeout 7777" "$T/state.runtime" || fail "state.runtime: $(cat "$T/state.runtime")"
	local since
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	kill -TERM "$RT_PID"
	wait "$RT_PID" 2>/dev/null || true
	rt_start "$since"
	[ "$(field "$pc" a down-after-milliseconds)" = 4321 ] && [ "$(field "$pc" b down-after-milliseconds)" = 1000 ] &&
		[ "$(field "$pc" b failover-timeout)" = 7777 ] || fail "not kept over a restart: $(cat "$T/state.runtime")"
	# b's server asked with b's password from the start: INFO answered, run_id known.
	cl_until 10 runid_known "$pc" b || fail "b's server not reached with the password set at runtime"
	[ "$(field "$pc" b runid)" = "$(redis-cli -p "$pb" -a b-only-pass-0123456789 --no-auth-warning info server | tr -d '\r' | sed -n 's/^run_id://p')" ] ||
		fail "b's server not reached with the password set at runtime: runid '$(field "$pc" b runid)'"
	"$FL" status -c "$T/cluster.conf" >"$T/status.txt" 2>&1 || true
	grep -q "set at runtime ($T/state.runtime.*a:down-after-milliseconds=4321.*b:failover-timeout=7777 b:auth-pass=(secret)" "$T/status.txt" ||
		fail "flatline status: $(grep -A1 'set at runtime' "$T/status.txt")"
}

# ---- HA mode: every controller discovered, runtime settings in etcd ----

ha_cli() { cl_ctl timeout 5 redis-cli -h "$(cl_ha_ip "$1")" -p "$CL_CTL_PORT" "${@:2}"; }
ha_field() { ha_cli "$1" sentinel master "$CL_SHARD" | sed -n "/^$2\$/{n;p}"; }
ha_field_is() { [ "$(ha_field "$1" "$2")" = "$3" ]; }

# Three controllers on etcd (tests/lib/cluster_ha.sh). Each one's SENTINEL SENTINELS
# lists the two others as Sentinel lists its peers (ip, port, runid = their SENTINEL
# MYID, flags); ioredis given only c1 learns the others (its updateSentinels) and,
# c1 killed -9, follows a failover through them with no error; redis-py (which does not
# discover sentinels) is given all three. A SENTINEL SET on one controller is in etcd:
# every controller shows it, so do a new leader and a restarted controller; flatline
# status says where it comes from.
test_clients_ha_discovery() {
	local i j out myid lead other e
	need_clients
	need_cmd etcd etcdctl
	export FL_HA=1 FL_NODE_PREFIX=h${BASHPID}n
	CL_KEEP=1
	cl_init "$T/cl" "flh$BASHPID"
	on_exit cl_down
	cl_up || fail "HA cluster did not come up"
	for i in 1 2 3; do
		out=$(ha_cli "$i" sentinel sentinels "$CL_SHARD" | tr '\n' ' ')
		[ "$(ha_field "$i" num-other-sentinels)" = 2 ] || fail "c$i: num-other-sentinels $(ha_field "$i" num-other-sentinels)"
		for j in 1 2 3; do
			[ "$i" != "$j" ] || continue
			myid=$(ha_cli "$j" sentinel myid)
			[[ $myid =~ ^[0-9a-f]{40}$ ]] || fail "c$j's myid: $myid"
			[[ $out == *"ip $(cl_ha_ip "$j") port $CL_CTL_PORT runid $myid flags sentinel"* ]] ||
				fail "c$i's SENTINEL SENTINELS does not list c$j ($(cl_ha_ip "$j") $myid): $out"
		done
	done
	cl_spawn ioredis "$CL_NS_CTL" node "$NODE_DIR/app.js" "$(cl_ha_ip 1):$CL_CTL_PORT" "$CL_SHARD" wio "$RATE" "$CL_DIR/ioredis.out"
	cl_spawn redispy "$CL_NS_CTL" "$PY" "$PWD/tests/lib/clientapp.py" \
		"$(cl_ha_ip 1):$CL_CTL_PORT,$(cl_ha_ip 2):$CL_CTL_PORT,$(cl_ha_ip 3):$CL_CTL_PORT" "$CL_SHARD" wpy "$RATE" "$CL_DIR/redispy.out"
	for i in ioredis redispy; do
		cl_until 15 acked_over "$i" 100 || fail "$i did nothing: $(tail -n 3 "$CL_DIR/log/$i.out" "$CL_DIR/$i.out")"
	done
	# A runtime setting, set on c2, seen by all.
	[ "$(ha_cli 2 -a "$CL_SECRET" --no-auth-warning sentinel set "$CL_SHARD" down-after-milliseconds 1500)" = OK ] ||
		fail "SENTINEL SET on c2"
	for i in 1 2 3; do
		cl_until 5 ha_field_is "$i" down-after-milliseconds 1500 || fail "c$i: down-after-milliseconds $(ha_field "$i" down-after-milliseconds)"
	done
	[ "$(cl_etcdctl get "/flatline/$CL_NAME/runtime/$CL_SHARD/down-after-milliseconds" --print-value-only)" = 1500 ] ||
		fail "not in etcd: $(cl_etcdctl get --prefix "/flatline/$CL_NAME/runtime/" 2>&1)"
	# c1 killed: ioredis knew only c1 at start.
	lead=$(cl_ha_leader) || fail "no leader"
	kill -KILL "$(cl_pid controller-c1)"
	if [ "$lead" = 1 ]; then
		cl_until 10 new_leader_is_not 1 || fail "no other controller leads"
	fi
	lead=$(cl_ha_leader)
	CL_CLOG=$(cl_ha_log "$lead")
	ha_field_is "$lead" down-after-milliseconds 1500 || fail "the leader c$lead: $(ha_field "$lead" down-after-milliseconds)"
	OLD=1
	T_FAULT_NS=$(cl_now_ns)
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	new_primary
	moved ioredis
	moved redispy window
	# c1 back: the setting from etcd at start; status says where it comes from.
	cl_ha_controller_start 1
	cl_until 10 ha_field_is 1 down-after-milliseconds 1500 || fail "c1 restarted: down-after-milliseconds $(ha_field 1 down-after-milliseconds)"
	e=$(ha_cli 1 flatline status)
	[[ $e == *"set at runtime (etcd /flatline/$CL_NAME/runtime/"*"$CL_SHARD:down-after-milliseconds=1500"* ]] ||
		fail "flatline status on c1: $(grep -A1 'set at runtime' <<<"$e")"
	other=$(ha_field 1 num-other-sentinels)
	[ "$other" = 2 ] || fail "c1 restarted: num-other-sentinels $other"
}
new_leader_is_not() { local l; l=$(cl_ha_leader) && [ "$l" != "$1" ] && cl_has_event "$(cl_ha_log "$l")" '.kind == "controller_ready"'; }

TESTS=(test_clients_ha_discovery test_runtime_per_shard test_hooks_async_timeout_retry test_clients_switchover test_clients_sigkill test_identity_and_runtime_config
	test_clients_vs_sentinel)
run_tests
