#!/usr/bin/env bash
# Shadow mode (docs/sentinel.md, "Shadow mode"): a whole cluster
# (tests/lib/cluster.sh) with [controller] mode = shadow, its primary killed with -9.
#   test_shadow_alone:    no Sentinel. would_failover and would_promote are logged within
#                         the usual time; nothing that changes a server reaches any server
#                         (INFO commandstats of every server over its whole life: the
#                         killed one's just before the kill; MONITOR, which shows MULTI but
#                         no admin command, from before the fault); nobody is
#                         promoted; DNS unchanged; no agent holds a write lease and none
#                         opened the lease map.
#   test_shadow_sentinel: beside three real redis-sentinel (tests/lib/sentinels.sh,
#                         down-after 2000 ms). Sentinel fails over; flatline logged
#                         would_failover before Sentinel's +odown; flatline, connected as
#                         an ACL user refused every state-changing command, had none
#                         refused (ACL LOG), and MONITOR sees MULTI from Sentinel's
#                         connections only; flatline's primary then follows the servers
#                         (status, the Sentinel API); `flatline shadow-report` over the
#                         logs lists the fault with both times and both choices.
#   test_shadow_isolated_primary, test_shadow_busy_server: where an agent would act on
#                         its own (self-fence an isolated primary, SCRIPT KILL a busy
#                         one), it sends nothing; each with its control in active mode
#                         (test_active_isolated_primary_fences,
#                         test_active_busy_server_killed), where the command is sent.
#                         The controller says would_failover for each (no lease to wait
#                         for: none is held in shadow mode).
#   test_shadow_stopped_server: the primary's server SIGSTOPped, its host alive:
#                         would_failover (proc_hung stopped), nothing changed, and after
#                         SIGCONT it is up and still the primary.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/sentinels.sh
. tests/lib/sentinels.sh

# Commands that change a server, as MONITOR prints them.
CHANGE='\] "(replicaof|slaveof|config|multi|exec|failover)"|\] "(client)" "(kill|pause|unpause)"|\] "script" "kill"'

cluster() { # [active]: the controls, the same cluster not in shadow mode
	need_root
	need_cmd ip nsenter nft named tsig-keygen dig jq setsid
	export FL_NODE_PREFIX=s${BASHPID}n
	export FL_CTL_CONF="mode = ${1:-shadow}"
	CL_KEEP=1
	cl_init "$T/cl" "fls$BASHPID"
	[ -z "$CL_FLAVOUR_WHY" ] || skip "$CL_FLAVOUR_WHY"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	[ "${1:-shadow}" = shadow ] || return 0
	cl_has_event "$CL_CLOG" '.kind == "controller_start" and .mode == "shadow"' ||
		fail "the controller did not start in shadow mode: $(head -n 2 "$CL_CLOG")"
	[ "$(cl_status_json | jq -r .controller.mode)" = shadow ] || fail "status does not say shadow"
}

# monitors: MONITOR on every server, from the ctl namespace, into DIR/log/monitor-IDX.out.
# Sentinel's promotion ends with CLIENT KILL TYPE normal, which closes monitors too:
# each is started again at once.
monitors() {
	local i
	for i in 1 2 3; do
		# shellcheck disable=SC2016 # expanded by that sh
		cl_spawn "monitor-$i" "$CL_NS_CTL" sh -c \
			'while :; do "$0" -h "$1" -p 6379 monitor; sleep 0.01; done' "$CL_CLI" "$(cl_ip "$i")"
	done
	for i in 1 2 3; do
		cl_until 5 grep -q '"' "$CL_DIR/log/monitor-$i.out" ||
			fail "MONITOR on $(cl_node "$i") captured nothing"
	done
}

# no_lease: no agent holds or opened a write lease (the default lease_ms is 500).
no_lease() {
	local i node held
	held=$(cl_status_json | jq -r '[.shards[0].nodes[] | select(.lease != "-")] | length')
	[ "$held" = 0 ] || fail "an agent reports a write lease: $(cl_status_json | jq -c '[.shards[0].nodes[] | {id, lease}]')"
	for i in 1 2 3; do
		node=$(cl_node "$i")
		[ ! -e "/sys/fs/bpf/flatline/$node/lease" ] || fail "$node pinned a lease map"
	done
}

is_master() { [ "$(cl_role "$1")" = master ]; }
# changed IDX: fails if the server ever ran a command that changes it (started with
# --replicaof, a replica ran none; the test sends none).
changed() {
	local cmd
	cl_redis "$1" info commandstats | tr -d '\r' | grep -q '^cmdstat_info:' ||
		fail "no commandstats from $(cl_node "$1")"
	cmd=$(cl_redis "$1" info commandstats | tr -d '\r' |
		grep -iE '^cmdstat_(replicaof|slaveof|config|multi|exec|failover|script|client\|(kill|pause|unpause))' || true)
	[ -z "$cmd" ] || fail "$(cl_node "$1") ran: $cmd"
}
ctl_ev() { cl_has_event "$CL_CLOG" "$1"; }
wait_ctl() { cl_until "${2:-10}" ctl_ev "$1" || fail "no controller event ($1) within ${2:-10} s: $(tail -n 5 "$CL_CLOG")"; }
# would_failover IDX REASON-PREFIX: the controller says it would fail IDX's server over
# (within 10 s), once, and ends that failover as shadow; no promotion, no DNS update.
would_failover() {
	local node
	node=$(cl_node "$1")
	wait_ctl '.kind == "would_failover" and .from == "'"$node"'" and (.reason | startswith("'"$2"'"))' 10
	ctl_ev '.kind == "would_promote" and .from == "'"$node"'"' || fail "would_failover without would_promote"
	ctl_ev '.kind == "failover_abort" and .reason == "shadow"' || fail "the failover did not end as shadow"
	! ctl_ev '.kind == "lease_wait"' || fail "shadow mode waited for a lease: $(grep -E 'lease_wait|failover_blocked' "$CL_CLOG")"
	expect_eq "would_failover events" "$(count_events "$CL_CLOG" '.kind == "would_failover"')" 1
	jq -c 'select(.kind == "would_failover") | {from, reason, down_ms, elapsed_ms}' "$CL_CLOG"
}
ev_ms() { # JQ-FILTER: the first matching controller event's time, ms since the epoch
	jq -r "select($1) | .ts" "$CL_CLOG" | head -n 1 | python3 -c \
		'import sys, datetime; s = sys.stdin.read().strip(); print(int(datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp() * 1000))'
}

test_shadow_alone() {
	local i t0 tw tp cmd
	cluster
	no_lease
	monitors
	sleep 1 # a second of the controller's and agents' traffic to the primary
	changed 1
	t0=$(($(cl_now_ns) / 1000000))
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	wait_ctl '.kind == "would_promote"' 5
	tw=$(ev_ms '.kind == "would_failover"')
	tp=$(ev_ms '.kind == "would_promote"')
	echo "would_failover +$((tw - t0)) ms, would_promote +$((tp - t0)) ms after the kill"
	# The usual time of the process path (test_cluster's SIGKILL: a promotion within 1 s).
	[ $((tp - t0)) -lt 1000 ] || fail "would_promote $((tp - t0)) ms after the kill"
	ctl_ev '.kind == "would_failover" and .from == "'"$(cl_node 1)"'" and (.reason | startswith("proc_exit SIGKILL")) and (.timeline | test("failover_start"))' ||
		fail "would_failover without its reason or timeline: $(grep would_failover "$CL_CLOG")"
	ctl_ev '.kind == "would_promote" and (.instance == "'"$(cl_node 2)"'" or .instance == "'"$(cl_node 3)"'") and (.ranking | length > 0)' ||
		fail "would_promote without its node or ranking: $(grep would_promote "$CL_CLOG")"
	ctl_ev '.kind == "failover_abort" and .reason == "shadow"' || fail "the failover did not end as shadow"
	sleep 3 # long enough for a promotion, a repoint and DNS to have happened
	for i in 2 3; do
		[ "$(cl_role "$i")" = slave ] || fail "$(cl_node "$i") is $(cl_role "$i") (promoted in shadow mode)"
		changed "$i"
	done
	[ -z "$(cl_masters)" ] || fail "a master after the kill: $(cl_masters)"
	for i in 1 2 3; do
		cmd=$(grep -iE "$CHANGE" "$CL_DIR/log/monitor-$i.out" || true)
		[ -z "$cmd" ] || fail "sent to $(cl_node "$i"): $cmd"
	done
	! ctl_ev '.kind == "promoted" or .kind == "failover_end" or .kind == "dns_updated" or .kind == "replicas_repointed"' ||
		fail "shadow mode acted: $(jq -c 'select(.kind == "promoted" or .kind == "failover_end" or .kind == "dns_updated")' "$CL_CLOG")"
	[ "$(cl_dns)" = "$(cl_ip 1)" ] || fail "DNS changed: $(cl_dns)"
	[ "$(cl_status_json | jq -r .shards[0].primary)" = "$(cl_node 1)" ] || fail "the model's primary moved with no server promoted"
	no_lease
	# One would-failover, not one per report.
	expect_eq "would_failover events" "$(count_events "$CL_CLOG" '.kind == "would_failover"')" 1
	"$FL" shadow-report -c "$CL_CONF" -e "$CL_CLOG" >"$T/report.out" || fail "shadow-report failed"
	cat "$T/report.out"
	grep -q "verdict: flatline only: Sentinel did not fail over" "$T/report.out" || fail "shadow-report: no flatline-only fault"
	grep -q "^1 fault(s): 0 both, 0 Sentinel only, 1 flatline only" "$T/report.out" || fail "shadow-report: not one fault"
}

# The addresses (ip:port) of the connections Sentinel named (sentinel-…-cmd/pubsub).
sentinel_addrs() {
	local i
	for i in "$@"; do
		cl_redis "$i" client list | tr -d '\r' | grep -E ' name=sentinel-' | sed -n 's/.* addr=\([^ ]*\) .*/\1/p'
	done
}

# restricted_user: flatline's agents and controller restarted as an ACL user that may
# not run a state-changing command: one attempted is refused and written to ACL LOG
# (MONITOR does not show admin commands: REPLICAOF, CONFIG, CLIENT KILL|PAUSE).
restricted_user() {
	local i node
	for i in 1 2 3; do
		cl_redis "$i" acl setuser fl on '>shadow-test-password' '~*' '&*' +@all -@admin \
			+client\|list +client\|setname +client\|id +client\|info \
			-multi -exec -discard -script\|kill >/dev/null || fail "ACL SETUSER on $(cl_node "$i")"
		cl_redis "$i" acl log reset >/dev/null
	done
	printf '\n[redis]\nuser = fl\npassword = shadow-test-password\n' >>"$CL_CONF"
	cl_stop controller
	for i in 1 2 3; do cl_stop "agent-$(cl_node "$i")"; done
	cl_controller_start || fail "the controller did not restart"
	for i in 1 2 3; do cl_agent_start "$i"; done
	cl_until "$CL_WAIT_S" cl_healthy || fail "not healthy as user fl: $(cl_status_json)"
	for i in 1 2 3; do
		connected_as_fl "$i" || fail "flatline is not connected to $(cl_node "$i") as fl"
	done
	# The detector can fail: a REPLICAOF as fl is refused and logged.
	cl_redis 2 --user fl --pass shadow-test-password replicaof no one 2>&1 | grep -q NOPERM ||
		fail "user fl may run REPLICAOF"
	[ -n "$(acl_refused 2)" ] || fail "ACL LOG did not record the refused REPLICAOF"
	cl_redis 2 acl log reset >/dev/null
	[ "$(cl_role 2)" = slave ] || fail "the control REPLICAOF went through"
}
connected_as_fl() { cl_redis "$1" client list | grep -q ' user=fl '; }
# acl_refused IDX: what ACL LOG says user fl was refused on that server.
acl_refused() {
	local log
	log=$(cl_redis "$1" acl log | tr -d '\r')
	if grep -x -A1 username <<<"$log" | grep -qx fl; then tr '\n' ' ' <<<"$log"; fi
	return 0
}

test_shadow_sentinel() {
	local i t0 tw todown new newid cmd ours
	cluster
	restricted_user
	# down-after 2000 ms, above Sentinel's own reconnect period (1 s between
	# attempts): at 1000 ms a Sentinel whose first link to the new master is slow
	# calls it down and fails over a second time (seen one run in six).
	start_sentinels 2000 || fail "the sentinels did not start"
	monitors
	sentinel_addrs 1 2 3 >"$T/sentinel-addrs"
	[ -z "$(acl_refused 1)" ] || fail "refused on $(cl_node 1) before the kill: $(acl_refused 1)"
	t0=$(($(cl_now_ns) / 1000000))
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	wait_ctl '.kind == "would_promote"' 5
	# Sentinel fails over.
	cl_until 30 sh -c "grep -h '+switch-master' $CL_DIR/sentinel-*/sentinel.log | grep -q ." ||
		fail "Sentinel did not fail over: $(tail -n 5 "$CL_DIR/sentinel-1/sentinel.log")"
	new=$(grep -h '+switch-master' "$CL_DIR"/sentinel-*/sentinel.log | head -n 1 | awk '{ print $(NF - 1) }')
	newid=$(cl_node "$(cl_idx_of_ip "$new")")
	cl_until 10 is_master "$(cl_idx_of_ip "$new")" || fail "$new is not a master"
	# flatline's primary follows the servers: status and the Sentinel API name it.
	wait_ctl '.kind == "primary_followed" and .instance == "'"$newid"'"' 10
	[ "$(cl_status_json | jq -r .shards[0].primary)" = "$newid" ] || fail "status does not name $newid"
	[ "$(cl_api_primary)" = "$new" ] || fail "the Sentinel API names $(cl_api_primary), not $new"
	sleep 2 # Sentinel repoints the other replica
	sentinel_addrs 2 3 >>"$T/sentinel-addrs"
	# flatline decided first.
	tw=$(ev_ms '.kind == "would_failover"')
	todown=$(python3 - "$CL_DIR" <<-'EOF'
		import glob, sys, datetime
		ts = []
		for f in glob.glob(sys.argv[1] + "/sentinel-*/sentinel.log"):
		    for l in open(f):
		        if "+odown master" in l:
		            p = l.split()
		            d = datetime.datetime.strptime(" ".join(p[1:5]), "%d %b %Y %H:%M:%S.%f")
		            ts.append(int(d.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000))
		print(min(ts) if ts else 0)
	EOF
	)
	echo "would_failover +$((tw - t0)) ms, Sentinel's first +odown +$((todown - t0)) ms after the kill; Sentinel chose $newid"
	[ "$todown" -gt 0 ] || fail "no +odown in the sentinels' logs"
	[ "$tw" -lt "$todown" ] || fail "would_failover ($tw) not before Sentinel's +odown ($todown)"
	# Nothing from flatline's connections: every state-changing command came from a
	# connection Sentinel named, and there were some (the capture can see them).
	for i in 1 2 3; do
		grep -iE "$CHANGE" "$CL_DIR/log/monitor-$i.out" >>"$T/changes" || true
	done
	ours=$(grep -vFf <(sed 's/.*/ &]/' "$T/sentinel-addrs") "$T/changes" || true)
	[ -z "$ours" ] || fail "state-changing commands not from Sentinel: $ours"
	for i in 2 3; do
		[ -z "$(acl_refused "$i")" ] || fail "flatline tried on $(cl_node "$i"): $(acl_refused "$i")"
		cl_until 5 connected_as_fl "$i" || fail "flatline no longer connected to $(cl_node "$i") as fl"
	done
	! ctl_ev '.kind == "promoted" or .kind == "dns_updated" or .kind == "replicas_repointed" or .kind == "old_primary_demoted"' ||
		fail "shadow mode acted"
	[ "$(cl_dns)" = "$(cl_ip 1)" ] || fail "DNS changed: $(cl_dns)"
	no_lease
	"$FL" shadow-report -c "$CL_CONF" -e "$CL_CLOG" \
		-s "$CL_DIR/sentinel-1/sentinel.log" -s "$CL_DIR/sentinel-2/sentinel.log" \
		-s "$CL_DIR/sentinel-3/sentinel.log" >"$T/report.out" || fail "shadow-report failed"
	cat "$T/report.out"
	grep -q "^fault 1: primary $(cl_ip 1):6379 ($(cl_node 1))" "$T/report.out" || fail "shadow-report: not the fault of $(cl_node 1)"
	grep -qE "^  sentinel: sdown \+[0-9]+ ms, odown \+[0-9]+ ms, switch-master \+[0-9]+ ms, chose $new:6379 \($newid\)" "$T/report.out" ||
		fail "shadow-report: Sentinel's times or choice missing"
	grep -qE "^  flatline: node_down \+[0-9]+ ms, would_failover \+[0-9]+ ms \(proc_exit SIGKILL[^)]*\), would_promote \+[0-9]+ ms, would choose ($(cl_ip 2):6379 \($(cl_node 2)\)|$(cl_ip 3):6379 \($(cl_node 3)\))(;|$)" "$T/report.out" ||
		fail "shadow-report: flatline's times or choice missing"
	grep -q "followed $new:6379 ($newid)" "$T/report.out" || fail "shadow-report: not followed"
	grep -qE "^  verdict: both; flatline would have promoted [0-9]+ ms before Sentinel's switch-master; (the same|a different) replica" "$T/report.out" ||
		fail "shadow-report: no verdict"
	grep -q "^1 fault(s): 1 both, 0 Sentinel only, 0 flatline only" "$T/report.out" || fail "shadow-report: not one fault"
}

# --- What an agent would do on its own: self-fence, SCRIPT KILL -------------------

agent_log() { echo "$CL_DIR/events-$(cl_node "$1").jsonl"; }
agent_ev() { cl_has_event "$(agent_log "$1")" "$2"; }
since() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }
# local_cli IDX ARGS...: the CLI on the host's own loopback, as a client on that host
# (it answers while the host is cut off); bounded as cl_redis is.
local_cli() {
	local i=$1
	shift
	cl_in "$i" timeout "${CL_CLI_TIMEOUT:-1}" "$CL_CLI" -h 127.0.0.1 -p 6379 "$@"
}
# write_local IDX N: a SET from the host's own loopback, acknowledged within 1 s.
write_local() { [ "$(local_cli "$1" set "shadow:$2" "$2" 2>/dev/null)" = OK ]; }
# changes IDX: the state-changing commands INFO commandstats counts on that server,
# asked on its host's loopback (the server's own view; fails if INFO does not answer).
changes() {
	local st
	st=$(local_cli "$1" info commandstats | tr -d '\r')
	grep -q '^cmdstat_info:' <<<"$st" || fail "no commandstats from $(cl_node "$1") on its loopback"
	grep -iE '^cmdstat_(replicaof|slaveof|config|multi|exec|failover|script|client\|(kill|pause|unpause))' <<<"$st" |
		cut -d, -f1 || true
}
# cut_seen IDX SINCE: its agent logged the controller lost and both peers down (or
# passive: their packets seen, no round trip) since then.
cut_seen() {
	local j
	agent_ev "$1" '.kind == "controller_lost" and .ts >= "'"$2"'"' || return 1
	for j in 1 2 3; do
		[ "$j" = "$1" ] || agent_ev "$1" '(.kind == "peer_down" or .kind == "peer_passive") and .peer == "'"$(cl_node "$j")"'" and .ts >= "'"$2"'"' ||
			return 1
	done
}

# The isolated primary: host 1 cut off from the controller and both peers (nftables on
# its eth0), a client on its own loopback writing every 100 ms. Active, its agent
# pauses writes (CLIENT PAUSE WRITE) self_fence_after_ms (2 x 250 ms here) after its
# last answer from the controller, and its write lease lapses before that
# (test_active_isolated_primary_fences, the control). In shadow mode: every write
# acknowledged from the cut until 2 s after the agent saw the controller lost and both
# peers down; the server ran no CLIENT PAUSE or CONFIG (INFO commandstats on its
# loopback, while cut off and after); no self_fenced; no lease held or pinned; the
# controller judged it down and nothing changed after the heal.
test_shadow_isolated_primary() {
	local i n=0 end t0 st
	cluster
	no_lease
	changed 1
	write_local 1 0 || fail "a write on $(cl_node 1)'s own host was not acknowledged before the cut"
	t0=$(since)
	cl_isolate 1
	end=$((SECONDS + 15))
	until cut_seen 1 "$t0"; do
		n=$((n + 1))
		write_local 1 "$n" || fail "write $n on the cut-off primary was not acknowledged within 1 s"
		[ $SECONDS -le $end ] || fail "$(cl_node 1)'s agent did not see the cut within 15 s: $(jq -c 'select(.kind | test("^(peer|controller)_"))' "$(agent_log 1)" | tail -n 4)"
		sleep 0.1
	done
	end=$((SECONDS + 2))
	while [ $SECONDS -le $end ]; do
		n=$((n + 1))
		write_local 1 "$n" || fail "write $n on the cut-off primary was not acknowledged within 1 s ($(jq -c 'select(.kind | test("fence|lease"))' "$(agent_log 1)" | tail -n 2))"
		sleep 0.1
	done
	echo "$n writes on $(cl_node 1)'s loopback acknowledged while it was cut off"
	st=$(changes 1)
	[ -z "$st" ] || fail "$(cl_node 1), cut off, ran: $st"
	! agent_ev 1 '.kind == "self_fenced"' || fail "the agent self-fenced in shadow mode: $(grep self_fenced "$(agent_log 1)")"
	[ ! -e "/sys/fs/bpf/flatline/$(cl_node 1)/lease" ] || fail "$(cl_node 1) pinned a lease map"
	# The controller judged the fault and said what it would do.
	wait_ctl '.kind == "node_down" and .instance == "'"$(cl_node 1)"'"' 10
	would_failover 1 host_down
	cl_heal 1
	cl_until 10 agent_ev 1 '.kind == "controller_connected" and .ts >= "'"$t0"'"' ||
		fail "$(cl_node 1)'s agent did not reach the controller after the heal"
	write_local 1 "$((n + 1))" || fail "a write after the heal was not acknowledged"
	is_master 1 || fail "$(cl_node 1) is $(cl_role 1) after the heal"
	for i in 1 2 3; do changed "$i"; done
	for i in 2 3; do
		[ "$(cl_role "$i")" = slave ] || fail "$(cl_node "$i") is $(cl_role "$i") (promoted in shadow mode)"
	done
	! ctl_ev '.kind == "promoted" or .kind == "dns_updated" or .kind == "replicas_repointed"' ||
		fail "shadow mode acted"
	no_lease
}

# The control: the same cut in active mode, with lease_ms = 0 so that the self-fence
# alone holds the writes and the server still answers its loopback. The agent logs
# self_fenced, a write from the loopback is held, and the server ran CLIENT PAUSE.
test_active_isolated_primary_fences() {
	local st
	export FL_AGENT_CONF="lease_ms = 0"
	cluster active
	write_local 1 0 || fail "a write on $(cl_node 1)'s own host was not acknowledged before the cut"
	st=$(changes 1)
	! grep -q '^cmdstat_client|pause:' <<<"$st" || fail "$(cl_node 1) ran CLIENT PAUSE before the cut: $st"
	cl_isolate 1
	cl_until 10 agent_ev 1 '.kind == "self_fenced"' || fail "no self_fenced in active mode: $(tail -n 5 "$(agent_log 1)")"
	! write_local 1 1 || fail "a write was acknowledged on the fenced primary"
	st=$(changes 1)
	echo "active mode, $(cl_node 1) cut off: $st"
	grep -q '^cmdstat_client|pause:calls=' <<<"$st" || fail "no CLIENT PAUSE in commandstats: $st"
}

# busy IDX: EVAL "while true do end" 0 on that server (from the ctl namespace, its
# output in log/eval-IDX.out; busy-reply-threshold 500 ms); returns once it answers -BUSY.
is_busy() { cl_redis "$1" ping 2>&1 | grep -q BUSY; }
busy() {
	cl_spawn "eval-$1" "$CL_NS_CTL" "$CL_CLI" -h "$(cl_ip "$1")" -p 6379 eval 'while true do end' 0
	cl_until 5 is_busy "$1" || fail "$(cl_node "$1") is not busy: $(cl_redis "$1" ping 2>&1)"
}
script_kill_calls() {
	cl_redis "$1" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_script|kill:calls=\([0-9]*\),.*/\1/p'
}

# The busy server: the primary runs a script that never ends, past busy_max_ms
# (1500 ms here). Active, the agent sends SCRIPT KILL then
# (test_active_busy_server_killed, the control). In shadow mode: it logs that it does
# not, judges the server hung (cause busy) and the controller node_down; 2 s later the
# script still runs (PING: -BUSY, the client still waiting) and no script_kill; the
# test's own SCRIPT KILL then ends it, and commandstats counts that one only, and
# nothing else that changes a server. (MONITOR does not show a SCRIPT KILL run during
# the script, the control showed: commandstats is the server's view here.)
test_shadow_busy_server() {
	local i node st
	export FL_AGENT_CONF="busy_max_ms = 1500" CL_REDIS_EXTRA="--busy-reply-threshold 500"
	cluster
	node=$(cl_node 1)
	changed 1
	busy 1
	cl_until 10 grep -q "busy for [0-9]* ms: shadow mode, not sending SCRIPT KILL" "$CL_DIR/log/agent-$node.out" ||
		fail "the agent did not log the SCRIPT KILL it does not send: $(tail -n 3 "$CL_DIR/log/agent-$node.out")"
	cl_until 5 agent_ev 1 '.kind == "proc_hung"' || fail "the script past busy_max_ms is not hung: $(tail -n 3 "$(agent_log 1)")"
	wait_ctl '.kind == "node_down" and .instance == "'"$node"'" and .reason == "proc_hung busy"' 10
	would_failover 1 "proc_hung busy"
	sleep 2 # an active agent's SCRIPT KILL would have been answered long ago
	is_busy 1 || fail "the script ended: $(cl_redis 1 ping 2>&1)"
	cl_alive "eval-1" || fail "the EVAL returned: $(cat "$CL_DIR/log/eval-1.out")"
	! agent_ev 1 '.kind == "script_kill"' || fail "the agent logged a SCRIPT KILL: $(grep script_kill "$(agent_log 1)")"
	# The test ends it.
	[ "$(cl_redis 1 script kill)" = OK ] || fail "the test's SCRIPT KILL failed"
	cl_until 5 grep -q 'killed by user' "$CL_DIR/log/eval-1.out" || fail "the EVAL did not end: $(cat "$CL_DIR/log/eval-1.out")"
	cl_until 5 cl_redis_ping 1 || fail "$node does not answer after the kill"
	expect_eq "SCRIPT KILL calls on $node" "$(script_kill_calls 1)" 1
	st=$(changes 1)
	st=$(grep -v '^cmdstat_script|kill:' <<<"$st" || true)
	[ -z "$st" ] || fail "$node ran: $st"
	for i in 2 3; do
		changed "$i"
		[ "$(cl_role "$i")" = slave ] || fail "$(cl_node "$i") is $(cl_role "$i") (promoted in shadow mode)"
	done
	no_lease
}

# The control: the same script in active mode; the agent sends SCRIPT KILL past
# busy_max_ms (its script_kill event: OK), the EVAL ends killed, commandstats counts
# one the test did not send.
test_active_busy_server_killed() {
	local ev
	export FL_AGENT_CONF="busy_max_ms = 1500" CL_REDIS_EXTRA="--busy-reply-threshold 500"
	cluster active
	busy 1
	cl_until 10 agent_ev 1 '.kind == "script_kill"' || fail "no SCRIPT KILL in active mode: $(tail -n 3 "$CL_DIR/log/agent-$(cl_node 1).out")"
	ev=$(jq -c 'select(.kind == "script_kill")' "$(agent_log 1)" | head -n 1)
	echo "active mode: $ev"
	expect_eq "SCRIPT KILL reply" "$(jq -r .reply <<<"$ev")" OK
	cl_until 5 grep -q 'killed by user' "$CL_DIR/log/eval-1.out" || fail "the EVAL was not killed: $(cat "$CL_DIR/log/eval-1.out")"
	expect_eq "SCRIPT KILL calls (the test sent none)" "$(script_kill_calls 1)" 1
}

# The stopped server: the primary's redis-server SIGSTOPped (its host and agent alive,
# its peers still hearing that host). The agent judges it hung (cause stopped), the
# controller says would_failover at once (an active controller with the lease off
# would promote then; with the lease, it waits for it to lapse) and changes nothing;
# after SIGCONT the server answers, is still the only master, ran nothing.
test_shadow_stopped_server() {
	local i node pid
	cluster
	node=$(cl_node 1)
	pid=$(cl_pid "redis-$node") || fail "no pid for $node's server"
	changed 1
	kill -STOP "$pid"
	cl_until 5 agent_ev 1 '.kind == "proc_hung" and .cause == "stopped"' ||
		fail "the stopped server is not hung (stopped): $(tail -n 3 "$(agent_log 1)")"
	wait_ctl '.kind == "node_down" and .instance == "'"$node"'" and .reason == "proc_hung stopped"' 10
	would_failover 1 "proc_hung stopped"
	kill -CONT "$pid"
	cl_until 10 cl_redis_ping 1 || fail "$node does not answer after SIGCONT"
	wait_ctl '.kind == "node_up" and .instance == "'"$node"'"' 10
	is_master 1 || fail "$node is $(cl_role 1) after SIGCONT"
	for i in 1 2 3; do changed "$i"; done
	for i in 2 3; do
		[ "$(cl_role "$i")" = slave ] || fail "$(cl_node "$i") is $(cl_role "$i") (promoted in shadow mode)"
	done
	! ctl_ev '.kind == "promoted" or .kind == "dns_updated" or .kind == "replicas_repointed"' ||
		fail "shadow mode acted"
	expect_eq "would_failover events" "$(count_events "$CL_CLOG" '.kind == "would_failover"')" 1
	no_lease
}

TESTS=(test_shadow_alone test_shadow_sentinel test_shadow_isolated_primary test_active_isolated_primary_fences
	test_shadow_busy_server test_active_busy_server_killed test_shadow_stopped_server)
run_tests
