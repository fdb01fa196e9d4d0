# shellcheck shell=bash
# HA-only cases of the failure suite, sourced by test_cluster.sh in HA mode
# (test_cluster_ha.sh): the controllers' own failures, and etcd's. Each counts the
# writer's acknowledged writes and checks the invariants as the other cases do.

# ts_ns ISO-TS: nanoseconds since the epoch.
ts_ns() { date -u -d "$1" +%s%N; }
# ev_ts LOG KIND: the last event of KIND in LOG, as nanoseconds.
ev_ts() { local t; t=$(jq -r "select(.kind == \"$2\") | .ts" "$1" 2>/dev/null | tail -n 1); [ -n "$t" ] && ts_ns "$t"; }
lease_ms() { echo "${FL_HA_LEASE_MS:-1000}"; }
# The co-located client (pt_colo_*). Not followed: its pt_cut's local array would read
# as the callers' variables of the same name.
# shellcheck source=/dev/null
. tests/lib/partition.sh

# The leader SIGKILLed, and the primary 200 ms later, while no controller leads: the
# next leader takes over within the lease (+ etcd's expiry check, 500 ms) and fails
# the primary over as soon as it leads.
test_ha_leader_killed() {
	cluster
	local lead nl tl takeover
	lead=$(cl_ha_leader) || fail "no leader"
	tl=$(cl_now_ns)
	kill -KILL "$(cl_pid "controller-c$lead")"
	sleep 0.2
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	cl_until 10 new_leader_ready "$lead" || fail "no other controller leads"
	nl=$(cl_ha_leader)
	CL_CLOG=$(cl_ha_log "$nl")
	takeover=$((($(ev_ts "$CL_CLOG" leader_elected) - tl) / 1000000))
	[ "$takeover" -le $(($(lease_ms) * 25 / 10)) ] ||
		fail "c$nl led $takeover ms after the leader died (lease $(lease_ms) ms)"
	check_primary 10
	reason_is "proc_exit SIGKILL"
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "leader controller SIGKILLed, then the primary"
	record "  (c$nl led $takeover ms after c$lead was killed; lease $(lease_ms) ms)"
	cl_ha_controller_start "$lead"
}

# The leader cut off from etcd (its own member and the others) but not from the
# servers: it stops acting at its lease deadline, another leads, the primary is then
# killed and failed over by the new leader. From the servers' side (MONITOR on every
# server): no command that changes a server comes from the old leader after the
# deadline it logged (its read-only INFO/PING continue, and change nothing).
test_ha_cut_from_etcd() {
	cluster
	local lead nl others="" i lost_ns late
	lead=$(cl_ha_leader) || fail "no leader"
	for i in 1 2 3; do
		[ "$i" = "$lead" ] || others="$others${others:+, }$(cl_ha_ip "$i")"
		cl_spawn "monitor-$i" "$CL_NS_CTL" redis-cli -h "$(cl_ip "$i")" monitor
	done
	sleep 0.3
	cl_ha_in "$lead" nft -f - <<-EOF || fail "nft"
		table inet flcut {
			chain in { type filter hook input priority -10; policy accept; ip saddr { $others } drop; }
			chain out { type filter hook output priority -10; policy accept; ip daddr { $others } drop; }
		}
	EOF
	cl_until 10 cl_has_event "$(cl_ha_log "$lead")" '.kind == "leader_lost"' ||
		fail "the cut-off leader did not give up: $(tail -n 3 "$(cl_ha_log "$lead")")"
	lost_ns=$(ev_ts "$(cl_ha_log "$lead")" leader_lost)
	cl_until 10 new_leader_ready "$lead" || fail "no other controller leads"
	nl=$(cl_ha_leader)
	CL_CLOG=$(cl_ha_log "$nl")
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	check_primary 10
	# The old leader saw the failure too (its agents report to it) and did nothing.
	! cl_has_event "$(cl_ha_log "$lead")" '.kind == "promoted"' ||
		fail "the cut-off leader promoted: $(jq -c 'select(.kind == "promoted")' "$(cl_ha_log "$lead")")"
	sleep 0.5
	for i in 1 2 3; do cl_stop "monitor-$i"; done
	late=$(cat "$CL_DIR"/log/monitor-*.out | grep -F "[0 $(cl_ha_ip "$lead"):" |
		grep -viE '"(info|ping|client|auth|hello)"' |
		awk -v t="$lost_ns" '{ split($1, a, "."); if (a[1] * 1000000000 + a[2] * 1000 > t) print }')
	[ -z "$late" ] || fail "commands from the old leader after its deadline: $late"
	grep -qF "[0 $(cl_ha_ip "$nl"):" "$CL_DIR"/log/monitor-*.out ||
		fail "MONITOR saw nothing from the new leader: the check would prove nothing"
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "leader cut off from etcd, then the primary SIGKILLed"
	cl_ha_in "$lead" nft delete table inet flcut
}

# A deposed leader's leases ([agent] lease_ms = 3000, longer than the leader's own etcd
# lease): the leader is cut off from etcd (not from h1), and h1 from everyone but that
# leader and its own co-located client (tests/lib/partition.sh). Until its deadline the
# old leader keeps renewing h1's lease, each answer for 3 s; the new leader, which hears
# nothing from h1, fails it over, and must not promote before every lease the deposed
# leader could have granted has run out: h1 acknowledges no write after the promotion
# instant (the new leader's replica_selected). Self-fencing off, so that only the lease
# stops h1's writes.
test_ha_deposed_leader_lease() {
	FL_AGENT_CONF=$'lease_ms = 3000\nself_fence = no' cluster
	local lead nl others="" h1cut i t_prom late
	lead=$(cl_ha_leader) || fail "no leader"
	cl_until 5 cl_has_event "$CL_DIR/events-$(cl_node 1).jsonl" '.kind == "lease_regained"' ||
		fail "h1 never took the lease"
	pt_colo_start 1 || fail "co-located writer did not start"
	h1cut="$CL_CTL_IP, $(cl_ip 2), $(cl_ip 3)"
	for i in 1 2 3; do
		[ "$i" = "$lead" ] && continue
		others="$others${others:+, }$(cl_ha_ip "$i")"
		h1cut="$h1cut, $(cl_ha_ip "$i")"
	done
	T0=$(cl_now_ns)
	cl_ha_in "$lead" nft -f - <<-EOF || fail "nft (leader)"
		table inet flcut {
			chain in { type filter hook input priority -10; policy accept; ip saddr { $others } drop; }
			chain out { type filter hook output priority -10; policy accept; ip daddr { $others } drop; }
		}
	EOF
	on_exit "cl_ha_in $lead nft delete table inet flcut"
	cl_in 1 nft -f - <<-EOF || fail "nft (h1)"
		table inet flisolate {
			chain in { type filter hook input priority -10; policy accept; ip saddr { $h1cut } drop; }
			chain out { type filter hook output priority -10; policy accept; ip daddr { $h1cut } drop; }
		}
	EOF
	on_exit "pt_heal 1"
	cl_until 10 new_leader_ready "$lead" || fail "no other controller leads"
	nl=$(cl_ha_leader)
	CL_CLOG=$(cl_ha_log "$nl")
	wait_ctl '.kind == "replica_selected"' 20
	t_prom=$(ev_ts "$CL_CLOG" replica_selected)
	check_primary 10
	sleep 1 # h1's client keeps trying through the promotion
	late=$(pt_colo_acks_since "$t_prom")
	record "  (c$lead deposed, c$nl led after $(( ($(ev_ts "$CL_CLOG" leader_elected) - T0) / 1000000 )) ms, promoted after $(( (t_prom - T0) / 1000000 )) ms; h1 acknowledged $late writes after the promotion)"
	[ "$late" = 0 ] || fail "h1 acknowledged $late writes after the promotion: the deposed leader's lease outlived the wait"
	pt_colo_stop
	pt_heal 1
	cl_ha_in "$lead" nft delete table inet flcut
	old_back_as_replica
	finish "leader deposed, lease_ms 3000, the primary cut off from all but it"
}

# etcd loses quorum: no promotion anywhere while it lasts, the data path untouched,
# status says why; quorum back: the failure is handled.
test_ha_etcd_quorum_lost() {
	cluster
	local lead a b n0 st
	lead=$(cl_ha_leader) || fail "no leader"
	a=$((lead % 3 + 1))
	b=$((a % 3 + 1))
	kill -STOP "$(cl_pid "etcd-e$a")" "$(cl_pid "etcd-e$b")"
	on_exit "kill -CONT $(cl_pid "etcd-e$a") $(cl_pid "etcd-e$b")"
	cl_until 10 cl_has_event "$(cl_ha_log "$lead")" '.kind == "leader_lost"' ||
		fail "the leader did not give up without quorum"
	n0=$(grep -c '^A ' "$CL_DIR/writer.out")
	sleep 1
	[ "$(grep -c '^A ' "$CL_DIR/writer.out")" -gt $((n0 + 500)) ] ||
		fail "writes stalled while etcd had no quorum"
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	sleep 3
	[ -z "$(cl_masters)" ] || fail "a promotion without etcd quorum: $(cl_masters)"
	st=$(cl_status_json)
	[ "$(jq -r '.controller.ha.etcd.ok' <<<"$st")" = false ] ||
		fail "status does not say etcd is unavailable: $(jq -c .controller.ha <<<"$st")"
	kill -CONT "$(cl_pid "etcd-e$a")" "$(cl_pid "etcd-e$b")"
	cl_until 10 cl_ha_leader_ready || fail "no leader after quorum came back"
	# Whichever controller leads as etcd settles finishes the failover (the lead may
	# move once more: the leader asked a moment ago need not be the one).
	cl_until 15 any_ctl_ev '.kind == "failover_end"' ||
		fail "no failover_end from any controller: $(cat "$CL_DIR"/controller-c*.jsonl | jq -c 'select(.kind | test("failover|leader"))' | tail -n 4)"
	cl_until 10 leader_log || fail "no leader after the failover"
	check_primary 15 nowait
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "etcd without quorum for 3 s, the primary SIGKILLed meanwhile"
	record "  (etcd members e$a e$b stopped; failed over once quorum was back)"
}

# One etcd member down: no effect on a failover.
test_ha_etcd_member_down() {
	cluster
	local lead m
	lead=$(cl_ha_leader) || fail "no leader"
	m=$((lead % 3 + 1))
	cl_stop "etcd-e$m" KILL
	sleep 0.5
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	# The leader keeps leading (its watch and keep-alives move to another member).
	cl_until 10 cl_has_event "$(cl_ha_log "$lead")" '.kind == "failover_end"' ||
		fail "c$lead did not fail over: $(jq -c 'select(.kind | test("leader|etcd"))' "$(cl_ha_log "$lead")" | tail -n 3)"
	! cl_has_event "$(cl_ha_log "$lead")" '.kind == "leader_lost"' || fail "c$lead lost the lead"
	check_primary
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "one etcd member down, the primary SIGKILLed"
	expect_ms "$J" first_write_ms 1000
}

# etcd loses quorum right before the primary dies, while the leader's lease still
# holds: the leader decides the failover but cannot record it, so it promotes nobody
# (each attempt aborts: "failed to record"); quorum back: exactly one promotion, no
# acknowledged write lost.
# (Not jq -e over the stream: jq 1.6 sets its status from the last input alone, so a
# match that is not the last line read as none.)
any_ctl_ev() { [ -n "$(cat "$CL_DIR"/controller-c*.jsonl 2>/dev/null | jq -c "select($1)" 2>/dev/null | head -n 1)" ]; }
leader_log() {
	local i
	i=$(cl_ha_leader) || return 1
	CL_CLOG=$(cl_ha_log "$i")
}
test_ha_record_fails_at_promotion() {
	cluster
	local lead a b np
	lead=$(cl_ha_leader) || fail "no leader"
	CL_CLOG=$(cl_ha_log "$lead")
	a=$((lead % 3 + 1))
	b=$((a % 3 + 1))
	kill -STOP "$(cl_pid "etcd-e$a")" "$(cl_pid "etcd-e$b")"
	on_exit "kill -CONT $(cl_pid "etcd-e$a") $(cl_pid "etcd-e$b")"
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	cl_until 5 ctl_ev '.kind == "failover_abort" and (.reason | test("failed to record"))' ||
		fail "no failover aborted for its record: $(jq -c 'select(.kind | test("failover|promoted|leader"))' "$CL_CLOG" | tail -n 4)"
	sleep 2
	[ -z "$(cl_masters)" ] || fail "a promotion that was not recorded: $(cl_masters)"
	! any_ctl_ev '.kind == "promoted"' ||
		fail "promoted without a record: $(cat "$CL_DIR"/controller-c*.jsonl | jq -c 'select(.kind == "promoted")')"
	kill -CONT "$(cl_pid "etcd-e$a")" "$(cl_pid "etcd-e$b")"
	cl_until 10 cl_ha_leader_ready || fail "no leader after quorum came back"
	CL_CLOG=$(cl_ha_log "$(cl_ha_leader)")
	check_primary 15
	np=$(cat "$CL_DIR"/controller-c*.jsonl | jq -c 'select(.kind == "promoted")' | wc -l)
	[ "$np" = 1 ] || fail "$np promotions: $(cat "$CL_DIR"/controller-c*.jsonl | jq -c 'select(.kind == "promoted") | {ts, controller_id, instance, epoch}')"
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "etcd without quorum at the promotion, the primary SIGKILLed"
}

# etcd with authentication: the controllers log in (user and password from the
# cluster file) and work as without it; one with a wrong password says why and never
# leads.
test_ha_etcd_auth() {
	export FL_ETCD_AUTH=1
	cluster
	local lead bad=$CL_DIR/bad.conf
	lead=$(cl_ha_leader) || fail "no leader with etcd auth on"
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	check_primary
	sed "s/^password = .*/password = wrong-password-$$/" "$CL_CONF" >"$bad"
	printf '[controller "cbad"]\nlisten = %s:26390\n' "$(cl_ha_ip "$lead")" >>"$bad"
	chmod 600 "$bad" # it holds secrets (refused otherwise)
	cl_spawn ctl-bad "$(cl_ha_ns "$lead")" "$FL" controller --allow-root -c "$bad" --id cbad \
		--event-log "$CL_DIR/bad.jsonl"
	sleep 2
	grep -q "failed to authenticate to etcd.*authentication failed" "$CL_DIR/log/ctl-bad.out" ||
		fail "no clear message for a wrong etcd password: $(tail -n 3 "$CL_DIR/log/ctl-bad.out")"
	! cl_has_event "$CL_DIR/bad.jsonl" '.kind == "leader_elected"' || fail "it led anyway"
	cl_stop ctl-bad
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "SIGKILL, etcd with authentication"
}

# etcd over TLS with client certificates (https endpoints, cacert/cert/key): the same;
# a controller without the client certificate is refused by etcd and says why.
test_ha_etcd_tls() {
	export FL_ETCD_TLS=1
	cluster
	local lead bad=$CL_DIR/bad.conf
	lead=$(cl_ha_leader) || fail "no leader with etcd over TLS"
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	check_primary
	grep -v '^cert = \|^key = ' "$CL_CONF" >"$bad"
	printf '[controller "cbad"]\nlisten = %s:26390\n' "$(cl_ha_ip "$lead")" >>"$bad"
	chmod 600 "$bad" # it holds secrets (refused otherwise)
	cl_spawn ctl-bad "$(cl_ha_ns "$lead")" "$FL" controller --allow-root -c "$bad" --id cbad \
		--event-log "$CL_DIR/bad.jsonl"
	sleep 2
	grep -qi "failed to grant an etcd lease: https://.*\(certificate\|ssl\|tls\|alert\)" "$CL_DIR/log/ctl-bad.out" ||
		fail "no clear message without a client certificate: $(tail -n 3 "$CL_DIR/log/ctl-bad.out")"
	! cl_has_event "$CL_DIR/bad.jsonl" '.kind == "leader_elected"' || fail "it led anyway"
	cl_stop ctl-bad
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "SIGKILL, etcd over TLS with client certificates"
}

# Clients learn every controller (SENTINEL sentinels) and the quorum (ckquorum).
test_ha_sentinel_view() {
	cluster
	local i out n
	for i in 1 2 3; do
		out=$(cl_ctl redis-cli -h "$(cl_ha_ip "$i")" -p "$CL_CTL_PORT" sentinel sentinels "$CL_SHARD")
		n=$(grep -c '^ip$' <<<"$out" || true)
		[ "$n" = 2 ] || fail "c$i lists $n other controllers: $out"
		out=$(cl_ctl redis-cli -h "$(cl_ha_ip "$i")" -p "$CL_CTL_PORT" sentinel ckquorum "$CL_SHARD")
		[[ $out == OK* ]] || fail "c$i ckquorum: $out"
		out=$(cl_ctl redis-cli -h "$(cl_ha_ip "$i")" -p "$CL_CTL_PORT" sentinel get-master-addr-by-name "$CL_SHARD" | head -n 1)
		[ "$out" = "$(cl_ip 1)" ] || fail "c$i names $out as the primary"
	done
	kill_at KILL "$(cl_pid "redis-$(cl_node 1)")"
	check_primary
	# Followers serve the new primary too (from etcd), and published +switch-master.
	for i in 1 2 3; do
		cl_until 5 api_of_is "$i" "$NEW" || fail "c$i does not name the new primary"
	done
	cl_redis_start "$OLD"
	old_back_as_replica
	finish "SIGKILL (every controller's Sentinel API checked)"
}
api_of_is() {
	[ "$(cl_ctl redis-cli -h "$(cl_ha_ip "$1")" -p "$CL_CTL_PORT" sentinel get-master-addr-by-name "$CL_SHARD" | head -n 1)" = "$(cl_ip "$2")" ]
}

TESTS+=(test_ha_leader_killed test_ha_cut_from_etcd test_ha_deposed_leader_lease test_ha_etcd_quorum_lost
	test_ha_etcd_member_down test_ha_record_fails_at_promotion test_ha_sentinel_view test_ha_etcd_auth test_ha_etcd_tls)
