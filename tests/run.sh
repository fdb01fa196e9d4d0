#!/usr/bin/env bash
# Runs the unit tests (cmocka, no root) and the integration tests (root), and
# ends with one line: "N passed, N failed, N skipped". Exit status 1 if any failed.
# Usage: tests/run.sh [unit|integration] [FILTER]   (FILTER: substring of a test file)
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
export BUILD FL=$PWD/$BUILD/flatline
what=${1:-all}
filter=${2:-}
pass=0 fail=0 skip=0

count() { # reads PASS/FAIL/SKIP lines on stdin, echoes them
	local line
	while IFS= read -r line; do
		echo "$line"
		case $line in
		"PASS "*) pass=$((pass + 1)) ;;
		"FAIL "*) fail=$((fail + 1)) ;;
		"SKIP "*) skip=$((skip + 1)) ;;
		esac
	done
}

unit() {
	local bin out rc ok bad
	for bin in "$BUILD"/tests/test_*; do
		[ -x "$bin" ] || continue
		[[ -z $filter || $bin == *"$filter"* ]] || continue
		out=$("$bin" 2>&1)
		rc=$?
		# cmocka prints "[       OK ] name" and "[  FAILED  ] name" per test.
		ok=$(grep -c '^\[       OK \]' <<<"$out")
		bad=$(grep -cE '^\[  FAILED  \] [a-z_0-9]+$' <<<"$out")
		if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
			bad=1 # crashed or failed outside a test
		fi
		pass=$((pass + ok))
		fail=$((fail + bad))
		echo "unit $(basename "$bin"): $ok passed, $bad failed"
		[ "$bad" -eq 0 ] || sed 's/^/    /' <<<"$out" | grep -v '^\s*\[ RUN' | tail -n 40
	done
}

integration() {
	local f t0
	for f in tests/integration/test_*.sh; do
		[[ -z $filter || $f == *"$filter"* ]] || continue
		echo "integration $(basename "$f"):"
		if [ "$(id -u)" -ne 0 ]; then
			echo "SKIP $(basename "$f"): integration tests need root" | count
			continue
		fi
		t0=$SECONDS
		count < <(bash "$f")
		# How long each file took (the CI's budget is 45 minutes in all).
		echo "  ($(basename "$f"): $((SECONDS - t0)) s)"
	done
}

case $what in
unit) unit ;;
integration) integration ;;
all) unit; integration ;;
*) echo "usage: tests/run.sh [unit|integration|all] [FILTER]" >&2; exit 2 ;;
esac
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
