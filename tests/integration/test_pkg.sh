#!/usr/bin/env bash
# Production pieces: `flatline version` and `check`, the manual, the
# systemd units, the Debian package, least privilege, SIGHUP, journald levels and
# the Prometheus metrics.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# The example as an operator installs it: copied, mode 0600 (it holds the secret).
EXAMPLE_SRC=packaging/cluster.conf.example
example() { install -m 600 "$EXAMPLE_SRC" "$T/example.conf" && echo "$T/example.conf"; }
PY=/usr/bin/python3
A_IP=198.18.7.1
B_IP=198.18.7.2

# The capabilities the agent's unit bounds it to, as setpriv(1) wants them:
# "CAP_BPF CAP_PERFMON" -> "-all,+bpf,+perfmon".
unit_caps() {
	local caps
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' packaging/flatline-agent@.service)
	[ -n "$caps" ] || fail "no CapabilityBoundingSet= in the agent unit"
	echo "-all$(for c in $caps; do printf ',+%s' "$(tr 'A-Z' 'a-z' <<<"${c#CAP_}")"; done)"
}

# setup_unit_agent: two namespace hosts; in a, redis (primary) and the agent started
# as its unit starts it: uid 0 with the unit's capability bounding set, no
# inheritable or ambient capabilities, no new privileges, stderr a journal-like
# stream (JOURNAL_STREAM names it); in b, the recording controller. The agent
# serves metrics on A_IP:MPORT.
setup_unit_agent() {
	need_cmd setpriv capsh redis-server redis-cli nft curl
	P=flp$BASHPID
	make_hosts "$P" 198.18.7
	NODE=u1$P
	RPORT=$(free_port)
	$NA redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$T" \
		--logfile "$T/redis.log" &
	REDIS_PID=$!
	on_exit "kill -KILL $REDIS_PID"
	local end=$((SECONDS + FL_WAIT_S))
	until $NA redis-cli -p "$RPORT" ping 2>/dev/null | grep -q PONG; do
		[ $SECONDS -le $end ] || fail "redis did not start"
		sleep 0.05
	done
	CPORT=$(free_port)
	MPORT=$(free_port)
	REC=$T/rec.jsonl
	$NB $PY tests/lib/recpeer.py "$CPORT" "$REC" --bind $B_IP --primary "$NODE" &
	on_exit "kill $!"
	write_conf "$T/c.conf"
	LOG=$T/events.jsonl
	ERR=$T/agent.err
	: >"$ERR"
	js=$(stat -c '%d:%i' "$ERR")
	NOTIFY=$T/notify.log
	$PY tests/lib/notifyrec.py "$T/notify.sock" "$NOTIFY" &
	on_exit "kill $!"
	for _ in $(seq 100); do [ -S "$T/notify.sock" ] && break; sleep 0.02; done
	$NA env JOURNAL_STREAM="$js" NOTIFY_SOCKET="$T/notify.sock" WATCHDOG_USEC=400000 setpriv --inh-caps=-all --ambient-caps=-all \
		--bounding-set="$(unit_caps)" --no-new-privs \
		"$FL" agent -c "$T/c.conf" --node "$NODE" --event-log "$LOG" 2>>"$ERR" &
	AGENT_PID=$!
	on_exit "kill -TERM $AGENT_PID; wait $AGENT_PID; rm -rf /sys/fs/bpf/flatline/$NODE"
	wait_event "$LOG" '.kind == "controller_connected"' >/dev/null || { cat "$ERR" >&2; fail "agent did not reach the controller"; }
	wait_event "$LOG" '.kind == "peer_up" and .peer == "n2"' >/dev/null || { cat "$ERR" >&2; fail "no peer_up for n2"; }
}

# write_conf FILE [EXTRA [agent] LINES]
write_conf() {
	cat >"$1" <<-EOC
		[cluster]
		secret = s3cret-s3cret-s3cret
		[agent]
		probe_interval_ms = 100
		peer_down_after_ms = 500
		heartbeat_ms = 100
		metrics_listen = $A_IP:$MPORT
		${2:-}
		; lease_ms = 0: the write lease's pins outlive the agent by design (test_lease.sh);
		; these tests check that a clean stop leaves no pin behind.
		lease_ms = 0
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
	chmod 600 "$1" # it holds the secret
}

isolate_a() {
	$NA nft -f - <<-EOF
		table inet flpkg {
			chain in { type filter hook input priority 0; policy drop; iif lo accept; }
			chain out { type filter hook output priority 0; policy drop; oif lo accept; }
		}
	EOF
}

test_version() {
	out=$("$FL" version) || fail "flatline version failed"
	grep -qE '^flatline [0-9]+\.[0-9]+\.[0-9]+' <<<"$out" || fail "no version in '$out'"
	v=$(sed -n 's/^VERSION *?= *//p' Makefile)
	grep -qF "flatline $v " <<<"$out" || fail "'$out' is not the Makefile's $v"
}

test_check_example() {
	EXAMPLE=$(example)
	out=$("$FL" check -c "$EXAMPLE") || fail "the example does not validate: $out"
	grep -q "valid: cluster example, 3 node(s), 1 shard(s)" <<<"$out" || fail "no summary: $out"
	grep -q "probes peers: n2=10.0.0.2 n3=10.0.0.3" <<<"$out" || fail "n1's peers missing: $out"
	grep -q "priority 0 (never promoted)" <<<"$out" || fail "n3's priority missing: $out"
	grep -q "secret is the example's 'change-me'" <<<"$out" || fail "no warning on the secret"
	out=$("$FL" check -c "$EXAMPLE" --node n2) || fail "--node n2 failed"
	expect_eq "agents printed for --node n2" "$(grep -c '^agent on node' <<<"$out")" 1
	"$FL" check -q -c "$EXAMPLE" >"$T/q" || fail "-q failed"
	[ ! -s "$T/q" ] || fail "-q printed: $(cat "$T/q")"
}

test_check_broken() {
	EXAMPLE=$(example)
	sed 's/^hung_after = 5 /hung_after = five /' "$EXAMPLE" >"$T/bad.conf"
	rc=0
	"$FL" check -c "$T/bad.conf" >"$T/out" 2>"$T/err" || rc=$?
	expect_eq "exit status for a broken file" "$rc" 1
	expect_eq "the error" "$(cat "$T/err")" \
		"$T/bad.conf:10: [agent] hung_after: not a number: 'five'"
	rc=0
	"$FL" check -c "$EXAMPLE" --node n9 2>"$T/err" >/dev/null || rc=$?
	expect_eq "exit status for an unknown node" "$rc" 1
	rc=0
	"$FL" check -c "$T/missing.conf" 2>"$T/err" >/dev/null || rc=$?
	expect_eq "exit status for a missing file" "$rc" 1
	grep -q "failed to open cluster file" "$T/err" || fail "no message: $(cat "$T/err")"
}

# The manual: both pages build, groff finds nothing to warn about, and
# flatline.conf(5) names every key the parser knows.
test_manual() {
	need_cmd python3 groff
	make -s man >/dev/null || fail "make man failed"
	for p in build/man/flatline.8 build/man/flatline.conf.5; do
		[ -s "$p" ] || fail "$p not built"
		w=$(LC_ALL=C.UTF-8 groff -man -ww -z "$p" 2>&1)
		[ -z "$w" ] || fail "groff warns about $p: $w"
	done
	# The table of keys (user/common/config_table.c), as flatline check --keys prints it.
	keys=$("$FL" check --keys | sed -n 's/^\[[^]]*\] \([a-z_]*\) .*/\1/p' | sort -u)
	[ "$(wc -l <<<"$keys")" -ge 30 ] || fail "found only $(wc -l <<<"$keys") keys in flatline check --keys"
	for k in $keys; do
		grep -q "^\`$k\`" docs/man/flatline.conf.5.md || grep -q "\`$k\`" docs/man/flatline.conf.5.md ||
			fail "flatline.conf(5) does not describe key $k"
	done
	for c in agent controller check status failover events peers probe version; do
		grep -q "^\`$c\`" docs/man/flatline.8.md || fail "flatline(8) does not describe '$c'"
	done
}

# Both units pass systemd-analyze verify (ExecStart pointed at this build).
test_units_verify() {
	need_cmd systemd-analyze
	for u in packaging/*.service; do
		sed "s|/usr/sbin/flatline|$FL|" "$u" >"$T/${u##*/}"
	done
	cp "$T/flatline-agent@.service" "$T/flatline-agent@n1.service"
	out=$(systemd-analyze verify --man=no "$T/flatline-agent@n1.service" \
		"$T/flatline-controller.service" 2>&1) || fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify says: $out"
	grep -q '^Type=notify' packaging/flatline-agent@.service || fail "agent unit not Type=notify"
	grep -q '^Type=notify' packaging/flatline-controller.service || fail "controller unit not Type=notify"
}

# make deb; lintian reports no error; installed into a copy of this machine (an
# overlay of / in a private mount namespace, thrown away afterwards) it lays out
# every file, adds the flatline user and the directories, and its units verify.
test_deb() {
	need_cmd dpkg-deb lintian unshare chroot systemd-analyze
	make -s deb >"$T/make.out" 2>&1 || { cat "$T/make.out" >&2; fail "make deb failed"; }
	v=$(sed -n 's/^VERSION *?= *//p' Makefile)
	deb=build/flatline_${v}_$(dpkg --print-architecture).deb
	[ -s "$deb" ] || fail "no $deb"
	lintian --fail-on error --tag-display-limit 0 "$deb" >"$T/lintian" 2>&1 ||
		{ cat "$T/lintian" >&2; fail "lintian reports errors"; }
	! grep -q '^E:' "$T/lintian" || fail "lintian: $(cat "$T/lintian")"
	passwd_before=$(md5sum </etc/passwd)
	dpkg-deb -c "$deb" >"$T/contents"
	for f in ./usr/sbin/flatline ./lib/systemd/system/flatline-agent@.service \
		./lib/systemd/system/flatline-controller.service ./usr/share/man/man8/flatline.8.gz \
		./usr/share/man/man5/flatline.conf.5.gz ./usr/share/doc/flatline/examples/cluster.conf \
		./usr/share/doc/flatline/examples/flatline-alerts.yml ./usr/lib/tmpfiles.d/flatline.conf \
		./usr/share/doc/flatline/copyright ./etc/flatline/; do
		grep -q " $f\$" "$T/contents" || fail "$f not in the package"
	done
	D=$T/root
	mkdir "$D"
	unshare --mount --propagation private bash -c "
		set -e
		mount -t tmpfs tmpfs '$D'
		mkdir '$D/u' '$D/w' '$D/m'
		mount -t overlay overlay -o 'lowerdir=/,upperdir=$D/u,workdir=$D/w' '$D/m'
		mount -t proc proc '$D/m/proc'
		mount -t tmpfs tmpfs '$D/m/run'
		mount -t tmpfs tmpfs '$D/m/tmp'
		cp '$deb' '$D/m/tmp/f.deb'
		chroot '$D/m' dpkg -i /tmp/f.deb
		chroot '$D/m' dpkg -L flatline
		echo user: \$(chroot '$D/m' id -un flatline)
		echo dirs: \$(chroot '$D/m' stat -c '%n:%U:%G:%a' /var/log/flatline /var/lib/flatline)
		chroot '$D/m' systemd-analyze verify --man=no flatline-agent@n1.service \
			flatline-controller.service && echo verify: ok
		chroot '$D/m' flatline version
		mkdir -p '$D/m/etc/flatline'
		install -m 600 '$D/m/usr/share/doc/flatline/examples/cluster.conf' '$D/m/etc/flatline/cluster.conf'
		chroot '$D/m' flatline check -q -c /etc/flatline/cluster.conf && echo check: ok
	" >"$T/inst" 2>&1 || { cat "$T/inst" >&2; fail "installing into the fresh root failed"; }
	for f in /usr/sbin/flatline /lib/systemd/system/flatline-agent@.service \
		/lib/systemd/system/flatline-controller.service /usr/share/man/man8/flatline.8.gz \
		/usr/share/man/man5/flatline.conf.5.gz /usr/share/doc/flatline/examples/cluster.conf; do
		grep -qx "$f" "$T/inst" || fail "dpkg -L does not list $f: $(cat "$T/inst")"
	done
	grep -qx "user: flatline" "$T/inst" || fail "no flatline user: $(cat "$T/inst")"
	grep -q "dirs: /var/log/flatline:root:flatline:775 /var/lib/flatline:flatline:flatline:750" \
		"$T/inst" || fail "directories: $(grep dirs: "$T/inst")"
	grep -qx "verify: ok" "$T/inst" || fail "installed units do not verify: $(cat "$T/inst")"
	grep -q "^flatline $v " "$T/inst" || fail "installed binary: $(cat "$T/inst")"
	grep -qx "check: ok" "$T/inst" || fail "the installed example does not validate"
	# Nothing leaked onto this machine.
	expect_eq "/etc/passwd of this machine" "$(md5sum </etc/passwd)" "$passwd_before"
}

# The agent as its unit runs it: the capability set after start is exactly the one
# flatline(8) documents; with it the agent watches its server, probes its peer and
# fences an isolated primary.
test_agent_least_privilege() {
	setup_unit_agent
	want=$(grep -o 'drops to `[a-z_,]*`' docs/man/flatline.8.md | head -n 1 | sed 's/.*`\(.*\)`/\1/')
	[ -n "$want" ] || fail "flatline(8) does not say which capabilities the agent keeps"
	eff=$(awk '/^CapEff:/ { print $2 }' /proc/$AGENT_PID/status)
	prm=$(awk '/^CapPrm:/ { print $2 }' /proc/$AGENT_PID/status)
	expect_eq "CapEff of the running agent" "$(capsh --decode="$eff" | cut -d= -f2)" "$want"
	expect_eq "CapPrm (dropped for good)" "$prm" "$eff"
	expect_eq "CapInh" "$(awk '/^CapInh:/ { print $2 }' /proc/$AGENT_PID/status)" 0000000000000000
	expect_eq "CapAmb" "$(awk '/^CapAmb:/ { print $2 }' /proc/$AGENT_PID/status)" 0000000000000000
	ev=$(wait_event "$LOG" '.kind == "agent_start"') || fail "no agent_start"
	expect_eq "agent_start caps" "$(jq -r .caps <<<"$ev")" "$want"
	grep -q "capabilities now: $want" "$ERR" || fail "the set is not logged: $(cat "$ERR")"
	# It watches the server: the pid from INFO is in the kernel's watched set.
	end=$((SECONDS + FL_WAIT_S))
	until bpftool map dump pinned "/sys/fs/bpf/flatline/$NODE/fl_watch_pids" 2>/dev/null |
		grep -q "\"key\": $REDIS_PID\b"; do
		[ $SECONDS -le $end ] || fail "server pid $REDIS_PID not watched"
		sleep 0.05
	done
	# It fences an isolated primary, without the capabilities it dropped.
	isolate_a
	on_exit "$NA nft delete table inet flpkg"
	wait_event "$LOG" '.kind == "self_fenced"' >/dev/null || { cat "$ERR" >&2; fail "no self_fenced"; }
	$NA nft delete table inet flpkg
	# And sees its server die, in the kernel.
	kill -KILL "$REDIS_PID"
	ev=$(wait_event "$LOG" ".kind == \"proc_exit\" and .pid == $REDIS_PID") || fail "no proc_exit"
	expect_eq "signal" "$(jq -r .signal <<<"$ev")" SIGKILL
	kill -0 "$AGENT_PID" || fail "the agent died"
}

# Type=notify: READY=1 with a STATUS= line once the programs are attached, then
# WATCHDOG=1 from the event loop every half WatchdogSec= (WATCHDOG_USEC).
test_agent_sd_notify() {
	setup_unit_agent
	end=$((SECONDS + FL_WAIT_S))
	until grep -q '^READY=1$' "$NOTIFY" 2>/dev/null; do
		[ $SECONDS -le $end ] || fail "no READY=1: $(cat "$NOTIFY")"
		sleep 0.05
	done
	grep -q "^STATUS=node $NODE: programs attached, 1 peer(s), reporting to the controller$" "$NOTIFY" ||
		fail "no STATUS line: $(cat "$NOTIFY")"
	w0=$(awk '/^WATCHDOG=1$/ { n++ } END { print n + 0 }' "$NOTIFY")
	sleep 1.2
	w1=$(awk '/^WATCHDOG=1$/ { n++ } END { print n + 0 }' "$NOTIFY")
	# Every 200 ms: about 6 in 1.2 s; at least 3 on a busy machine.
	[ $((w1 - w0)) -ge 3 ] || fail "WATCHDOG=1 $((w1 - w0)) times in 1.2 s, want about 6"
	[ $((w1 - w0)) -le 12 ] || fail "WATCHDOG=1 $((w1 - w0)) times in 1.2 s, want about 6"
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID" || fail "agent exited with $?"
	grep -q '^STOPPING=1$' "$NOTIFY" || fail "no STOPPING=1"
	# Without the capabilities it dropped, it still cleans up after itself.
	[ ! -e "/sys/fs/bpf/flatline/$NODE" ] || fail "pins left in /sys/fs/bpf/flatline/$NODE"
}

# Under systemd (JOURNAL_STREAM naming stderr) every line carries a <N> level.
test_agent_journal_levels() {
	setup_unit_agent
	grep -q '^<6>flatline: capabilities now:' "$ERR" || fail "no <6> info line: $(cat "$ERR")"
	bad=$(grep -v '^<[3-7]>flatline: ' "$ERR" | head -n 3)
	[ -z "$bad" ] || fail "lines without a level: $bad"
	# And not when stderr is something else (the variable inherited, another stream).
	rc=0
	JOURNAL_STREAM=1:1 "$FL" agent --watch-pid abc 2>"$T/plain" || rc=$?
	expect_eq "exit status for a bad --watch-pid" "$rc" 2
	grep -q '^flatline: --watch-pid abc: not a process id' "$T/plain" ||
		fail "a level prefix on a non-journal stderr: $(cat "$T/plain")"
}

# SIGHUP: a broken file is refused (logged, the agent keeps running on the old one);
# a valid one applies self_fence at once and names what needs a restart.
test_agent_sighup() {
	setup_unit_agent
	cp "$T/c.conf" "$T/good.conf"
	sed -i 's/^hung_after_typo.*//; s/^heartbeat_ms = 100/heartbeat_ms = soon/' "$T/c.conf"
	kill -HUP "$AGENT_PID"
	ev=$(wait_event "$LOG" '.kind == "config_rejected"') || { cat "$ERR" >&2; fail "no config_rejected"; }
	grep -q "c.conf:6: \[agent\] heartbeat_ms: not a number: 'soon'" <<<"$ev" || fail "error: $ev"
	grep -q "^<3>flatline: failed to reload the cluster file: .*c.conf:6: .*keeping the running" "$ERR" ||
		fail "not logged as an error: $(cat "$ERR")"
	sleep 0.5
	kill -0 "$AGENT_PID" || fail "the agent died on a broken file"
	t=$(date +%s.%N)
	sleep 0.5
	[ "$(count_events "$REC" ".cmd == \"REPORT\" and .t > $t")" -gt 0 ] ||
		fail "no reports to the controller after the rejected reload"
	# A valid file: self_fence off applies; ping_interval_ms needs a restart.
	write_conf "$T/c.conf" "self_fence = no
ping_interval_ms = 50"
	kill -HUP "$AGENT_PID"
	ev=$(wait_event "$LOG" '.kind == "config_reloaded"') || { cat "$ERR" >&2; fail "no config_reloaded"; }
	expect_eq "changed keys" "$(jq -r .changed <<<"$ev")" 2
	expect_eq "needs a restart" "$(jq -r .needs_restart <<<"$ev")" "[agent] ping_interval_ms"
	expect_eq "applied" "$(jq -r .applied <<<"$ev")" "[agent] self_fence"
	# stop_grace_ms and heartbeat_ms changed: both applied and named so (they were
	# once ignored while the reload said "all applied").
	write_conf "$T/c.conf" "self_fence = no
ping_interval_ms = 50
stop_grace_ms = 200"
	sed -i 's/^heartbeat_ms = 100$/heartbeat_ms = 150/' "$T/c.conf"
	kill -HUP "$AGENT_PID"
	ev=$(wait_event "$LOG" '.kind == "config_reloaded" and (.applied | test("stop_grace_ms"))') ||
		{ cat "$ERR" >&2; fail "no config_reloaded applying stop_grace_ms"; }
	expect_eq "applied" "$(jq -r .applied <<<"$ev")" "[agent] heartbeat_ms, [agent] stop_grace_ms"
	expect_eq "still needs a restart" "$(jq -r .needs_restart <<<"$ev")" "[agent] ping_interval_ms"
	grep -q "reload: \[agent\] ping_interval_ms: needs a restart of the agent" "$ERR" ||
		fail "no warning naming ping_interval_ms: $(cat "$ERR")"
	# self_fence = no now: isolation fences nothing.
	isolate_a
	on_exit "$NA nft delete table inet flpkg"
	sleep 2 # self_fence_after_ms is 1000
	expect_eq "self_fenced with self_fence = no" "$(count_events "$LOG" '.kind == "self_fenced"')" 0
}

# The controller refuses root unless --allow-root; as an unprivileged user it runs.
test_controller_refuses_root() {
	need_root
	need_cmd runuser
	CPORT=$(free_port)
	printf '[cluster]\nsecret = s3cret-s3cret-s3cret\n[controller]\nlisten = 127.0.0.1:%s\n' "$CPORT" >"$T/c.conf"
	chmod 0600 "$T/c.conf"
	rc=0
	"$FL" controller -c "$T/c.conf" --state-file "$T/state" --event-log "$T/c.jsonl" \
		2>"$T/err" || rc=$?
	expect_eq "exit status as root" "$rc" 1
	grep -q "refusing to run as root.*--allow-root" "$T/err" || fail "message: $(cat "$T/err")"
	[ ! -e "$T/c.jsonl" ] || fail "it started anyway"
	cp "$FL" "$T/flatline"
	chmod 0755 "$T" "$T/flatline"
	chown nobody "$T/c.conf" # 0600: it holds the secret; nobody reads it
	mkdir -m 0777 "$T/run"
	$PY tests/lib/notifyrec.py "$T/run/notify.sock" "$T/notify.log" &
	on_exit "kill $!"
	for _ in $(seq 100); do [ -S "$T/run/notify.sock" ] && break; sleep 0.02; done
	chmod 0666 "$T/run/notify.sock"
	runuser -u nobody -- env NOTIFY_SOCKET="$T/run/notify.sock" WATCHDOG_USEC=400000 \
		"$T/flatline" controller -c "$T/c.conf" --state-file "$T/run/state" \
		--event-log "$T/run/c.jsonl" 2>"$T/err.nobody" &
	rpid=$! # runuser's: it waits for the controller
	on_exit "kill -TERM $rpid"
	wait_event "$T/run/c.jsonl" '.kind == "controller_ready"' >/dev/null ||
		fail "did not start as nobody: $(cat "$T/err.nobody")"
	pid=$(jq -r 'select(.kind == "controller_start") | .pid' "$T/run/c.jsonl" | head -n 1)
	expect_eq "the controller's user" "$(stat -c %U /proc/$pid)" nobody
	# Type=notify: READY=1 once it listens and knows the servers' roles, then watchdog.
	sleep 0.5
	grep -q '^READY=1$' "$T/notify.log" || fail "no READY=1: $(cat "$T/notify.log")"
	grep -q "^STATUS=ready: 0 shard(s), listening on 127.0.0.1:$CPORT$" "$T/notify.log" ||
		fail "no STATUS: $(cat "$T/notify.log")"
	[ "$(grep -c '^WATCHDOG=1$' "$T/notify.log")" -ge 1 ] || fail "no WATCHDOG=1"
	expect_eq "CapEff of the controller" "$(awk '/^CapEff:/ { print $2 }' /proc/$pid/status)" \
		0000000000000000
	kill -TERM "$pid"
	wait "$rpid" || fail "controller exited with $?"
}

# A real Prometheus (Debian's) scrapes the three agents and the controller of a
# cluster (tests/lib/cluster.sh) while the primary is SIGKILLed: the failover counter,
# the histograms and the agents' counters move; promtool accepts both expositions;
# the example alert rules load and FlatlineFailoverHappened fires. Then SIGHUP on the
# controller: a broken file is refused, a valid one reloaded.
test_prometheus_failover() {
	need_root
	need_cmd prometheus promtool ip nsenter nft redis-server redis-cli named tsig-keygen dig jq \
		setsid curl
	# shellcheck source=tests/lib/cluster.sh
	. tests/lib/cluster.sh
	export FL_NODE_PREFIX=m${BASHPID}n
	export FL_AGENT_CONF="metrics_listen = 0.0.0.0:9433"
	export FL_CTL_CONF="metrics_listen = 0.0.0.0:9434"
	CL_KEEP=1
	cl_init "$T/cl" "flm$BASHPID"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	IN_CTL="nsenter --net=/run/netns/$CL_NS_CTL"
	targets=""
	for i in 1 2 3; do
		$IN_CTL curl -sf "http://$(cl_ip "$i"):9433/metrics" >"$T/agent$i.prom" ||
			fail "no metrics from agent $i"
		promtool check metrics <"$T/agent$i.prom" >"$T/lint" 2>&1 ||
			fail "promtool on agent $i: $(cat "$T/lint")"
		targets="$targets'$(cl_ip "$i"):9433',"
	done
	$IN_CTL curl -sf "http://$CL_CTL_IP:9434/metrics" >"$T/ctl.prom" || fail "no controller metrics"
	promtool check metrics <"$T/ctl.prom" >"$T/lint" 2>&1 || fail "promtool on the controller: $(cat "$T/lint")"
	grep -q '^flatline_controller_agents_connected 3$' "$T/ctl.prom" || fail "agents: $(grep agents "$T/ctl.prom")"
	cp packaging/flatline-alerts.yml "$T/rules.yml"
	cat >"$T/prom.yml" <<-EOF
		global:
		  scrape_interval: 500ms
		  evaluation_interval: 500ms
		rule_files: ['$T/rules.yml']
		scrape_configs:
		  - job_name: flatline-agent
		    static_configs: [{ targets: [${targets%,}] }]
		  - job_name: flatline-controller
		    static_configs: [{ targets: ['$CL_CTL_IP:9434'] }]
	EOF
	promtool check config "$T/prom.yml" >"$T/lint" 2>&1 || fail "promtool check config: $(cat "$T/lint")"
	PPORT=$(free_port)
	$IN_CTL prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" \
		--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$T/prom.log" 2>&1 &
	on_exit "kill -TERM $!; wait $!"
	query() {
		$IN_CTL curl -sf "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
			jq -r '.data.result[0].value[1] // empty'
	}
	until_query() { # QUERY JQ-CONDITION-ON-THE-NUMBER [SECONDS]
		local end=$((SECONDS + ${3:-30})) v
		while [ $SECONDS -le $end ]; do
			v=$(query "$1" 2>/dev/null)
			[ -n "$v" ] && jq -e "($v) | $2" <<<null >/dev/null 2>&1 && return 0
			sleep 0.25
		done
		fail "Prometheus: $1 is '${v:-nothing}', want $2 ($(tail -n 3 "$T/prom.log"))"
	}
	until_query 'sum(up{job="flatline-agent"})' '. == 3'
	until_query 'up{job="flatline-controller"}' '. == 1'
	until_query 'sum(flatline_controller_node_healthy)' '. == 3'
	until_query 'sum(flatline_agent_ping_duration_seconds_count)' '. > 0'
	until_query 'count(flatline_agent_peer_rtt_seconds)' '. == 6'
	until_query 'sum(flatline_agent_peer_up)' '. == 6'
	epoch0=$(query 'flatline_controller_epoch')
	# The failover, while Prometheus scrapes.
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	cl_until 20 cl_has_event "$CL_CLOG" '.kind == "failover_end"' || fail "no failover_end"
	until_query 'sum(flatline_controller_failovers_total{cause="proc_exit",result="ok"})' '. == 1'
	until_query 'flatline_controller_detection_to_promotion_seconds_count' '. == 1'
	until_query 'flatline_controller_detection_to_writable_seconds_count' '. == 1'
	until_query 'flatline_controller_detection_to_writable_seconds_sum' '. > 0 and . < 10'
	until_query 'flatline_controller_dns_update_duration_seconds_count' '. >= 1'
	until_query 'flatline_controller_epoch' ". > $epoch0"
	until_query 'sum(flatline_agent_events_total{kind="proc_exit"})' '. >= 1'
	until_query 'time() - max(flatline_controller_last_failover_timestamp_seconds)' '. > -5 and . < 60'
	[ -z "$(query "flatline_controller_primary{node=\"$(cl_node 1)\"}")" ] ||
		fail "Prometheus still sees $(cl_node 1) as the primary"
	# The alert rules are loaded, and the failover fired one.
	$IN_CTL curl -sf "http://127.0.0.1:$PPORT/api/v1/rules" >"$T/rules.json" || fail "no rules API"
	expect_eq "alert rules loaded" "$(jq '[.data.groups[].rules[]] | length' "$T/rules.json")" \
		"$(grep -c -- '- alert:' packaging/flatline-alerts.yml)"
	end=$((SECONDS + 20))
	until $IN_CTL curl -sf "http://127.0.0.1:$PPORT/api/v1/alerts" |
		jq -e '.data.alerts[] | select(.labels.alertname == "FlatlineFailoverHappened" and .state == "firing")' >/dev/null; do
		[ $SECONDS -le $end ] || fail "FlatlineFailoverHappened did not fire"
		sleep 0.25
	done
	# SIGHUP on the controller: a broken file keeps the running configuration.
	ctl=$(cl_pid controller)
	cp "$CL_CONF" "$T/good.conf"
	sed -i '/^\[controller\]$/a node_down_after_ms = 1s' "$CL_CONF"
	kill -HUP "$ctl"
	cl_until 10 cl_has_event "$CL_CLOG" '.kind == "config_rejected"' || fail "no config_rejected"
	grep -q "failed to reload the cluster file: .*node_down_after_ms: not a number: '1s'; keeping" \
		"$CL_DIR/log/controller.out" || fail "not logged: $(tail -n 3 "$CL_DIR/log/controller.out")"
	cl_running "$ctl" || fail "the controller died on a broken file"
	$IN_CTL curl -sf "http://$CL_CTL_IP:9434/metrics" | grep -q '^flatline_controller_agents_connected 3$' ||
		fail "the controller stopped serving after the rejected reload"
	sed '/^\[controller\]$/a node_down_after_ms = 1500' "$T/good.conf" | sed 's/^ttl = 1$/ttl = 2/' >"$CL_CONF"
	kill -HUP "$ctl"
	cl_until 10 cl_has_event "$CL_CLOG" '.kind == "config_reloaded"' || fail "no config_reloaded"
	ev=$(jq -c 'select(.kind == "config_reloaded")' "$CL_CLOG" | head -n 1)
	expect_eq "changed keys" "$(jq -r .changed <<<"$ev")" 2
	expect_eq "needs a restart" "$(jq -r .needs_restart <<<"$ev")" "[dns] ttl"
	expect_eq "applied" "$(jq -r .applied <<<"$ev")" "[controller] node_down_after_ms"
	nc=$($IN_CTL timeout 2 redis-cli -h "$CL_CTL_IP" -p "$CL_CTL_PORT" --raw \
		SENTINEL master "$CL_SHARD" 2>/dev/null | grep -A1 '^down-after-milliseconds$' | tail -n 1)
	expect_eq "down-after-milliseconds after the reload" "$nc" 1500
}

TESTS=(test_version test_check_example test_check_broken test_manual test_units_verify test_deb
	test_agent_least_privilege test_agent_sd_notify test_agent_journal_levels test_agent_sighup
	test_controller_refuses_root test_prometheus_failover)
run_tests
