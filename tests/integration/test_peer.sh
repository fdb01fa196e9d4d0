#!/usr/bin/env bash
# Host-failure detection: ICMP echo timed in the kernel, the verdict on
# each peer. Every test builds its own namespaces: a bridge namespace and two
# "hosts" (a: the prober, b: the peer) joined to it by veth pairs, addresses in
# 198.18.0.0/24 (RFC 2544's benchmarking range) that exist only inside them. No
# packet leaves these namespaces; all are removed by the cleanup trap.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh

ITEST=${ITEST:-$PWD/${BUILD:-build}/itests}
PEER_LOSS_S=${PEER_LOSS_S:-20} # the issue asks 60 s; FL_LONG=1 runs that, at 1000 ms too

A_IP=198.18.0.1
B_IP=198.18.0.2
# IPv6: a ULA prefix (RFC 4193) that exists only inside the test's namespaces.
A6_IP=fd00:f1::1
B6_IP=fd00:f1::2

# make_topo: namespaces $P-br, $P-a, $P-b; sets P, NA, NB (nsenter prefixes).
make_topo() {
	need_cmd nft jq ping
	P=flp$BASHPID
	make_hosts "$P" 198.18.0 fd00:f1::
}

# start_probe NAME ARGS...: flatline probe in namespace a, peer b; waits for
# probe_start. The node id is NAME-$P, unique to this run (another run of these
# tests may go on at the same time). Sets PROBE_PID, LOG, NODE.
start_probe() {
	NODE=$1-$P
	shift
	LOG=$T/events-$NODE.jsonl
	$NA "$FL" probe --node "$NODE" --event-log "$LOG" --peer "b=${PEER_ADDR:-$B_IP}" "$@" 2>"$T/probe-$NODE.err" &
	PROBE_PID=$!
	on_exit "kill -CONT $PROBE_PID; kill -TERM $PROBE_PID; wait $PROBE_PID; rm -rf /sys/fs/bpf/flatline/$NODE"
	wait_event "$LOG" ".kind == \"probe_start\" and .agent_pid == $PROBE_PID" >/dev/null || {
		cat "$T/probe-$NODE.err" >&2
		fail "probe $NODE did not start"
	}
}

stop_probe() {
	kill -TERM "$PROBE_PID"
	wait "$PROBE_PID" || fail "probe exited with status $?"
}

wait_up() { # [LOG]: the first peer_up, printed
	wait_event "${1:-$LOG}" '.kind == "peer_up" and .peer == "b"' || {
		cat "$T"/probe-*.err >&2
		fail "no peer_up for b"
	}
}

now_ns() { date +%s%N; }
ts_ns() { date -d "$(jq -r .ts <<<"$1")" +%s%N; }

# The peer's traffic dropped on both directions (nftables in its namespace).
isolate_b() {
	$NB nft -f - <<-EOF
		table inet fltest {
			chain in { type filter hook input priority 0; policy drop; }
			chain out { type filter hook output priority 0; policy drop; }
		}
	EOF
}
heal_b() { $NB nft delete table inet fltest; }

test_icmp_packets() {
	need_root
	[ -x "$ITEST/icmp_prog_test" ] || skip "$ITEST/icmp_prog_test not built (make integration builds it)"
	"$ITEST/icmp_prog_test" >"$T/cmocka.out" 2>&1 || {
		cat "$T/cmocka.out"
		fail "BPF test runs failed"
	}
}

test_up_table_and_pins() {
	make_topo
	need_cmd bpftool
	start_probe pt1
	ev=$(wait_up)
	expect_eq liveness "$(jq -r .liveness <<<"$ev")" reply
	expect_eq prev "$(jq -r .prev <<<"$ev")" unknown
	expect_eq addr "$(jq -r .addr <<<"$ev")" $B_IP
	[ "$(jq -r .rtt_us <<<"$ev")" != null ] || fail "no kernel RTT in $ev"
	ev=$(wait_event "$LOG" '.kind == "probe_start"')
	expect_eq "tc mode" "$(jq -r .tc <<<"$ev")" tcx
	sleep 0.5
	"$FL" peers --node "$NODE" >"$T/peers.txt" || fail "flatline peers failed"
	grep -Eq "^$B_IP +[0-9]+ +[0-9]+ +0 " "$T/peers.txt" || fail "no row for $B_IP: $(cat "$T/peers.txt")"
	row=$("$FL" peers --node "$NODE" --json)
	[ "$(jq -r .replied <<<"$row")" -ge 3 ] || fail "replied < 3: $row"
	[ "$(jq -r .lost <<<"$row")" -eq 0 ] || fail "loss on a clean link: $row"
	[ "$(jq -r .packet_age_ms <<<"$row")" -lt 500 ] || fail "packet age: $row"
	# BTF: bpftool prints the key as the address's bytes.
	bpftool map dump pinned /sys/fs/bpf/flatline/$NODE/fl_peers | tr -d ' \n' | grep -q '"addr":\[198,18,0,2\]' ||
		fail "fl_peers does not pretty-print: $(bpftool map dump pinned /sys/fs/bpf/flatline/$NODE/fl_peers)"
	bpftool prog show name fl_icmp_ingress >/dev/null 2>&1 && bpftool prog show | grep -q 'name fl_icmp_ingress' ||
		fail "fl_icmp_ingress not loaded"
	# A second pin keeps the map readable after the prober is gone.
	keep=/sys/fs/bpf/fltest-$BASHPID
	bpftool map pin pinned /sys/fs/bpf/flatline/$NODE/fl_peers "$keep"
	on_exit "rm -f $keep"
	stop_probe
	[ ! -e /sys/fs/bpf/flatline/$NODE ] || fail "pins left after SIGTERM"
	expect_detached "$keep" "after SIGTERM"
}

# rx_packets of the peer in a pinned fl_peers map (bytes 40-47 of the value).
rx_packets() {
	bpftool map dump pinned "$1" -j | jq '.[0].formatted.value.rx_packets'
}

# expect_detached PIN WHEN: traffic from the peer no longer reaches our programs.
# (Other agents may have fl_icmp programs loaded on this machine: look at ours.)
expect_detached() {
	local r0 r1
	r0=$(rx_packets "$1")
	[[ $r0 =~ ^[0-9]+$ ]] && [ "$r0" -gt 0 ] || fail "cannot read rx_packets from $1: '$r0'"
	$NA ping -c 3 -i 0.2 -W 1 $B_IP >/dev/null || fail "the peer does not answer ping"
	r1=$(rx_packets "$1")
	expect_eq "packets from the peer our programs saw $2" "$r1" "$r0"
}

# expect_down_within EV T0_NS LIMIT_MS: the event came at most LIMIT_MS after T0.
expect_within() {
	local ev=$1 t0=$2 limit=$3 dt
	dt=$((($(ts_ns "$ev") - t0) / 1000000))
	echo "    detected in $dt ms (limit $limit)"
	[ "$dt" -le "$limit" ] || fail "took $dt ms, more than $limit ms: $ev"
}

# probe_up FAMILY NAME: the topology, and a prober of the peer's IPv4 (4) or IPv6
# (6) address every 100 ms, down after 1 s, once the peer is up.
probe_up() {
	local addr=$B_IP
	[ "$1" = 4 ] || addr=$B6_IP
	make_topo
	PEER_ADDR=$addr start_probe "p$1$2" --probe-interval-ms 100 --peer-down-after-ms 1000
	wait_up >/dev/null
	sleep 0.3
}

# Host failure: the peer's link cut (peer_down within 1.2 s), then back (peer_up
# within 1 s). FAMILY 4, or 6: the same over ICMPv6 to the peer's IPv6 address.
link_down_and_back() {
	local fam=$1
	probe_up "$fam" t2
	t0=$(now_ns)
	ip -n "$P-b" link set eth0 down
	ev=$(wait_event "$LOG" '.kind == "peer_down"' 5) || fail "no peer_down after the link went down"
	expect_within "$ev" "$t0" 1200
	expect_eq local_fault "$(jq -r .local_fault <<<"$ev")" false
	[ "$(jq -r .left_in_window <<<"$ev")" -ge 3 ] || fail "the probes did not leave: $ev"
	expect_eq loss_ratio "$(jq -r .loss_ratio <<<"$ev")" 1
	if [ "$fam" = 4 ]; then
		expect_eq prev "$(jq -r .prev <<<"$ev")" up
		expect_eq liveness "$(jq -r .liveness <<<"$ev")" none
		[ "$(jq -r .probes_in_window <<<"$ev")" -ge 3 ] || fail "fewer than 3 probes: $ev"
		[ "$(jq -r .reply_age_ms <<<"$ev")" -ge 1000 ] || fail "reply_age_ms < 1000: $ev"
	fi
	t0=$(now_ns)
	ip -n "$P-b" link set eth0 up
	[ "$fam" = 4 ] || ip -n "$P-b" addr replace $B6_IP/64 dev eth0 nodad
	ev=$(wait_event "$LOG" '.kind == "peer_up" and .prev == "down"' 5) || fail "no peer_up after the link came back"
	expect_within "$ev" "$t0" 1000
	[ "$fam" = 6 ] || expect_eq "peer_down events" "$(count_events "$LOG" '.kind == "peer_down"')" 1
}
test_link_down_and_back() { link_down_and_back 4; }

# Isolation: every packet of the peer dropped (nftables, inet: both families), then
# let through again. FAMILY 4 or 6 as above.
nft_drop_and_heal() {
	local fam=$1
	probe_up "$fam" t3
	t0=$(now_ns)
	isolate_b
	on_exit "$NB nft delete table inet fltest"
	ev=$(wait_event "$LOG" '.kind == "peer_down"' 5) || fail "no peer_down with the peer's traffic dropped"
	expect_within "$ev" "$t0" 1200
	expect_eq local_fault "$(jq -r .local_fault <<<"$ev")" false
	t0=$(now_ns)
	heal_b
	ev=$(wait_event "$LOG" '.kind == "peer_up" and .prev == "down"' 5) || fail "no peer_up after the drop was lifted"
	expect_within "$ev" "$t0" 1000
	[ "$fam" = 6 ] || expect_eq liveness "$(jq -r .liveness <<<"$ev")" reply
}
test_nft_drop_and_heal() { nft_drop_and_heal 4; }

# Our own link down: the route is gone and the probes cannot leave. That says
# nothing about the peer: peer_local_fault, never peer_down.
test_own_link_local_fault() {
	make_topo
	start_probe pt4 --probe-interval-ms 100 --peer-down-after-ms 1000
	wait_up >/dev/null
	ip -n "$P-a" link set eth0 down
	ev=$(wait_event "$LOG" '.kind == "peer_local_fault"' 5) || fail "no peer_local_fault with our own link down"
	expect_eq state "$(jq -r .state <<<"$ev")" local_fault
	expect_eq "peer_down events" "$(count_events "$LOG" '.kind == "peer_down"')" 0
	expect_eq local_fault "$(jq -r .local_fault <<<"$ev")" true
	expect_eq left_in_window "$(jq -r .left_in_window <<<"$ev")" 0
	ip -n "$P-a" link set eth0 up
	ip -n "$P-a" addr replace $A_IP/24 dev eth0
	wait_event "$LOG" '.kind == "peer_up" and .prev == "local_fault"' 5 >/dev/null || fail "no peer_up after our link came back"
}

# ---- IPv6: the same detection with ICMPv6 echo, ULA addresses ----

# The peer up over ICMPv6, and `flatline peers` with an IPv4 and an IPv6 peer
# (the same host by both families: two peers of one prober).
test6_up_table_and_pins() {
	make_topo
	need_cmd bpftool
	PEER_ADDR=$B6_IP start_probe p6t1 --peer "b4=$B_IP"
	ev=$(wait_up)
	expect_eq addr "$(jq -r .addr <<<"$ev")" $B6_IP
	expect_eq liveness "$(jq -r .liveness <<<"$ev")" reply
	[ "$(jq -r .rtt_us <<<"$ev")" != null ] || fail "no kernel RTT in $ev"
	wait_event "$LOG" '.kind == "peer_up" and .peer == "b4"' >/dev/null || fail "no peer_up for the IPv4 peer"
	sleep 0.5
	"$FL" peers --node "$NODE" >"$T/peers.txt" || fail "flatline peers failed"
	grep -Eq "^$B_IP +[0-9]+ +[0-9]+ +0 " "$T/peers.txt" || fail "no IPv4 row: $(cat "$T/peers.txt")"
	grep -Eq "^$B6_IP +[0-9]+ +[0-9]+ +0 " "$T/peers.txt" || fail "no IPv6 row: $(cat "$T/peers.txt")"
	row=$("$FL" peers --node "$NODE" --json | jq -c "select(.addr == \"$B6_IP\")")
	[ "$(jq -r .replied <<<"$row")" -ge 3 ] || fail "IPv6 replied < 3: $row"
	[ "$(jq -r .lost <<<"$row")" -eq 0 ] || fail "IPv6 loss on a clean link: $row"
	[ "$(jq -r .rtt_us <<<"$row")" != null ] || fail "no IPv6 RTT: $row"
	# BTF: the key shows the IPv6 address's bytes (fd00:f1::2) and the family.
	bpftool map dump pinned /sys/fs/bpf/flatline/$NODE/fl_peers | tr -d ' \n' |
		grep -q '"addr6":\[253,0,0,241,0,0,0,0,0,0,0,0,0,0,0,2\]},"family":10' ||
		fail "fl_peers does not pretty-print the IPv6 key: $(bpftool map dump pinned /sys/fs/bpf/flatline/$NODE/fl_peers)"
	stop_probe
	[ ! -e /sys/fs/bpf/flatline/$NODE ] || fail "pins left after SIGTERM"
}

test6_link_down_and_back() { link_down_and_back 6; }
test6_nft_drop_and_heal() { nft_drop_and_heal 6; }

# Lossy link over ICMPv6: 30 % of the echo requests reaching the peer dropped
# (neighbour discovery left alone); no peer_down, and the loss is really there.
test6_random_loss_no_down() {
	make_topo
	loss_run 100 1000 "$PEER_LOSS_S" 6
}

# ---- networks that change ----

# add_eth1: the second link between a and b, eth1, with its addresses.
add_eth1() {
	ip link add eth1 netns "$P-a" type veth peer name eth1 netns "$P-b"
	for h in a b; do ip -n "$P-$h" link set eth1 up; done
	ip -n "$P-a" addr add 198.18.1.1/24 dev eth1
	ip -n "$P-b" addr add 198.18.1.2/24 dev eth1
	ip -n "$P-a" addr add fd00:f1:1::1/64 dev eth1 nodad
	ip -n "$P-b" addr add fd00:f1:1::2/64 dev eth1 nodad
}

# A second link between a and b (eth1, 198.18.1.0/24, fd00:f1:1::/64) and the
# peer's service address on its loopback (198.18.9.2, fd00:f1:9::2), routed from a
# through eth0 first.
make_two_paths() {
	make_topo
	add_eth1
	ip -n "$P-b" addr add 198.18.9.2/32 dev lo
	ip -n "$P-b" addr add fd00:f1:9::2/128 dev lo
	ip -n "$P-a" route add 198.18.9.2/32 via $B_IP dev eth0
	ip -n "$P-a" -6 route add fd00:f1:9::2/128 via $B6_IP dev eth0
}

# route_move FAMILY: the route to the peer moved from eth0 to eth1 mid-run: the
# programs follow it (peer_route), the peer stays up, a failure after the move is
# detected inside its bound; the route removed: peer_local_fault, not peer_down;
# eth1 deleted and made again (a new interface): followed, the peer up again.
route_move() {
	local fam=$1 svc via1 ip6=""
	if [ "$fam" = 6 ]; then svc=fd00:f1:9::2 via1=fd00:f1:1::2 ip6=-6; else svc=198.18.9.2 via1=198.18.1.2; fi
	make_two_paths
	PEER_ADDR=$svc start_probe "prm$fam" --probe-interval-ms 100 --peer-down-after-ms 1000
	wait_up >/dev/null
	ip -n "$P-a" $ip6 route replace "$svc" via $via1 dev eth1
	ev=$(wait_event "$LOG" '.kind == "peer_route" and .ifname == "eth1"' 5) || fail "the route's move to eth1 was not followed"
	expect_eq prev_ifname "$(jq -r .prev_ifname <<<"$ev")" eth0
	r0=$("$FL" peers --node "$NODE" --json | jq .replied)
	sleep 1.5
	r1=$("$FL" peers --node "$NODE" --json | jq .replied)
	[ $((r1 - r0)) -ge 10 ] || fail "the kernel saw $((r1 - r0)) replies in 1.5 s through eth1"
	expect_eq "state changes after the move" "$(count_events "$LOG" '.kind | startswith("peer_") and . != "peer_route"')" 1
	# Our programs moved: on eth1, gone from eth0 (no peer is routed there now). The
	# replies counted above prove eth1; clsact filters show where they are.
	if [ "${FLATLINE_TC:-}" = clsact ]; then
		$NA tc filter show dev eth1 ingress | grep -q fl_icmp_ingress || fail "no filter on eth1"
		$NA tc filter show dev eth0 ingress | grep -q fl_icmp && fail "our filter left on eth0"
	fi
	t0=$(now_ns)
	isolate_b
	ev=$(wait_event "$LOG" '.kind == "peer_down"' 5) || fail "no peer_down after the move"
	expect_within "$ev" "$t0" 1200
	heal_b
	wait_event "$LOG" '.kind == "peer_up" and .prev == "down"' 5 >/dev/null || fail "no peer_up after the heal"
	# No route at all: our fault, not the peer's.
	t0=$(now_ns)
	ip -n "$P-a" $ip6 route del "$svc"
	wait_event "$LOG" '.kind == "peer_route" and .ifname == null' 5 >/dev/null || fail "no peer_route for the removed route"
	ev=$(wait_event "$LOG" '.kind == "peer_local_fault"' 5) || fail "no peer_local_fault without a route"
	expect_within "$ev" "$t0" 1200
	expect_eq local_fault "$(jq -r .local_fault <<<"$ev")" true
	expect_eq "peer_down events without a route" "$(count_events "$LOG" '.kind == "peer_down"')" 1
	# eth1 re-created (a new ifindex) and the route through it again.
	ip -n "$P-a" link del eth1
	add_eth1
	t0=$(now_ns)
	ip -n "$P-a" $ip6 route add "$svc" via $via1 dev eth1
	ev=$(wait_event "$LOG" '.kind == "peer_up" and .prev == "local_fault"' 5) || fail "no peer_up through the new eth1"
	expect_within "$ev" "$t0" 1000
	[ "$(count_events "$LOG" '.kind == "peer_route" and .ifname == "eth1"')" -eq 2 ] || fail "the new eth1 was not followed"
	stop_probe
}

test_route_move_ipv4() { # clsact filters this time: where they are can be listed
	export FLATLINE_TC=clsact
	route_move 4
}
test6_route_move() { route_move 6; }

# loss_run INTERVAL_MS DOWN_AFTER_MS SECONDS [6]: 30 % of the peer's incoming and
# outgoing ICMP dropped at random; no peer_down, and the loss is really there.
# With 6: the peer's IPv6 address, and only its incoming echo requests dropped.
loss_run() {
	local interval=$1 down=$2 secs=$3 fam=${4:-4} row lost sent addr=$B_IP match='meta l4proto icmp'
	[ "$fam" = 4 ] || addr=$B6_IP match='icmpv6 type echo-request'
	PEER_ADDR=$addr start_probe "p${fam}l$interval" --probe-interval-ms "$interval" \
		--peer-down-after-ms "$down"
	wait_up >/dev/null
	$NB nft -f - <<-EOF
		table inet fltest {
			chain in { type filter hook input priority 0; $match numgen random mod 100 < 30 drop; }
		}
	EOF
	on_exit "$NB nft delete table inet fltest"
	sleep "$secs"
	expect_eq "peer_down events under 30 % loss" "$(count_events "$LOG" '.kind == "peer_down"')" 0
	row=$("$FL" peers --node "$NODE" --json)
	lost=$(jq -r .lost <<<"$row")
	sent=$(jq -r .sent <<<"$row")
	echo "    IPv$fam ${interval} ms: $lost of $sent lost over ${secs} s"
	# A 30 % lossy link, as netem would make it on one interface: 30 % of the probes
	# never arrive (wide bounds: 60 samples at 1000 ms). Dropping 30 % each way
	# would lose 51 % of round trips, where ten losses in a row within a 1 s
	# window happen every minute or so.
	[ $((lost * 100 / sent)) -ge 12 ] && [ $((lost * 100 / sent)) -le 50 ] || fail "loss not as set up: $row"
	$NB nft delete table inet fltest
	stop_probe
}

test_random_loss_no_down() {
	make_topo
	loss_run 100 1000 "$PEER_LOSS_S"
	if [ -n "${FL_LONG:-}" ]; then
		loss_run 1000 10000 60
	fi
}

# The prober stopped for 3 s and continued: its own stall is not the peer's death.
test_sigstop_no_down() {
	make_topo
	start_probe pt5 --probe-interval-ms 100 --peer-down-after-ms 1000
	wait_up >/dev/null
	sleep 0.3
	kill -STOP "$PROBE_PID"
	sleep 3
	kill -CONT "$PROBE_PID"
	sleep 2
	expect_eq "peer_down events after SIGSTOP" "$(count_events "$LOG" '.kind == "peer_down"')" 0
	expect_eq "state changes" "$(count_events "$LOG" '.kind | startswith("peer_")')" 1
	# ...but a peer that died while we were stopped is found once we have probed again.
	kill -STOP "$PROBE_PID"
	isolate_b
	on_exit "$NB nft delete table inet fltest"
	sleep 3
	t0=$(now_ns)
	kill -CONT "$PROBE_PID"
	ev=$(wait_event "$LOG" '.kind == "peer_down"' 5) || fail "no peer_down for a peer that died during the stop"
	dt=$((($(ts_ns "$ev") - t0) / 1000000))
	echo "    down ${dt} ms after SIGCONT (a whole window probed first)"
	[ "$dt" -ge 900 ] || fail "judged ${dt} ms after SIGCONT, before a window of probes: $ev"
}

# A peer that drops ICMP but sends replication-like UDP traffic stays up, and the
# event says why; once its traffic stops too, it is down.
test_passive_liveness() {
	make_topo
	start_probe pt6 --probe-interval-ms 100 --peer-down-after-ms 1000
	wait_up >/dev/null
	$NB bash -c "while :; do echo x > /dev/udp/$A_IP/9; sleep 0.05; done" 2>/dev/null &
	UDP=$!
	on_exit "kill $UDP"
	$NB nft -f - <<-EOF
		table inet fltest {
			chain in { type filter hook input priority 0; meta l4proto icmp drop; }
		}
	EOF
	on_exit "$NB nft delete table inet fltest"
	ev=$(wait_event "$LOG" '.kind == "peer_passive"' 5) || fail "no peer_passive event"
	expect_eq liveness "$(jq -r .liveness <<<"$ev")" passive
	expect_eq prev "$(jq -r .prev <<<"$ev")" up
	[ "$(jq -r .reply_age_ms <<<"$ev")" -ge 1000 ] || fail "reply_age_ms: $ev"
	[ "$(jq -r .packet_age_ms <<<"$ev")" -lt 500 ] || fail "packet_age_ms: $ev"
	sleep 2
	expect_eq "peer_down while UDP flows" "$(count_events "$LOG" '.kind == "peer_down"')" 0
	kill "$UDP"
	ev=$(wait_event "$LOG" '.kind == "peer_down"' 5) || fail "no peer_down once the UDP traffic stopped"
	expect_eq prev "$(jq -r .prev <<<"$ev")" passive
}

# clsact filters (forced): attached, chained with someone else's filter, and the
# qdisc removed by us only when we created it and nothing else is on it.
test_clsact_path() {
	make_topo
	export FLATLINE_TC=clsact
	start_probe pt7
	wait_up >/dev/null
	expect_eq "tc mode" "$(jq -r 'select(.kind == "probe_start") | .tc' "$LOG")" clsact
	$NA tc filter show dev eth0 ingress | grep -q 'fl_icmp_ingress' || fail "no ingress filter"
	$NA tc filter show dev eth0 egress | grep -q 'fl_icmp_egress' || fail "no egress filter"
	stop_probe
	$NA tc qdisc show dev eth0 | grep -q clsact && fail "the clsact qdisc we created was left behind"
	# Someone else's clsact with a filter on it: ours come and go, theirs stay.
	$NA tc qdisc add dev eth0 clsact
	$NA tc filter add dev eth0 egress prio 50 protocol ip u32 match u32 0 0
	start_probe pt7
	wait_event "$LOG" '.kind == "peer_up" and .ts > "0"' >/dev/null
	stop_probe
	$NA tc qdisc show dev eth0 | grep -q clsact || fail "removed a clsact qdisc we did not create"
	$NA tc filter show dev eth0 egress | grep -q 'u32' || fail "removed a filter we did not create"
	$NA tc filter show dev eth0 egress | grep -q 'fl_icmp' && fail "our filter left behind"
	$NA tc qdisc del dev eth0 clsact
	# We create the qdisc, someone adds a filter meanwhile: the qdisc stays.
	start_probe pt7
	$NA tc filter add dev eth0 egress prio 50 protocol ip u32 match u32 0 0
	stop_probe
	$NA tc filter show dev eth0 egress | grep -q 'u32' || fail "removed someone's filter with our qdisc"
}

# Two probers on one interface: each program passes packets on (TC_ACT_UNSPEC), so
# the other still sees them; with TC_ACT_OK the first one would blind the second.
two_probers() {
	local l1 l2
	start_probe pc1
	l1=$LOG
	p1=$PROBE_PID
	n1=$NODE
	start_probe pc2
	l2=$LOG
	wait_up "$l1" >/dev/null
	wait_up "$l2" >/dev/null
	sleep 1.5
	for n in "$n1" "$NODE"; do
		row=$("$FL" peers --node "$n" --json)
		[ "$(jq -r .replied <<<"$row")" -ge 10 ] || fail "$n's programs saw too few replies: $row"
	done
	expect_eq "peer_down events" "$(cat "$l1" "$l2" | jq -c 'select(.kind == "peer_down")' | wc -l)" 0
	# The second one first: then the first, which made the clsact qdisc, finds no
	# other filter on it and removes it (stopped the other way round, the qdisc stays:
	# its maker saw a filter that was not its own, and the other did not make it).
	stop_probe
	kill -TERM $p1
	wait $p1 || fail "first prober exited with status $?"
}

test_chain_tcx() {
	make_topo
	two_probers
}

test_chain_clsact() {
	make_topo
	export FLATLINE_TC=clsact
	two_probers
	$NA tc qdisc show dev eth0 | grep -q clsact && fail "clsact qdisc left behind"
	return 0
}

# SIGKILL: tcx links die with the process; clsact filters stay and the next
# prober of the node replaces them.
test_sigkill_cleanup() {
	make_topo
	need_cmd bpftool
	start_probe pt8
	wait_up >/dev/null
	kill -KILL "$PROBE_PID"
	wait "$PROBE_PID" 2>/dev/null || true
	[ -e /sys/fs/bpf/flatline/$NODE/fl_peers ] || fail "expected the killed prober's stale pins"
	expect_detached /sys/fs/bpf/flatline/$NODE/fl_peers "after SIGKILL (tcx)"
	start_probe pt8
	wait_up >/dev/null
	stop_probe
	export FLATLINE_TC=clsact
	start_probe pt8
	wait_up >/dev/null
	kill -KILL "$PROBE_PID"
	wait "$PROBE_PID" 2>/dev/null || true
	$NA tc filter show dev eth0 ingress | grep -q fl_icmp_ingress || fail "expected a stale clsact filter after SIGKILL"
	start_probe pt8
	ev=$(wait_event "$LOG" '.kind == "peer_up"' 5) || fail "second prober did not see the peer"
	grep -q "replacing the stale fl_icmp_ingress" "$T/probe-$NODE.err" || fail "stale filter not replaced: $(cat "$T/probe-$NODE.err")"
	[ "$($NA tc filter show dev eth0 ingress | grep -c 'handle.*fl_icmp_ingress')" -eq 1 ] || fail "more than one filter of ours"
	stop_probe
	$NA tc filter show dev eth0 ingress | grep -q fl_icmp && fail "filter left after a clean stop"
	return 0
}

test_bad_input() {
	need_root
	check() { # WANT_RC PATTERN ARGS...
		local want=$1 pat=$2 rc
		shift 2
		set +e; "$FL" "$@" >"$T/out" 2>"$T/err"; rc=$?; set -e
		[ $rc -eq "$want" ] || fail "flatline $*: exit $rc, want $want ($(cat "$T/err"))"
		grep -q -- "$pat" "$T/err" || fail "flatline $*: message '$(head -c 300 "$T/err")' lacks '$pat'"
	}
	check 2 "expected ID=IP" probe --node x1 --peer 198.18.0.2
	check 2 "no --peer" probe --node x1
	check 2 "node id" probe --node ../x --peer a=198.18.0.2
	check 2 "not a number" probe --node x1 --peer a=198.18.0.2 --probe-interval-ms 0
	check 2 "expected auto, tcx or clsact" probe --node x1 --peer a=198.18.0.2 --tc bogus
	check 1 "not an IPv4 address or an IPv6 address" probe --node x1 --peer a=nowhere --event-log "$T/e.jsonl"
	check 1 "at least 3 probe intervals" probe --node x1 --peer a=198.18.0.2 --probe-interval-ms 500 \
		--peer-down-after-ms 1000 --event-log "$T/e.jsonl"
	check 1 "no such pin" peers --node "no-such-node-$BASHPID"
	check 2 "unexpected argument" peers extra
}

TESTS=(test_icmp_packets test_up_table_and_pins test_link_down_and_back test_nft_drop_and_heal
	test_own_link_local_fault test_random_loss_no_down test_sigstop_no_down test_passive_liveness
	test_clsact_path test_chain_tcx test_chain_clsact test_sigkill_cleanup test_bad_input
	test6_up_table_and_pins test6_link_down_and_back test6_nft_drop_and_heal test6_random_loss_no_down
	test_route_move_ipv4 test6_route_move)
run_tests
