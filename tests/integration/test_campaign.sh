#!/usr/bin/env bash
# The random-fault campaign (bench/campaign.sh) in CI: a short seeded run at the shipped
# defaults must find no anomaly, over at least 20 faults of at least 6 kinds; and the
# checker must be able to fail: the write lease off, a client on the primary's host and
# the primary cut off must show anomalies (writes acknowledged by the old primary after
# the promotion, lost). CAMPAIGN_SEED replays another schedule.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh

SEED=${CAMPAIGN_SEED:-20261201}

campaign() { # OUT ARGS...: runs it, the result line in $T/result.json
	local out=$1
	shift
	need_root
	need_cmd ip nsenter nft redis-server redis-cli named tsig-keygen dig jq setsid /usr/bin/python3
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

TESTS=(test_campaign_defaults test_campaign_lease_off_finds_anomalies)
run_tests
