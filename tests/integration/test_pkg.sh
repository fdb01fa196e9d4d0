#!/usr/bin/env bash
# Production pieces (issue 17): `flatline version` and `check`, the manual, the
# systemd units, the Debian package, least privilege, SIGHUP, journald levels and
# the Prometheus metrics.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
EXAMPLE=packaging/cluster.conf.example

test_version() {
	out=$("$FL" version) || fail "flatline version failed"
	grep -qE '^flatline [0-9]+\.[0-9]+\.[0-9]+' <<<"$out" || fail "no version in '$out'"
	v=$(sed -n 's/^VERSION *?= *//p' Makefile)
	grep -qF "flatline $v " <<<"$out" || fail "'$out' is not the Makefile's $v"
}

test_check_example() {
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

TESTS=(test_version test_check_example test_check_broken)
run_tests
