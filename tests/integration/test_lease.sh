#!/usr/bin/env bash
# The write lease: no server acknowledges a client write after another server
# of its shard was promoted, in every partition shape, with the agent dead or stopped.
#
# Each test brings up its own cluster (tests/lib/cluster.sh: three namespace hosts, the
# controller and named in a fourth) with a client ON THE PRIMARY'S OWN HOST (the
# "co-located" writer: tests/lib/clwriter.py --addr, RPUSH to its local server every
# millisecond, the common case of an application next to its cache), drives one fault
# into h1 (the primary) and checks the one invariant:
#   no write that h1 acknowledged after the promotion instant is missing from the new
#   primary (the instant taken as the controller's replica_selected event, which
#   comes before REPLICAOF NO ONE is sent: the earliest the new primary can take writes).
# The figures of each run are printed after the PASS/FAIL lines: writes h1 acknowledged
# after the cut, lost, acknowledged after the promotion, time to the lease's loss
# (lease_lost), time to promotion.
# LEASE_TESTS="test_a test_b" runs only those.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/partition.sh
. tests/lib/partition.sh

RESULTS=$(mktemp /tmp/flatline-lease-results.XXXXXX)
ITEST=${ITEST:-$PWD/${BUILD:-build}/itests}
PY=/usr/bin/python3

cluster() {
	need_root
	need_cmd ip nsenter nft redis-server redis-cli named tsig-keygen dig jq setsid "$PY"
	export FL_NODE_PREFIX=l${BASHPID}n
	CL_KEEP=1
	cl_init "$T/cl" "fll$BASHPID"
	# EXTRA_PEER=1: every agent also probes host 9 (not in the cluster file) with --peer.
	[ -z "${EXTRA_PEER:-}" ] || CL_AGENT_ARGS="--peer xtra=$(cl_ip 9)"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	OLD=1
	OLD_NODE=$(cl_node 1)
	OLD_LOG=$CL_DIR/events-$OLD_NODE.jsonl
	cl_until 5 cl_has_event "$OLD_LOG" '.kind == "lease_regained"' ||
		fail "h1 never took the lease: $(tail -n 3 "$OLD_LOG")"
	colo_start
}

colo_start() { pt_colo_start 1 || fail "co-located writer did not start"; }
colo_acks_since() { pt_colo_acks_since "$1"; }
cut_full() { pt_cut full 1; }
cut_in() { pt_cut in 1; }
cut_out() { pt_cut out 1; }
cut_ctl() { pt_cut ctl 1; }
cut_peers() { pt_cut peers 1; }
heal() { pt_heal 1; }

ts_ns() { date -d "$1" +%s%N; }
# ctl_ts KIND: the wall-clock ns of the controller's first KIND event ("" if none).
ctl_ts() {
	local t
	t=$(jq -r "select(.kind == \"$1\") | .ts" "$CL_CLOG" 2>/dev/null | head -n 1)
	[ -n "$t" ] && ts_ns "$t"
}
wait_ctl() { # KIND SECONDS
	cl_until "$2" cl_has_event "$CL_CLOG" ".kind == \"$1\"" ||
		fail "no controller $1 within $2 s: $(tail -n 3 "$CL_CLOG")"
}

# check_invariant: stops the writer, reads the new primary's list and checks that every
# write h1 acknowledged after the promotion instant is there. Records the figures.
check_invariant() {
	local name=$1 new=$2 out
	cl_stop colo
	# Linked: what h1 had that the new primary took is there (the figures, not the check).
	cl_until 10 cl_linked "$OLD" "$new" || echo "    (h1 not linked to h$new after 10 s)" >&2
	cl_redis "$new" lrange w 0 -1 >"$CL_DIR/final.txt" || fail "failed to read the new primary's list"
	out=$(pt_count "$CL_DIR/colo.out" "$CL_DIR/final.txt" "$T_CUT" "$T_PROM") ||
		fail "failed to count the writes"
	read -r N_CUT N_LOST N_PROM N_BAD LAST_MS <<<"$out"
	printf '%-26s acked_after_cut=%-5s lost=%-5s acked_after_promotion=%-3s missing_after_promotion=%-3s last_ack_ms=%-5s lease_lost_ms=%-5s promoted_ms=%s\n' \
		"$name" "$N_CUT" "$N_LOST" "$N_PROM" "$N_BAD" "$LAST_MS" "${LEASE_MS:--}" "${PROM_MS:--}" >>"$RESULTS"
	[ "$N_BAD" = 0 ] || fail "$N_BAD writes acknowledged by h1 after the promotion are missing from the new primary"
}

# after_cut_failover SHAPE: cut h1 with SHAPE, wait for the failover, check, heal.
after_cut_failover() {
	local shape=$1 new
	T_CUT=$(cl_now_ns)
	"cut_$shape" || fail "failed to cut h1 ($shape)"
	on_exit heal
	wait_ctl replica_selected 15
	wait_ctl promoted 5
	T_PROM=$(ctl_ts replica_selected)
	PROM_MS=$(((T_PROM - T_CUT) / 1000000))
	lease_figure
	sleep 1 # the old primary's writer keeps trying through the promotion
	new=$(jq -r 'select(.kind == "promoted") | .instance' "$CL_CLOG" | head -n 1)
	new=$(cl_idx "$new")
	heal
	${AFTER_HEAL:-}
	cl_until 15 old_is_replica "$new" || fail "h1 did not become a replica of h$new after the heal"
	check_invariant "$shape" "$new"
}
old_is_replica() { [ "$(cl_role "$OLD")" = slave ] && [ "$(cl_info "$OLD" master_host)" = "$(cl_ip "$1")" ]; }
lease_figure() {
	local t
	t=$(jq -r 'select(.kind == "lease_lost") | .ts' "$OLD_LOG" 2>/dev/null | tail -n 1)
	LEASE_MS=
	[ -n "$t" ] && LEASE_MS=$((($(ts_ns "$t") - T_CUT) / 1000000))
	return 0
}

test_full_cut() { cluster; after_cut_failover full; }
# Inbound only: h1 still sends (its echo requests reach the peers, which then count it
# alive: passive liveness), receives nothing, so it renews nothing: its lease runs out,
# and the controller does not fail over (the peers contradict host_down). The shard has
# no writable primary until the cut heals; no write is acknowledged past the lease.
test_inbound_cut() {
	local late
	cluster
	T_CUT=$(cl_now_ns)
	cut_in || fail "failed to cut h1 (in)"
	on_exit heal
	cl_until 5 cl_has_event "$OLD_LOG" '.kind == "lease_lost"' || fail "h1 kept its lease"
	lease_figure
	sleep 3
	late=$(colo_acks_since "$((T_CUT + 700000000))")
	if cl_has_event "$CL_CLOG" '.kind == "replica_selected"'; then
		fail "a failover happened: this test expects none (see its comment); check its invariant"
	fi
	heal
	printf '%-26s acked_after_cut=%-5s lease_lost_ms=%-5s acked_later_than_700ms=%s no failover (peers see h1 passive)\n' \
		in "$(colo_acks_since "$T_CUT")" "$LEASE_MS" "$late" >>"$RESULTS"
	[ "$late" = 0 ] || fail "h1 acknowledged $late writes more than 700 ms after the cut"
}
test_outbound_cut() { cluster; after_cut_failover out; }

# No failover when only the controller, or only the peers, are out of reach: the lease
# stays (peers' round trips, or the controller's answers) and writes go on.
no_failover() {
	local shape=$1 n0 n1
	T_CUT=$(cl_now_ns)
	"cut_$shape" || fail "failed to cut h1 ($shape)"
	on_exit heal
	sleep 4
	n0=$(colo_acks_since "$((T_CUT + 3000000000))")
	! cl_has_event "$CL_CLOG" '.kind == "replica_selected"' || fail "a failover started: $(tail -n 3 "$CL_CLOG")"
	! cl_has_event "$OLD_LOG" '.kind == "lease_lost"' || fail "h1 lost its lease: $(grep lease_lost "$OLD_LOG")"
	[ "$n0" -gt 300 ] || fail "h1 acknowledged only $n0 writes in the last second of the cut"
	heal
	n1=$(grep -c '^A ' "$CL_DIR/colo.out")
	printf '%-26s no failover, lease kept, %s writes acknowledged in the 4th second of the cut\n' "$shape" "$n0" >>"$RESULTS"
	[ "$n1" -gt 0 ]
}
test_controller_cut() { cluster; no_failover ctl; }
test_peers_cut() { cluster; no_failover peers; }

# Forged echo replies renew nothing: h2 and h3 stop answering echo themselves
# (icmp_echo_ignore_all), and a forger in h2's namespace (tests/lib/echo_spoof.py)
# answers each of h1's probes with its id and seq but other data. Then h1 is cut from
# the controller: with only forged replies left its lease must lapse (as with no peer
# answering at all), h2 must not count as reachable (its replication traffic keeps it
# passive, never up), and no write is acknowledged more than 700 ms after the cut.
spoofed_n() { grep -c '^spoofed ' "$CL_DIR/log/spoof.out" 2>/dev/null; }
spoofed_over() { [ "$(spoofed_n)" -gt "$1" ]; }
peer_state_after() { # NODE-LOG PEER KIND SINCE-NS
	jq -r --arg p "$2" --arg k "$3" 'select(.kind == $k and .peer == $p) | .ts' "$1" 2>/dev/null |
		while read -r t; do [ "$(ts_ns "$t")" -gt "$4" ] && echo "$t"; done | grep -q .
}
test_spoofed_echo() {
	local i late n0 h2 t_spoof
	cluster
	h2=$(cl_node 2)
	# The forger first, then the peers' own answers off: no gap without replies.
	cl_spawn spoof "$(cl_ns 2)" "$PY" "$CL_ROOT/tests/lib/echo_spoof.py" --from "$(cl_ip 1)"
	cl_until 5 spoofed_over 5 || fail "the forger answered no probe: $(tail -n 3 "$CL_DIR/log/spoof.out")"
	for i in 2 3; do cl_in "$i" sysctl -qw net.ipv4.icmp_echo_ignore_all=1 || fail "sysctl in h$i"; done
	t_spoof=$(cl_now_ns)
	# Forged replies prove nothing; h2's replication traffic still says it is alive.
	cl_until 5 peer_state_after "$OLD_LOG" "$h2" peer_passive "$t_spoof" ||
		fail "h1 still counts h2 reachable on forged replies: $(jq -c "select(.peer == \"$h2\")" "$OLD_LOG" | tail -n 2)"
	T_CUT=$(cl_now_ns)
	cut_ctl || fail "failed to cut h1 from the controller"
	on_exit heal
	cl_until 5 cl_has_event "$OLD_LOG" '.kind == "lease_lost"' ||
		fail "h1 kept its lease on forged echo replies: $(jq -c 'select(.kind | test("lease"))' "$OLD_LOG" | tail -n 2)"
	lease_figure
	n0=$(spoofed_n)
	sleep 2
	spoofed_over "$((n0 + 10))" || fail "the forger stopped answering: the check would prove nothing"
	! peer_state_after "$OLD_LOG" "$h2" peer_up "$t_spoof" ||
		fail "h1 took forged replies for h2's: $(jq -c "select(.peer == \"$h2\")" "$OLD_LOG" | tail -n 2)"
	late=$(colo_acks_since "$((T_CUT + 700000000))")
	heal
	printf '%-26s forged_replies=%-5s lease_lost_ms=%-5s acked_later_than_700ms=%s\n' \
		spoofed_echo "$(spoofed_n)" "$LEASE_MS" "$late" >>"$RESULTS"
	[ "$late" = 0 ] || fail "h1 acknowledged $late writes more than 700 ms after the cut"
	cl_stop spoof
}

# Only the shard's nodes renew: a --peer extra (host 9, a namespace on the same bridge
# that the cluster file does not name, so the controller hears nothing from it) answers
# h1's probes all along, while h1 is cut from the controller and its shard's peers. The
# lease must lapse as with no extra, and the failover that follows must find no write
# h1 acknowledged after the promotion missing.
cut_shard() {
	pt_nft 1 <<-EOF
		table inet flisolate {
			chain in { type filter hook input priority -10; policy accept; ip saddr { $CL_CTL_IP, $(cl_ip 2), $(cl_ip 3) } drop; }
			chain out { type filter hook output priority -10; policy accept; ip daddr { $CL_CTL_IP, $(cl_ip 2), $(cl_ip 3) } drop; }
		}
	EOF
}
test_peer_extra_no_renewal() {
	EXTRA_PEER=1 cluster
	cl_netns_attach "$(cl_ns 9)" veth9 "$(cl_ip 9)"
	cl_until 5 cl_has_event "$OLD_LOG" '.kind == "peer_up" and .peer == "xtra"' ||
		fail "h1 never had an answer from the --peer extra: $(jq -c 'select(.peer == "xtra")' "$OLD_LOG" | tail -n 2)"
	after_cut_failover shard
	[ -n "$LEASE_MS" ] || fail "h1 kept its lease on the --peer extra's answers"
	# (Down before its namespace was made, up since: the last word on it is peer_up.)
	[ "$(jq -r 'select(.peer == "xtra" and (.kind | test("^peer_(up|down|passive|local_fault)$"))) | .kind' "$OLD_LOG" | tail -n 1)" = peer_up ] ||
		fail "the extra stopped answering: the check would prove nothing: $(jq -c 'select(.peer == "xtra")' "$OLD_LOG" | tail -n 2)"
}

# The agent dead or stopped before the cut: the kernel lets the lease run out alone.
test_agent_killed() {
	cluster
	kill -KILL "$(cl_pid "agent-$OLD_NODE")"
	sleep 0.2
	# Without its agent h1 answers no client, the tests' redis-cli included, for good:
	# a new agent (as systemd would start) takes the lease as a replica.
	AFTER_HEAL="cl_agent_start 1"
	after_cut_failover full
	[ -z "$LEASE_MS" ] || fail "a killed agent logged lease_lost"
	[ "$(bpftool map dump pinned "/sys/fs/bpf/flatline/$OLD_NODE/lease/fl_lease" -j | jq '.[0].formatted.value.port')" = 6379 ] ||
		fail "the pinned lease map is not readable with bpftool"
}
test_agent_stopped() {
	cluster
	kill -STOP "$(cl_pid "agent-$OLD_NODE")"
	on_exit "kill -CONT $(cl_pid "agent-$OLD_NODE")"
	sleep 0.2
	AFTER_HEAL="kill -CONT $(cl_pid "agent-$OLD_NODE")"
	after_cut_failover full
}

# The primary's server SIGSTOPped (its agent gives the lease up as it reports it hung),
# the failover, then the server resumed: whatever it had read is executed, nothing is
# acknowledged. The agent moved the kernel deadline to 0 before its REPORT said
# lease=revoked, so the controller waits for no lease: the promotion follows proc_hung
# at once (no lease_wait), and h1 acknowledges nothing after it, before or after SIGCONT.
test_server_stopped() {
	local p new t_hung t_lost waited
	cluster
	p=$(cl_pid "redis-$OLD_NODE")
	T_CUT=$(cl_now_ns)
	kill -STOP "$p"
	on_exit "kill -CONT $p"
	wait_ctl replica_selected 15
	wait_ctl promoted 5
	T_PROM=$(ctl_ts replica_selected)
	PROM_MS=$(((T_PROM - T_CUT) / 1000000))
	lease_figure
	cl_has_event "$OLD_LOG" '.kind == "lease_lost" and (.reason | startswith("given_up"))' ||
		fail "the agent did not give the lease up: $(grep lease_ "$OLD_LOG" | tail -n 2)"
	t_hung=$(ts_ns "$(jq -r 'select(.kind == "proc_hung") | .ts' "$OLD_LOG" | head -n 1)")
	t_lost=$(ts_ns "$(jq -r 'select(.kind == "lease_lost") | .ts' "$OLD_LOG" | head -n 1)")
	waited=$(jq -r 'select(.kind == "failover_start") | .lease_wait_ms' "$CL_CLOG" | head -n 1)
	sleep 0.5
	kill -CONT "$p"
	new=$(cl_idx "$(jq -r 'select(.kind == "promoted") | .instance' "$CL_CLOG" | head -n 1)")
	sleep 1
	cl_until 15 old_is_replica "$new" || fail "h1 did not become a replica of h$new"
	check_invariant server_stopped "$new"
	[ "$N_PROM" = 0 ] || fail "h1 acknowledged $N_PROM writes after the promotion"
	[ "$t_lost" -le "$t_hung" ] || fail "lease_lost came after proc_hung: the lease must go first"
	[ "${waited:-x}" -lt 50 ] 2>/dev/null ||
		fail "the failover waited ${waited:-?} ms for a revoked lease: $(grep lease_wait "$CL_CLOG")"
	[ $(((T_PROM - t_hung) / 1000000)) -lt 300 ] ||
		fail "promoted $(((T_PROM - t_hung) / 1000000)) ms after proc_hung (revoked lease: no wait)"
	[ "$PROM_MS" -lt 500 ] || fail "promoted $PROM_MS ms after SIGSTOP"
}

# Availability: an agent restarted within the lease (the pinned map kept it) causes no
# write outage and no lease_lost. The lease is 500 ms here: a new agent here takes
# longer than the default 200 ms to load its programs and renew (at the default the
# restart pauses writes for the rest of it; docs/agent.md, the write lease).
test_agent_restart() {
	local t0 gap
	FL_AGENT_CONF="lease_ms = 500"
	cluster
	t0=$(cl_now_ns)
	cl_stop "agent-$OLD_NODE" KILL
	cl_agent_start 1
	sleep 2
	! cl_has_event "$OLD_LOG" '.kind == "lease_lost"' || fail "lease lost: $(grep lease_lost "$OLD_LOG")"
	gap=$("$PY" -c '
import sys
t=[int(l.split()[2]) for l in open(sys.argv[1]) if l.startswith("A ")]
t=[x for x in t if x > int(sys.argv[2])]
print(max((b-a for a,b in zip(t,t[1:])), default=10**12)//1000000)' "$CL_DIR/colo.out" "$t0")
	printf '%-26s longest gap between acknowledged writes: %s ms\n' agent_restart "$gap" >>"$RESULTS"
	[ "$gap" -lt 300 ] || fail "writes stopped for $gap ms across the agent restart"
	! cl_has_event "$CL_CLOG" '.kind == "replica_selected"' || fail "a failover started"
}

# Availability: 20 % loss on every link neither fences nor fails over.
test_lossy() {
	local n
	cluster
	cl_loss 20
	on_exit cl_loss_off
	sleep "${FL_LEASE_LOSS_S:-10}"
	cl_loss_off
	! cl_has_event "$CL_CLOG" '.kind == "replica_selected"' || fail "a failover started under 20 % loss"
	n=$(count_events "$OLD_LOG" '.kind == "lease_lost"')
	printf '%-26s 20%% loss for %s s: lease_lost %s times, no failover\n' lossy "${FL_LEASE_LOSS_S:-10}" "$n" >>"$RESULTS"
	[ "$n" = 0 ] || fail "h1 lost its lease $n times under 20 % loss"
}

# lease_ms raised 500 -> 3000 by a reload (flatline.conf(5), lease_ms): in either
# order the controller waits the longer lease before promoting. Controller first: its
# agents still run with 500 (a restart applies theirs), the controller counts 3000.
# Agents first: h1's agent restarted with 3000 (it says so in its REPORTs, key
# lease_ms), the controller not reloaded (its file still said 500 when it read it):
# a wait of ~532 ms would let h1 acknowledge writes for 2.5 s after the promotion.
lease_reload_figure() {
	[ "$PROM_MS" -ge 3000 ] || fail "promoted $PROM_MS ms after the cut: the 3000 ms lease was not waited for"
}
test_reload_lease_controller_first() {
	FL_AGENT_CONF="lease_ms = 500"
	cluster
	sed -i 's/^lease_ms = 500$/lease_ms = 3000/' "$CL_CONF"
	kill -HUP "$(cl_pid controller)"
	cl_until 5 cl_has_event "$CL_CLOG" '.kind == "config_reloaded" and .applied == "[agent] lease_ms"' ||
		fail "the controller did not apply lease_ms: $(grep config_reloaded "$CL_CLOG")"
	after_cut_failover full
	lease_reload_figure
}
test_reload_lease_agents_first() {
	local since
	FL_AGENT_CONF="lease_ms = 500"
	cluster
	sed -i 's/^lease_ms = 500$/lease_ms = 3000/' "$CL_CONF"
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	cl_stop "agent-$OLD_NODE" KILL
	cl_agent_start 1
	cl_until 5 cl_has_event "$CL_CLOG" ".kind == \"agent_connected\" and .instance == \"$OLD_NODE\" and .ts >= \"$since\"" ||
		fail "h1's agent did not come back"
	sleep 1 # its REPORTs (every 100 ms, key lease_ms = 3000) reach the controller
	after_cut_failover full
	lease_reload_figure
}

# The program itself on crafted frames (tests/integration/lease_prog_test.c).
test_lease_packets() {
	need_root
	[ -x "$ITEST/lease_prog_test" ] || skip "$ITEST/lease_prog_test not built (make integration builds it)"
	"$ITEST/lease_prog_test" >"$T/cmocka.out" 2>&1 || {
		cat "$T/cmocka.out"
		fail "BPF test runs failed"
	}
}

TESTS=(test_lease_packets test_full_cut test_inbound_cut test_outbound_cut test_controller_cut test_peers_cut
	test_spoofed_echo test_peer_extra_no_renewal
	test_agent_killed test_agent_stopped test_server_stopped test_agent_restart test_lossy
	test_reload_lease_controller_first test_reload_lease_agents_first)
[ -n "${LEASE_TESTS:-}" ] && read -ra TESTS <<<"$LEASE_TESTS"
run_tests
echo "figures (writes of the co-located client on h1; times from the cut):"
sed 's/^/  /' "$RESULTS"
rm -f "$RESULTS"
