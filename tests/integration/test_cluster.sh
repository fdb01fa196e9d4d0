#!/usr/bin/env bash
# The failure suite: every failure from DESIGN.md against a whole cluster
# (tests/lib/cluster.sh: three namespace hosts with a server and flatline agent, the
# controller and BIND9 named in a fourth), with the DNS-following writer running. The
# server is FL_FLAVOUR's (tests/lib/flavour.sh): Redis 7.0 by default;
# test_cluster_valkey.sh runs this same file with FL_FLAVOUR=valkey (Valkey 8.0). After
# each fault the invariants are checked:
#   - exactly one primary in the shard, and it is not the failed server;
#   - DNS and the controller's Sentinel API both name it;
#   - every other reachable server replicates from it with the link up;
#   - no write acknowledged after the fault is lost, and the writes lost at all (what
#     asynchronous replication allows) were acknowledged in the last second before it
#     (the count is reported);
#   - the old primary, back, is a replica of the new one (never a second primary).
# Each test brings up its own cluster (about 1 s) and tears it down. The figures of each
# run are printed after the PASS/FAIL lines.
#
# FL_CLUSTER_LOSS_S: how long the lossy no-fault run lasts: 120 s, as the issue asks (the
# whole file then takes about 2.5 minutes here; the other tests need ~40 s together).
# CLUSTER_TESTS="test_a test_b" runs only those.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

LOSS_S=${FL_CLUSTER_LOSS_S:-120}
RESULTS=$(mktemp /tmp/flatline-cluster-results.XXXXXX)
PY=/usr/bin/python3

# cluster: a fresh cluster for this test (node ids and namespaces unique to it), the
# writer running and at least 500 writes acknowledged.
cluster() {
	need_root
	need_cmd ip nsenter nft named tsig-keygen dig jq setsid "$PY"
	export FL_NODE_PREFIX=x${BASHPID}n
	CL_KEEP=1 # $T goes anyway; keeping the logs until then helps a failing test
	cl_init "$T/cl" "flt$BASHPID"
	[ -z "$CL_FLAVOUR_WHY" ] || skip "$CL_FLAVOUR_WHY"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	OLD=1
	cl_writer_start --rate 1000 || fail "writer did not start"
	cl_until 5 writes_over 500 || fail "writer too slow: $(grep -c '^A ' "$CL_DIR/writer.out")"
}
writes_over() { [ "$(grep -c '^A ' "$CL_DIR/writer.out")" -gt "$1" ]; }

# has_peers: the agents probe each other (the agent's prober): a peer_up.
has_peers() {
	local i
	for _ in $(seq 100); do
		for i in 1 2 3; do
			grep -q '"kind":"peer_up"' "$CL_DIR/events-$(cl_node "$i").jsonl" 2>/dev/null && return 0
		done
		sleep 0.02
	done
	return 1
}
need_peers() {
	has_peers || fail "the agents log no peer_up: no ICMP peer reports"
}


ctl_ev() { cl_has_event "$CL_CLOG" "$1"; }
wait_ctl() { # JQ-FILTER [SECONDS]
	cl_until "${2:-10}" ctl_ev "$1" || fail "no controller event ($1) within ${2:-10} s: $(tail -n 5 "$CL_CLOG")"
}

# kill_at SIGNAL PID: T0 is taken right before the signal.
kill_at() {
	T0=$(cl_now_ns)
	kill -"$1" "$2"
}

# check_primary [SECONDS] [nowait]: after the failover (failover_end, unless nowait),
# the invariants on the new primary; sets NEW (its index).
check_primary() {
	local m i n
	[ "${2:-}" = nowait ] || wait_ctl '.kind == "failover_end"' "${1:-10}"
	m=$(cl_masters)
	n=$(grep -c . <<<"$m" || true)
	[ "$n" = 1 ] || fail "$n primaries: $(tr '\n' ' ' <<<"$m")"
	NEW=$m
	[ "$NEW" != "$OLD" ] || fail "the old primary is still the primary"
	cl_until 5 api_is "$NEW" || fail "Sentinel API names $(cl_api_primary), not $(cl_ip "$NEW")"
	cl_until "${DNS_WAIT_S:-5}" dns_is "$NEW" || fail "DNS names $(cl_dns), not $(cl_ip "$NEW")"
	for i in 1 2 3; do
		[ "$i" = "$NEW" ] || [ "$i" = "$OLD" ] && continue
		cl_until 5 cl_linked "$i" "$NEW" || fail "$(cl_node "$i") does not follow $(cl_node "$NEW")"
	done
}
api_is() { [ "$(cl_api_primary)" = "$(cl_ip "$1")" ]; }
dns_is() { [ "$(cl_dns)" = "$(cl_ip "$1")" ]; }

# old_back_as_replica: the old primary follows the new one (and nobody else is a master).
old_back_as_replica() {
	cl_until 10 cl_linked "$OLD" "$NEW" ||
		fail "old primary $(cl_node "$OLD") is not a replica of $(cl_node "$NEW"): role '$(cl_role "$OLD")'; $(old_why)"
	[ "$(cl_masters)" = "$NEW" ] || fail "primaries now: $(cl_masters | tr '\n' ' ')"
}

# old_why: why the old primary is not back (for a failure): what the controller said
# about it, its agent's last words and events, the server.
old_why() {
	local node
	node=$(cl_node "$OLD")
	echo "controller: $(jq -c --arg n "$node" 'select(.instance == $n or .node == $n or (.kind | test("demot|repair|repoint"))) | [.ts, .kind, .reason]' "$CL_CLOG" 2>/dev/null | tail -n 6 | tr '\n' ' ');"
	echo "agent $node log: $(tail -n 12 "$CL_DIR/log/agent-$node.out" 2>/dev/null | tr '\n' '|');"
	echo "agent events: $(jq -c '[.ts, .kind, .reason]' "$CL_DIR/events-$node.jsonl" 2>/dev/null | tail -n 6 | tr '\n' ' ');"
	cl_redis_why "$OLD"
}

# finish WHAT: stops the writer, checks the acknowledged writes against the new primary
# and the replicas, records the figures. Fails on a write lost that was acknowledged
# after the fault, or long before it.
finish() {
	local what=$1 j i n agents=()
	sleep 0.3
	cl_writer_stop
	CL_CLI_TIMEOUT=5 cl_redis "$NEW" wait 2 3000 >/dev/null || true
	CL_CLI_TIMEOUT=10 cl_redis "$NEW" lrange w 0 -1 >"$CL_DIR/final"
	for i in 1 2 3; do agents+=(--agent "$CL_DIR/events-$(cl_node "$i").jsonl"); done
	tl=(--fault-ns "$T0" --fault "$what" --old "$(cl_ip "$OLD")" --controller "$CL_CLOG"
		"${agents[@]}" --writer "$CL_DIR/writer.out" --final "$CL_DIR/final"
		--dns-name "$CL_DNS_NAME")
	"$PY" tests/lib/cltimeline.py "${tl[@]}" >&2 || true
	j=$("$PY" tests/lib/cltimeline.py "${tl[@]}" --json)
	echo "    $j" >&2
	n=$(wc -l <"$CL_DIR/final")
	for i in 1 2 3; do # every server has the same list (none synced from an empty one)
		[ "$i" = "$NEW" ] && continue
		cl_redis "$i" ping >/dev/null 2>&1 || continue
		cl_until 5 llen_is "$i" "$n" || fail "$(cl_node "$i") has $(cl_redis "$i" llen w) values, the primary $n"
	done
	[ "$(jq .lost_after_fault <<<"$j")" = 0 ] || fail "writes acknowledged after the fault were lost: $j"
	[ "$(jq '.lost_max_age_ms <= 1000' <<<"$j")" = true ] || fail "old acknowledged writes lost: $j"
	record "$(jq -r --arg w "$what" '"\($w): detected \(.detect_ms) ms, promoted \(.promoted_ms) ms, DNS \(.dns_ms) ms, writes resumed \(.first_write_ms) ms, \(.lost) of \(.acked) acknowledged writes lost"' <<<"$j")"
	J=$j
}
llen_is() { [ "$(cl_redis "$1" llen w)" = "$2" ]; }
record() { # a line of figures, under the test's name
	local f t="?"
	for f in "${FUNCNAME[@]}"; do [[ $f == test_* ]] && t=$f; done
	echo "  $t: $*" >>"$RESULTS"
}

# expect_ms J FIELD LIMIT: the figure is there and at most LIMIT.
expect_ms() {
	local v
	v=$(jq -r ".$2" <<<"$1")
	[ "$v" != null ] || fail "no $2: $1"
	[ "$(jq ".$2 <= $3" <<<"$1")" = true ] || fail "$2 = $v ms, more than $3 ms"
}

reason_is() { # the failover's reason
	local r
	r=$(jq -r 'select(.kind == "failover_start") | .reason' "$CL_CLOG" | head -n 1)
	# shellcheck disable=SC2053 # a glob on purpose
	[[ $r == $1 ]] || fail "failover reason '$r', want '$1'"
}

# ---------------------------------------------------------------------------

test_sigkill() {
	cluster
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	check_primary
	reason_is "proc_exit SIGKILL"
	cl_redis_start "$OLD" # back, empty
	old_back_as_replica
	finish "SIGKILL"
	expect_ms "$J" first_write_ms 1000
}

test_segfault() {
	cluster
	T0=$(cl_now_ns)
	cl_in 1 "$CL_CLI" -h 127.0.0.1 debug segfault >/dev/null 2>&1 || true
	check_primary
	reason_is "proc_exit SIGSEGV*"
	# "Redis 7.0.15 crashed by signal: 11", "Valkey 8.0.1 crashed by signal: 11, si_code: 1"
	grep -q "crashed by signal: 11" "$CL_DIR/$(cl_node 1)/redis.log" || fail "the server did not segfault"
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "segfault (DEBUG SEGFAULT)"
}

test_oom_kill() {
	cluster
	[ -n "$CL_CG_KIND" ] || skip "needs the memory cgroup controller (v1 or v2)"
	local lim
	lim=$(($(cl_cg_usage 1) + 48 * 1024 * 1024))
	cl_cg_limit 1 "$lim" || fail "could not limit $(cl_cg 1)"
	T0=$(cl_now_ns)
	# One 200 MB string, zero-filled at once: over the limit in a few milliseconds.
	cl_in 1 "$CL_CLI" -h 127.0.0.1 setrange big 200000000 x >/dev/null 2>&1 || true
	check_primary
	reason_is "oom_kill"
	cl_has_event "$CL_DIR/events-$(cl_node 1).jsonl" '.kind == "oom_kill" or (.kind == "proc_exit" and .oom == true)' ||
		fail "the agent did not see the OOM kill"
	echo "    memory cgroup $CL_CG_KIND, limit $((lim / 1048576)) MiB" >&2
	cl_cg_limit 1 max
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "OOM kill (cgroup $CL_CG_KIND)"
}

test_hung_then_resumed() {
	cluster
	local pid t1 t2 ask ip=$CL_CTL_IP log=$CL_CLOG lead
	pid=$(cl_pid "redis-$(cl_node 1)")
	on_exit "kill -CONT $pid"
	if [ -n "$CL_HA" ]; then # the leader fails over: ask it
		lead=$(cl_ha_leader) || fail "no leader"
		ip=$(cl_ha_ip "$lead") log=$(cl_ha_log "$lead")
	fi
	# Sentinel clients asking meanwhile (tests/lib/ask_primary.py): held questions and
	# new ones learn the new primary at the promotion, not after the repoint of the
	# stopped server (its REPLICAOF waits out its 1 s timeout). Started (and asking)
	# before the stop: with the lease revoked the promotion comes ~50 ms after it.
	cl_ctl "$PY" tests/lib/ask_primary.py "$ip" "$CL_CTL_PORT" "$CL_SHARD" "$(cl_ip 1)" \
		"$log" "$(cl_now_ns)" 15 >"$T/ask.json" 2>"$T/ask.err" &
	ask=$!
	sleep 0.5
	# A replica in a 0.25 s command (DEBUG SLEEP: alive, its agent judges nothing
	# before hung_after) as the failover begins: the selection waits for its INFO
	# (info_timeout 250 ms), so the shard has no primary for a while and a question is
	# certainly held across the promotion. Without it the failover (no lease wait) takes
	# a millisecond or two, less than a question's round trip on a loaded machine.
	timeout 5 nsenter --net="/run/netns/$(cl_ns 3)" "$CL_CLI" -h 127.0.0.1 -p 6379 \
		debug sleep 0.25 >"$T/replica-sleep.out" 2>&1 &
	sleep 0.03
	kill_at STOP "$pid"
	check_primary 10
	reason_is "proc_hung stopped"
	expect_eq "the replica's DEBUG SLEEP" "$(cat "$T/replica-sleep.out")" OK
	wait "$ask" || fail "ask_primary.py: $(cat "$T/ask.err")"
	echo "    Sentinel clients after promoted: $(cat "$T/ask.json")" >&2
	jq -e --arg ip "$(cl_ip "$NEW")" '.poll_ip == $ip and .poll_held and .poll_ms < 500' "$T/ask.json" >/dev/null ||
		fail "a held get-master-addr-by-name did not learn the new primary within 500 ms of promoted: $(cat "$T/ask.json")"
	jq -e --arg ip "$(cl_ip "$NEW")" '.fresh_ip == $ip and .fresh_ms < 500 and .fresh_before_end' "$T/ask.json" >/dev/null ||
		fail "get-master-addr-by-name after promoted not answered with the new primary at once: $(cat "$T/ask.json")"
	jq -e '.end_ms >= 950' "$T/ask.json" >/dev/null ||
		fail "the stopped old primary's repoint did not take its 1 s timeout (the test proves nothing): $(cat "$T/ask.json")"
	record "  (Sentinel clients: held $(jq .poll_ms "$T/ask.json") ms, new question $(jq .fresh_ms "$T/ask.json") ms after promoted; failover_end $(jq .end_ms "$T/ask.json") ms after)"
	sleep 1
	# SIGCONT: it wakes up believing it is the primary; it must be demoted at once.
	t1=$(cl_now_ns)
	kill -CONT "$pid"
	cl_until 5 old_is_replica || fail "the resumed old primary is still $(cl_role "$OLD")"
	t2=$(cl_now_ns)
	# The controller sees it again: it demotes it, or finds it already demoted (the
	# REPLICAOF transaction sent while it was stopped runs when it resumes).
	wait_ctl "(.kind == \"old_primary_demoted\" or .kind == \"node_up\") and .instance == \"$(cl_node 1)\"" 5
	echo "    resumed old primary a replica again $(((t2 - t1) / 1000000)) ms after SIGCONT" >&2
	old_back_as_replica
	finish "SIGSTOP"
	expect_ms "$J" first_write_ms 3000
	! grep -q "^A .* $(cl_ip "$OLD"):" <(awk -v t="$t1" '$1 == "A" && $3 > t' "$CL_DIR/writer.out") ||
		fail "writes acknowledged by the old primary after SIGCONT"
	record "  (old primary demoted $(((t2 - t1) / 1000000)) ms after SIGCONT, as seen by polling)"
}
old_is_replica() { [ "$(cl_role "$OLD")" = slave ]; }

test_host_failure() {
	cluster
	need_peers
	local p
	# The host dies: its cable first (so nothing it says gets out), then every process.
	T0=$(cl_now_ns)
	cl_link_down 1
	for p in $(ip netns pids "$(cl_ns 1)"); do kill -KILL "$p"; done
	check_primary 10
	reason_is "host_down*"
	# The host comes back as after a reboot: bpffs empty (the write lease the dead agent
	# left pinned goes with it), link up, an empty server, a new agent.
	rm -rf "/sys/fs/bpf/flatline/$(cl_node 1)"
	cl_link_up 1
	cl_redis_start "$OLD"
	cl_agent_start "$OLD"
	old_back_as_replica
	finish "host failure (link cut, processes killed)"
	expect_ms "$J" first_write_ms 5000
}

test_isolation() {
	cluster
	need_peers
	# The primary's host is cut off by nftables; its server and agent live on.
	T0=$(cl_now_ns)
	cl_isolate 1
	check_primary 10
	reason_is "host_down*"
	cl_heal 1
	old_back_as_replica
	finish "isolation (nftables)"
	expect_ms "$J" first_write_ms 5000
}

test_fast_restart() {
	cluster
	local i logs=() lines=() t1
	for i in 2 3; do
		logs[i]=$CL_DIR/$(cl_node "$i")/redis.log
		lines[i]=$(wc -l <"${logs[i]}")
	done
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	cl_redis_start "$OLD" # empty, on the same address, at once
	t1=$(cl_now_ns)
	echo "    restarted in $(((t1 - T0) / 1000000)) ms" >&2
	[ $(((t1 - T0) / 1000000)) -le 100 ] || echo "    (restart took more than 100 ms on this machine)" >&2
	# It starts as an empty master; its agent reports it and the controller demotes it.
	wait_ctl '.kind == "failover_end"'
	cl_until 10 old_is_replica || fail "the restarted old primary is still $(cl_role "$OLD")"
	t2=$(cl_now_ns)
	check_primary 10 nowait
	old_back_as_replica
	# No replica ever synchronised from the empty server. (Redis logs "Connecting to
	# MASTER" and "MASTER <-> REPLICA sync", Valkey 8 "PRIMARY" in both.)
	for i in 2 3; do
		if tail -n +"$((lines[i] + 1))" "${logs[i]}" | awk -v old="$(cl_ip "$OLD"):6379" '
			/Connecting to (MASTER|PRIMARY) / { cur = $NF }
			/sync: Finished with success|Successful partial resynchronization/ && cur == old { bad = 1 }
			END { exit !bad }'; then
			fail "$(cl_node "$i") synchronised from the restarted (empty) old primary"
		fi
	done
	finish "SIGKILL + restart"
	record "  (restarted, empty, $(((t1 - T0) / 1000000)) ms after the kill; a replica again $(((t2 - t1) / 1000000)) ms later, as seen by polling)"
}

# The controller is throttled (cpu cgroup, 1 % of a core: the kernel's smallest quota, 1 ms per 100 ms) so that a failover takes long
# enough to be interrupted, killed with SIGKILL after failover_start, and started again
# unthrottled: it must converge with one promotion.
test_controller_restart() {
	# The restarted controller must also repair DNS if the first one died between the
	# promotion and its DNS UPDATE (start-up and drift check, check_ms).
	FL_DNS_CONF="check_ms = 1000" cluster
	DNS_WAIT_S=4
	local cg='' pid last i n=0 lines=()
	if [ -d /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
		cg=/sys/fs/cgroup/cpu/$CL_NAME-ctl
		mkdir -p "$cg"
		on_exit "rmdir $cg"
		echo 100000 >"$cg/cpu.cfs_period_us"
		echo 1000 >"$cg/cpu.cfs_quota_us"
	elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		cg=/sys/fs/cgroup/$CL_NAME-ctl
		mkdir -p "$cg"
		on_exit "rmdir $cg"
		echo "1000 100000" >"$cg/cpu.max"
	fi
	if [ -n "$CL_HA" ]; then # HA mode: the leader is the one killed
		lead=$(cl_ha_leader) || fail "no leader"
		pid=$(cl_pid "controller-c$lead")
	else
		pid=$(cl_pid controller)
	fi
	[ -z "$cg" ] || echo "$pid" >"$cg/cgroup.procs"
	for i in 2 3; do lines[i]=$(wc -l <"$CL_DIR/$(cl_node "$i")/redis.log"); done
	# tail -F wakes on the write itself (inotify): the controller is killed within a
	# fraction of a millisecond of logging failover_start, usually mid-failover.
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	timeout 10 grep -q -m 1 '"kind":"failover_start"' < <(exec tail -n +1 -F "$CL_CLOG" 2>/dev/null) ||
		fail "no failover_start"
	kill -KILL "$pid"
	cl_until 5 not_running "$pid" || fail "the controller did not die"
	# Its leader thread is a zombie before its last thread (throttled, in the cpu cgroup)
	# has closed the files they share: the listening socket goes with that one.
	cl_until 5 ctl_port_free || fail "the killed controller's socket is still open"
	last=$(jq -r .kind "$CL_CLOG" | tail -n 1)
	echo "    controller killed after its event '$last'" >&2
	if [ -n "$CL_HA" ]; then
		# Another controller leads (warm: the agents reported to it all along) and
		# finishes the failover (or finds it finished) from etcd and the servers.
		cl_until 10 new_leader_ready "$lead" || fail "no other controller leads"
		CL_CLOG=$(cl_ha_log "$(cl_ha_leader)")
		cl_ha_controller_start "$lead"
	else
		cl_controller_start || fail "controller did not restart"
	fi
	# It finishes the failover (or finds it finished) from its state file and the reports.
	cl_until 10 ctl_ev "select(.kind == \"controller_ready\") | .ts > \"$(date -u -d @$((T0 / 1000000000)) +%Y-%m-%dT%H:%M:%S)\"" ||
		fail "restarted controller not ready"
	cl_until 10 one_master_not_old || fail "primaries: $(cl_masters | tr '\n' ' ')"
	check_primary 10 nowait
	# One promotion only: one server switched to master mode since the kill ("MASTER MODE
	# enabled", Valkey 8: "PRIMARY MODE enabled").
	for i in 2 3; do
		n=$((n + $(tail -n +"$((lines[i] + 1))" "$CL_DIR/$(cl_node "$i")/redis.log" | grep -cE "(MASTER|PRIMARY) MODE enabled" || true)))
	done
	[ "$n" = 1 ] || fail "$n promotions"
	[ "$(status_epoch)" = 1 ] || fail "epoch $(status_epoch) after one failover"
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "SIGKILL, controller killed mid-failover"
	record "  (first controller killed after '$last')"
}
not_running() { ! cl_running "$1"; }
new_leader_ready() { local l; l=$(cl_ha_leader) && [ "$l" != "$1" ] && cl_has_event "$(cl_ha_log "$l")" '.kind == "controller_ready"'; }
ctl_port_free() { [ -z "$(cl_ctl ss -Htln "sport = :$CL_CTL_PORT")" ]; }
status_epoch() { cl_status_json | jq '.shards[0].epoch'; }
one_master_not_old() { local m; m=$(cl_masters); [ -n "$m" ] && [ "$m" != "$OLD" ] && [ "$(wc -l <<<"$m")" = 1 ]; }

acked_since() { awk -v t="$1" '$1 == "A" && $3 > t' "$CL_DIR/writer.out" | grep -q .; }

# The primary's agent killed, its host fine: no failover (the peers still reach the host).
# Its write lease, pinned in the kernel, runs out within lease_ms (500 ms): the primary
# then answers no client (invariant 1 before availability: without its agent nothing
# renews the lease) until a new agent takes the lease back from the controller.
test_agent_killed() {
	cluster
	local t1 t2 lost
	kill_at KILL "$(cl_pid "agent-$(cl_node 1)")"
	wait_ctl ".kind == \"agent_lost\" and .instance == \"$(cl_node 1)\"" 5
	lost=$(jq -c 'select(.kind == "agent_lost")' "$CL_CLOG" | head -n 1)
	echo "    $lost" >&2
	sleep 3
	! ctl_ev '.kind == "failover_start" or .kind == "node_down"' || fail "a failover for a lost agent"
	[ "$(cl_role 2)" = slave ] && [ "$(cl_role 3)" = slave ] || fail "a replica was promoted"
	! acked_since "$((T0 + 1000000000))" ||
		fail "writes acknowledged a second after the agent died (its lease is 500 ms)"
	t1=$(cl_now_ns)
	cl_agent_start 1
	wait_ctl ".kind == \"agent_back\" and .instance == \"$(cl_node 1)\"" 5
	cl_until 5 acked_since "$t1" || fail "no write acknowledged after the new agent started"
	t2=$(awk -v t="$t1" '$1 == "A" && $3 > t { print $3; exit }' "$CL_DIR/writer.out")
	[ "$(cl_masters)" = 1 ] || fail "primaries: $(cl_masters | tr '\n' ' ')"
	cl_writer_stop
	record "agent_lost $(jq -r '.heartbeat_age_ms' <<<"$lost") ms after its last report ($(jq -r .reason <<<"$lost")), no failover; writes stopped with the lease, back $(( (t2 - t1) / 1000000 )) ms after the new agent started"
}

test_lossy_no_fault() {
	cluster
	local peers=no drops
	has_peers && peers=yes
	cl_loss 20
	sleep "$LOSS_S"
	drops=$(cl_loss_counts)
	cl_loss_off
	sleep 0.5
	cl_writer_stop
	[ "$drops" -gt 100 ] || fail "the loss rules dropped only $drops packets"
	! ctl_ev '.kind == "failover_start"' || fail "false failover: $(jq -c 'select(.kind == "failover_start")' "$CL_CLOG")"
	! ctl_ev '.kind == "node_down"' || fail "node declared down: $(jq -c 'select(.kind == "node_down")' "$CL_CLOG" | head -n 1)"
	[ "$(cl_masters)" = 1 ] || fail "primaries: $(cl_masters | tr '\n' ' ')"
	record "${LOSS_S} s at 20 % loss (peers probing: $peers): 0 failovers, $(count_events "$CL_CLOG" '.kind == "agent_lost"') agent_lost alerts, $drops packets dropped, writer $(cat "$CL_DIR/writer.json")"
}

# Each agent in turn (the primary's, then the replicas') stopped with both cores busy
# for longer than the controller waits for its next report (3 x the heartbeat_ms its
# last report said: the primary's 100, a quiet replica's replica_heartbeat_ms 500), so
# 1 s, and 2 s for a replica: its heartbeat goes stale and its peers' kernels still
# answer, so the host is not down; nothing fails over and the writes go on.
test_agent_stall_no_fault() {
	cluster
	local i pid busy=() before stall
	for _ in 1 2; do
		(while :; do :; done) &
		busy+=($!)
	done
	on_exit kill "${busy[@]}"
	for i in 1 2 3; do
		pid=$(cl_pid "agent-$(cl_node "$i")")
		before=$(count_events "$CL_CLOG" ".kind == \"agent_lost\" and .instance == \"$(cl_node "$i")\"")
		stall=$([ "$i" = 1 ] && echo 1 || echo 2)
		kill -STOP "$pid"
		sleep "$stall"
		kill -CONT "$pid"
		sleep 1.5
		[ "$(count_events "$CL_CLOG" ".kind == \"agent_lost\" and .instance == \"$(cl_node "$i")\"")" -gt "$before" ] ||
			fail "agent $i stopped for $stall s and the controller did not notice (no agent_lost)"
	done
	kill "${busy[@]}"
	local t1
	t1=$(cl_now_ns)
	cl_until 5 acked_since "$t1" || fail "no write acknowledged after the stalls"
	cl_writer_stop
	! ctl_ev '.kind == "failover_start"' || fail "false failover: $(jq -c 'select(.kind == "failover_start")' "$CL_CLOG")"
	! ctl_ev '.kind == "node_down"' || fail "node declared down: $(jq -c 'select(.kind == "node_down")' "$CL_CLOG" | head -n 1)"
	[ "$(cl_role 1)" = master ] && [ "$(cl_masters)" = 1 ] || fail "primaries: $(cl_masters | tr '\n' ' ')"
	record "each agent stopped (1 s, replicas 2 s) with both cores busy: 0 failovers, $(count_events "$CL_CLOG" '.kind == "agent_lost"') agent_lost alerts, writer $(cat "$CL_DIR/writer.json")"
}

# A 1 s slow command on the primary at the defaults: DEBUG SLEEP 1 (its command thread
# asleep in nanosleep) and a 1 s Lua busy loop (on a CPU; Valkey: 1 s of its own CPU,
# as bench/compare.sh runs it). Alive: no failover, the lease kept, nothing lost.
SLOW_LOOP='local ms = tonumber(ARGV[1]) local os_ = rawget(_G, "os")
if os_ and os_.clock then local c0 = os_.clock() repeat until (os_.clock() - c0) * 1000 >= ms return 1 end
local s = redis.call("TIME") local t0 = s[1] * 1000000 + s[2]
repeat local t = redis.call("TIME") until t[1] * 1000000 + t[2] - t0 >= ms * 1000
return 1'
test_slow_command_no_failover() {
	cluster
	local out ev n1 what
	n1=$(cl_node 1)
	T0=$(cl_now_ns)
	for what in sleep loop; do
		if [ "$what" = sleep ]; then # DEBUG is enabled for local connections only
			out=$(timeout 10 nsenter --net="/run/netns/$(cl_ns 1)" "$CL_CLI" -h 127.0.0.1 -p 6379 debug sleep 1 2>&1)
			expect_eq "DEBUG SLEEP 1" "$out" OK
		else
			out=$(CL_CLI_TIMEOUT=10 cl_redis 1 eval "$SLOW_LOOP" 0 1000 2>&1)
			expect_eq "1 s Lua loop" "$out" 1
		fi
		# Anything the second of silence set off has happened 3 s after it ended.
		sleep 3
		ev=$(jq -c 'select(.kind == "proc_busy")' "$CL_DIR/events-$n1.jsonl" | tail -n 1)
		[ -n "$ev" ] || fail "$what: no proc_busy on the primary: $(jq -c 'select(.kind | startswith("proc_"))' "$CL_DIR/events-$n1.jsonl")"
		! ctl_ev '.kind == "failover_start"' || fail "$what: false failover: $(jq -c 'select(.kind == "failover_start")' "$CL_CLOG")"
		! ctl_ev '.kind == "node_down"' || fail "$what: primary declared down: $(jq -c 'select(.kind == "node_down")' "$CL_CLOG" | head -n 1)"
		! cl_has_event "$CL_DIR/events-$n1.jsonl" '.kind == "proc_hung"' ||
			fail "$what: primary called hung: $(jq -c 'select(.kind == "proc_hung")' "$CL_DIR/events-$n1.jsonl")"
		! cl_has_event "$CL_DIR/events-$n1.jsonl" '.kind == "lease_lost"' ||
			fail "$what: lease given up: $(jq -c 'select(.kind == "lease_lost")' "$CL_DIR/events-$n1.jsonl")"
		[ "$(cl_masters)" = 1 ] || fail "$what: primaries: $(cl_masters | tr '\n' ' ')"
		record "  ($what: $(jq -c '{cause, thread_state, syscall, run_ms, window_ms}' <<<"$ev"))"
	done
	NEW=1
	finish "1 s slow commands"
	expect_eq "acknowledged writes lost" "$(jq .lost <<<"$J")" 0
}

# ---- the same on IPv6: ULA addresses, ICMPv6 probes, the controller on [::]
# with the agents reporting to its IPv6 address, DNS AAAA, the Sentinel API's IPv6 ----

# ipv6_sane: the cluster file and the answers really are IPv6.
ipv6_sane() {
	grep -q "^listen = \[::\]:" "$CL_CONF" || fail "the controller does not listen on [::]: $(grep listen "$CL_CONF")"
	[[ $(cl_dns) == fd00:77::* ]] || fail "no AAAA record: '$(cl_dns)'"
	[[ $(cl_api_primary) == fd00:77::* ]] || fail "the Sentinel API's primary is not IPv6: '$(cl_api_primary)'"
	grep -q '"kind":"peer_up".*"addr":"fd00:77::' "$CL_DIR/events-$(cl_node 2).jsonl" ||
		fail "no ICMPv6 peer_up: $(grep peer_ "$CL_DIR/events-$(cl_node 2).jsonl" | head -n 3)"
}

test_host_failure_ipv6() {
	export FL_FAMILY=6
	test_host_failure
	ipv6_sane
}

test_isolation_ipv6() {
	export FL_FAMILY=6
	test_isolation
	ipv6_sane
}

# The same on IPv6 for 30 s (FL_CLUSTER_LOSS6_S): the 120 s run is IPv4's; CI time.
test_lossy_no_fault_ipv6() {
	export FL_FAMILY=6
	LOSS_S=${FL_CLUSTER_LOSS6_S:-$((LOSS_S < 30 ? LOSS_S : 30))}
	test_lossy_no_fault
}

# A Sentinel-aware client (redis-py's Sentinel) asking the controller over IPv6 follows
# a failover; +switch-master carries the IPv6 addresses as Sentinel writes them.
test_sentinel_client_ipv6() {
	export FL_FAMILY=6
	need_root
	need_cmd ip nsenter nft redis-server redis-cli named tsig-keygen dig jq setsid "$PY"
	export FL_NODE_PREFIX=x${BASHPID}n
	CL_KEEP=1
	cl_init "$T/cl" "flt$BASHPID"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	OLD=1
	cl_writer_start --rate 1000 --sentinel "$(cl_hp "$CL_CTL_IP" "$CL_CTL_PORT")" --service "$CL_SHARD" ||
		fail "writer did not start"
	cl_until 5 writes_over 500 || fail "writer too slow"
	grep -q "^R .* \[$(cl_ip 1)\]:6379" "$CL_DIR/writer.out" || fail "the writer did not find the primary over IPv6: $(head -n 2 "$CL_DIR/writer.out")"
	cl_ctl timeout 10 redis-cli -h "$CL_CTL_IP" -p "$CL_CTL_PORT" subscribe +switch-master >"$T/sub.out" &
	on_exit "kill $! 2>/dev/null"
	sleep 0.3
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	check_primary
	grep -q "^$CL_SHARD $(cl_ip 1) 6379 $(cl_ip "$NEW") 6379\$" "$T/sub.out" ||
		fail "+switch-master not as Sentinel writes it: $(cat "$T/sub.out")"
	cl_ctl redis-cli -h "$CL_CTL_IP" -p "$CL_CTL_PORT" sentinel masters | grep -qx "$(cl_ip "$NEW")" ||
		fail "SENTINEL masters does not name $(cl_ip "$NEW")"
	# A replica's name is [v6]:port, its ip field the bare address (Sentinel's anetFormatAddr).
	for i in 2 3; do [ "$i" = "$NEW" ] || R=$i; done
	cl_ctl redis-cli -h "$CL_CTL_IP" -p "$CL_CTL_PORT" sentinel replicas "$CL_SHARD" >"$T/replicas.out"
	grep -qx "\[$(cl_ip "$R")\]:6379" "$T/replicas.out" || fail "SENTINEL replicas: no name [$(cl_ip "$R")]:6379: $(tr '\n' ' ' <"$T/replicas.out")"
	grep -qx "$(cl_ip "$R")" "$T/replicas.out" || fail "SENTINEL replicas: no ip $(cl_ip "$R")"
	cl_until 5 grep -q "^A .* \[$(cl_ip "$NEW")\]:6379" "$CL_DIR/writer.out" ||
		fail "the Sentinel client did not follow to $(cl_ip "$NEW")"
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "SIGKILL (IPv6, Sentinel client)"
	expect_ms "$J" first_write_ms 1000
}

TESTS=(test_sigkill test_segfault test_oom_kill test_hung_then_resumed test_host_failure
	test_isolation test_fast_restart test_controller_restart test_agent_killed test_lossy_no_fault
	test_agent_stall_no_fault test_slow_command_no_failover)
# The IPv6 runs with one controller (the HA harness's etcd members and controllers are IPv4).
[ -n "${FL_HA:-}" ] ||
	TESTS+=(test_host_failure_ipv6 test_isolation_ipv6 test_sentinel_client_ipv6 test_lossy_no_fault_ipv6)
# shellcheck source=tests/integration/cluster_ha_cases.sh
[ -z "$CL_HA" ] || . tests/integration/cluster_ha_cases.sh
[ -z "${CLUSTER_TESTS:-}" ] || read -ra TESTS <<<"$CLUSTER_TESTS"
run_tests
if [ -s "$RESULTS" ]; then
	echo "  figures, $FL_SERVER_NAME (T0 = the fault):"
	cat "$RESULTS"
fi
rm -f "$RESULTS"
