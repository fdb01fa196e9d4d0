#!/usr/bin/env bash
# The random-fault campaign (bench/campaign.sh) in CI: a short seeded run at the shipped
# defaults must find no anomaly, over at least 20 faults of at least 6 kinds; and the
# checker must be able to fail: the write lease off, a client on the primary's host and
# the primary cut off must show anomalies (writes acknowledged by the old primary after
# the promotion, lost). CAMPAIGN_SEED replays another schedule.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

SEED=${CAMPAIGN_SEED:-20261201}

campaign() { # OUT ARGS...: runs it, the result line in $T/result.json
	local out=$1
	shift
	need_root
	need_cmd ip nsenter nft iptables redis-server redis-cli named tsig-keygen dig jq setsid /usr/bin/python3
	CAMPAIGN_RC=0
	FL=$FL bench/campaign.sh --dir "$T/camp" "$@" >"$out" 2>&1 || CAMPAIGN_RC=$?
	tail -n 1 "$T/camp/result.txt" >"$T/result.json" 2>/dev/null
	jq -e . "$T/result.json" >/dev/null 2>&1 || {
		tail -n 30 "$out"
		fail "the campaign printed no result (exit $CAMPAIGN_RC)"
	}
}
field() { jq -r ".$1" "$T/result.json"; }
show() { # on failure: the campaign's own account
	grep -E '^(campaign:|anomaly:|fault |[a-z_]+ +[0-9])' "$1" | tail -n 40
	cat "$T/result.json"
}

test_campaign_defaults() {
	campaign "$T/camp.out" --seed "$SEED" --faults 22 --minutes 8
	[ "$(field faults)" -ge 20 ] || { show "$T/camp.out"; fail "only $(field faults) faults (want >= 20)"; }
	[ "$(field fault_kinds)" -ge 6 ] || { show "$T/camp.out"; fail "only $(field fault_kinds) fault kinds (want >= 6)"; }
	[ "$(field acked)" -ge 5000 ] || { show "$T/camp.out"; fail "only $(field acked) writes acknowledged"; }
	[ "$(field promotions)" -ge 1 ] || { show "$T/camp.out"; fail "no promotion in the whole campaign"; }
	[ "$(field anomalies)" = 0 ] || { show "$T/camp.out"; fail "$(field anomalies) anomalies (seed $SEED)"; }
	[ "$CAMPAIGN_RC" = 0 ] || { show "$T/camp.out"; fail "the campaign exited $CAMPAIGN_RC"; }
	sed -n '/^fault /,/^{/p' "$T/camp.out" >&2
}

test_campaign_lease_off_finds_anomalies() {
	campaign "$T/camp.out" --seed "$SEED" --faults 2 --kinds cut_full,cut_out --target primary \
		--set agent.lease_ms=0
	[ "$(field promotions)" -ge 1 ] || { show "$T/camp.out"; fail "no promotion: nothing to judge"; }
	[ "$(field lost_after_promotion)" -gt 0 ] ||
		{ show "$T/camp.out"; fail "the checker found no write lost after a promotion with the lease off"; }
	[ "$(field two_primaries)" -gt 0 ] ||
		{ show "$T/camp.out"; fail "the checker found no second primary with the lease off"; }
	[ "$CAMPAIGN_RC" = 1 ] || { show "$T/camp.out"; fail "the campaign exited $CAMPAIGN_RC, want 1 (anomalies)"; }
}

# rtt_ms IDX: one ping's round trip from the controller's side to the host, in ms.
rtt_ms() {
	cl_ctl ping -n -c 1 -W 3 "$(cl_ip "$1")" | sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' | cut -d. -f1
}

# The campaign's delayed link (cl_delay: an NFQUEUE holder, there is no netem): a
# host's packets held both ways, the others untouched, a holder that dies leaves the
# link up (bypass), and cl_delay_off restores it.
test_delay_link() {
	need_root
	need_cmd ip nsenter iptables ip6tables ping redis-server redis-cli setsid
	[ -x "$FL_NFQDELAY" ] || fail "no $FL_NFQDELAY (make tools)"
	cl_init "$T/cl" "fld$BASHPID"
	on_exit cl_down
	cl_up_servers || fail "the servers did not come up"
	local r
	r=$(rtt_ms 2)
	[ -n "$r" ] && [ "$r" -lt 50 ] || fail "round trip to host 2 before the delay: '${r}' ms"
	cl_delay 200 0 2 || fail "cl_delay failed"
	r=$(rtt_ms 2)
	# In and out of host 2: 200 ms each way.
	[ -n "$r" ] && [ "$r" -ge 390 ] && [ "$r" -lt 1000 ] || fail "round trip to the delayed host: '${r}' ms, want ~400"
	r=$(rtt_ms 3)
	[ -n "$r" ] && [ "$r" -lt 50 ] || fail "round trip to host 3 (not delayed): '${r}' ms"
	[ "$(cl_redis 2 ping)" = PONG ] || fail "no PONG through the delayed link"
	cl_stop nfqdelay-2 KILL
	r=$(rtt_ms 2)
	[ -n "$r" ] && [ "$r" -lt 50 ] || fail "round trip with the holder gone: '${r}' ms (the rule must bypass)"
	cl_delay 100 0 2 || fail "cl_delay again failed"
	r=$(rtt_ms 2)
	[ -n "$r" ] && [ "$r" -ge 190 ] || fail "round trip with the delay set again: '${r}' ms"
	cl_delay_off
	r=$(rtt_ms 2)
	[ -n "$r" ] && [ "$r" -lt 50 ] || fail "round trip after cl_delay_off: '${r}' ms"
	! cl_in 2 iptables -S | grep -q NFQUEUE || fail "the delay's rules outlived cl_delay_off: $(cl_in 2 iptables -S)"
}

TESTS=(test_delay_link test_campaign_defaults test_campaign_lease_off_finds_anomalies)
run_tests
