#!/usr/bin/env bash
# DNS UPDATE with TSIG against a real BIND9 named, through user/controller/dns.c driven by
# build/tools/dnsupdate on a libevent loop. Traffic goes to 127.0.0.1 only.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
. tests/lib/named.sh

DNSUPDATE=${DNSUPDATE:-$PWD/${BUILD:-build}/tools/dnsupdate}

# dnsup ARGS...: the driver with key flatline (hmac-sha256) against our named; JSON lines
# on stdout, module log on $T/dnsup.err. Never fails the test by itself.
dnsup() {
	[ -x "$DNSUPDATE" ] || skip "needs $DNSUPDATE (make tools)"
	"$DNSUPDATE" -s "127.0.0.1:$NAMED_PORT" -z ha.example. -k flatline -a hmac-sha256 \
		-S "$SECRET" "$@" 2>>"$T/dnsup.err" || true
}

# field JSON KEY
field() { jq -r ".$2" <<<"$1"; }

# expect_config_error JSON RCODE PATTERN: refused once, with its own message.
expect_config_error() {
	local r=$1
	[ -n "$r" ] || fail "no result (stderr: $(cat "$T/dnsup.err"))"
	expect_eq status "$(field "$r" status)" config_error
	expect_eq config_error "$(field "$r" config_error)" true
	expect_eq rcode "$(field "$r" rcode)" "$2"
	expect_eq attempts "$(field "$r" attempts)" 1
	grep -q -- "$3" <<<"$(field "$r" error)" || fail "message lacks '$3': $(field "$r" error)"
}

# named's log lines matching PATTERN after line MARK
log_count() { tail -n +"$(($1 + 1))" "$NAMED_LOG" | grep -c -- "$2" || true; }
log_mark() { wc -l <"$NAMED_LOG"; }

test_update_moves_record() {
	start_named
	expect_eq "initial A" "$(dig_rr cache.ha.example. A)" 10.0.0.1
	s1=$(soa_serial)
	r=$(dnsup update cache.ha.example. 10.0.0.2)
	expect_eq status "$(field "$r" status)" ok
	expect_eq rcode "$(field "$r" rcode)" NOERROR
	expect_eq attempts "$(field "$r" attempts)" 1
	expect_eq "A after update" "$(dig_rr cache.ha.example. A)" 10.0.0.2
	s2=$(soa_serial)
	[ "$s2" -gt "$s1" ] || fail "SOA serial did not rise: $s1 -> $s2"
	# TTL as configured
	ttl=$(dig +noall +answer -p "$NAMED_PORT" @127.0.0.1 cache.ha.example. A | awk '{ print $2 }')
	expect_eq ttl "$ttl" 1
	# UDP as well, and a TTL of 5
	r=$(dnsup --udp -t 5 update cache.ha.example. 10.0.0.3)
	expect_eq "udp status" "$(field "$r" status)" ok
	expect_eq "A after UDP update" "$(dig_rr cache.ha.example. A)" 10.0.0.3
	[ "$(soa_serial)" -gt "$s2" ] || fail "SOA serial did not rise after the UDP update"
	# IPv6: the AAAA RRset is replaced, the A RRset left alone
	r=$(dnsup update cache.ha.example. fd00::2)
	expect_eq "aaaa status" "$(field "$r" status)" ok
	expect_eq AAAA "$(dig_rr cache.ha.example. AAAA)" fd00::2
	r=$(dnsup update cache.ha.example. fd00::3)
	expect_eq "AAAA replaced" "$(dig_rr cache.ha.example. AAAA)" fd00::3
	expect_eq "A kept" "$(dig_rr cache.ha.example. A)" 10.0.0.3
}

test_algorithms() {
	start_named
	for ka in "flatline512 hmac-sha512 $SECRET512" "flatline1 hmac-sha1 $SECRET1"; do
		read -r key alg sec <<<"$ka"
		r=$(dnsup -k "$key" -a "$alg" -S "$sec" update cache.ha.example. "10.0.1.${#key}")
		expect_eq "$alg status" "$(field "$r" status)" ok
		expect_eq "$alg A" "$(dig_rr cache.ha.example. A)" "10.0.1.${#key}"
	done
	# hmac-sha384 is refused before anything is sent
	set +e
	"$DNSUPDATE" -s "127.0.0.1:$NAMED_PORT" -z ha.example. -k flatline -a hmac-sha384 \
		-S "$SECRET" update cache.ha.example. 10.0.0.9 >"$T/out" 2>"$T/err"
	rc=$?
	set -e
	expect_eq "hmac-sha384 exit" "$rc" 1
	grep -q "ldns 1.8.3 cannot sign hmac-sha384" "$T/err" || fail "sha384 message: $(cat "$T/err")"
}

# The drift check's building block: read back, see another address, repair.
test_query_and_repair() {
	start_named
	r=$(dnsup query cache.ha.example. 10.0.0.1)
	expect_eq "query status ($(field "$r" error); named: $(tail -n 3 "$NAMED_LOG" | tr '\n' ' '))" "$(field "$r" status)" ok
	expect_eq match "$(field "$r" match)" true
	# someone else moves the record (nsupdate with the same key)
	need_cmd nsupdate
	printf 'server 127.0.0.1 %s\nupdate delete cache.ha.example. A\nupdate add cache.ha.example. 1 A 10.9.9.9\nsend\n' \
		"$NAMED_PORT" | nsupdate -y "hmac-sha256:flatline:$SECRET" || fail "nsupdate failed"
	r=$(dnsup query cache.ha.example. 10.0.0.1)
	expect_eq "drift seen" "$(field "$r" match)" false
	expect_eq "drift addrs" "$(jq -c .addrs <<<"$r")" '["10.9.9.9"]'
	r=$(dnsup update cache.ha.example. 10.0.0.1)
	expect_eq "repair" "$(field "$r" status)" ok
	r=$(dnsup query cache.ha.example. 10.0.0.1)
	expect_eq "repaired" "$(field "$r" match)" true
	# a name with no records at all
	r=$(dnsup query nothing.ha.example. 10.0.0.1)
	expect_eq "nxdomain status" "$(field "$r" status)" ok
	expect_eq "nxdomain rcode" "$(field "$r" rcode)" NXDOMAIN
	expect_eq "nxdomain match" "$(field "$r" match)" false
}

test_wrong_secret() {
	start_named
	m=$(log_mark)
	r=$(dnsup -S "$SECRET512" update cache.ha.example. 10.0.0.2)
	expect_config_error "$r" BADSIG "check tsig_secret"
	expect_eq "requests seen by named" "$(log_count "$m" "tsig verify failure")" 1
	expect_eq "A unchanged" "$(dig_rr cache.ha.example. A)" 10.0.0.1
}

test_wrong_key_name() {
	start_named
	m=$(log_mark)
	r=$(dnsup -k nosuchkey update cache.ha.example. 10.0.0.2)
	expect_config_error "$r" BADKEY "check tsig_name and tsig_algorithm"
	expect_eq "requests seen by named" "$(log_count "$m" "tsig verify failure (BADKEY)")" 1
	# the right name with the wrong algorithm is an unknown key too
	r=$(dnsup -a hmac-sha512 update cache.ha.example. 10.0.0.2)
	expect_config_error "$r" BADKEY "tsig_algorithm"
	expect_eq "A unchanged" "$(dig_rr cache.ha.example. A)" 10.0.0.1
}

test_outside_policy() {
	start_named
	m=$(log_mark)
	r=$(dnsup update other.ha.example. 10.0.0.2)
	expect_config_error "$r" REFUSED "update-policy"
	expect_eq "requests seen by named" "$(log_count "$m" "update failed")" 1
	# a key granted A only may not touch AAAA
	r=$(dnsup -k flatline512 -a hmac-sha512 -S "$SECRET512" update cache.ha.example. fd00::9)
	expect_config_error "$r" REFUSED "update-policy"
	expect_eq "AAAA untouched" "$(dig_rr cache.ha.example. AAAA)" ""
}

test_zone_not_served() {
	start_named
	m=$(log_mark)
	r=$(dnsup -z other.example. update cache.other.example. 10.0.0.2)
	expect_config_error "$r" NOTAUTH "not authoritative"
	expect_eq "requests seen by named" "$(log_count "$m" "not authoritative")" 1
}

# The four configuration errors read differently from each other.
test_messages_distinct() {
	start_named
	a=$(field "$(dnsup -S "$SECRET512" update cache.ha.example. 10.0.0.2)" error)
	b=$(field "$(dnsup -k nosuchkey update cache.ha.example. 10.0.0.2)" error)
	c=$(field "$(dnsup update other.ha.example. 10.0.0.2)" error)
	d=$(field "$(dnsup -z other.example. update cache.other.example. 10.0.0.2)" error)
	n=$(printf '%s\n' "$a" "$b" "$c" "$d" | sed 's/ (key .*//' | sort -u | wc -l)
	expect_eq "distinct messages" "$n" 4
}

# named stopped: refused connections, retried with capped backoff (fresh resolver each
# time); named back on the same port: the same update goes through.
test_server_down_then_back() {
	start_named
	stop_named
	"$DNSUPDATE" -v -s "127.0.0.1:$NAMED_PORT" -z ha.example. -k flatline -a hmac-sha256 \
		-S "$SECRET" --retry-min-ms 50 --retry-max-ms 200 \
		update cache.ha.example. 10.0.0.7 >"$T/out" 2>"$T/err" &
	up=$!
	on_exit "kill -KILL $up"
	sleep 1.5
	kill -0 "$up" 2>/dev/null || fail "gave up while the server was down: $(cat "$T/out")"
	grep -q "connection refused ([0-9]* ms); retrying with backoff (next in 50 ms)" "$T/err" ||
		fail "no first retry line: $(head -c 400 "$T/err")"
	grep -q "next in 100 ms" "$T/err" || fail "backoff did not double"
	grep -q "next in 200 ms" "$T/err" || fail "backoff did not double again"
	grep -q "next in 400 ms" "$T/err" && fail "backoff not capped at 200 ms"
	n=$(grep -c "connection refused" "$T/err")
	{ [ "$n" -ge 5 ] && [ "$n" -le 12 ]; } || fail "$n attempts in 1.5 s with 50..200 ms backoff"
	run_named || fail "named did not restart"
	wait "$up" || fail "update failed after the server came back: $(cat "$T/out")"
	r=$(cat "$T/out")
	expect_eq status "$(field "$r" status)" ok
	[ "$(field "$r" attempts)" -gt "$n" ] || fail "attempts $(field "$r" attempts) <= $n"
	expect_eq "A after restart" "$(dig_rr cache.ha.example. A)" 10.0.0.7
}

# While the server is down a newer update of the name supersedes the one backing off;
# only the latest address lands.
test_supersede_while_down() {
	start_named
	stop_named
	(sleep 1; run_named; echo "$NAMED_PID" >"$T/named.pid") &
	starter=$!
	r=$(dnsup --retry-min-ms 50 --retry-max-ms 100 update cache.ha.example. 10.0.0.7 \
		cache.ha.example. 10.0.0.8)
	wait "$starter"
	NAMED_PID=$(cat "$T/named.pid")
	expect_eq results "$(wc -l <<<"$r")" 2
	expect_eq "first" "$(jq -r 'select(.addr == "10.0.0.7") | .status' <<<"$r")" superseded
	expect_eq "second" "$(jq -r 'select(.addr == "10.0.0.8") | .status' <<<"$r")" ok
	expect_eq "A" "$(dig_rr cache.ha.example. A)" 10.0.0.8
}

# UDP to a port nobody answers: timeouts, a bounded number of attempts when asked.
test_udp_timeout_gives_up() {
	start_named
	stop_named
	r=$(dnsup --udp --timeout-ms 200 --max-attempts 3 --retry-min-ms 100 \
		update cache.ha.example. 10.0.0.2)
	expect_eq status "$(field "$r" status)" transient
	expect_eq config_error "$(field "$r" config_error)" false
	expect_eq attempts "$(field "$r" attempts)" 3
	grep -q "timed out" <<<"$(field "$r" error)" || fail "message: $(field "$r" error)"
	grep -q "gave up after 3 attempts" <<<"$(field "$r" error)" || fail "message: $(field "$r" error)"
	ms=$(field "$r" elapsed_ms)
	# 3 x 200 ms timeouts + 100 + 200 ms backoff
	awk -v ms="$ms" 'BEGIN { exit !(ms >= 890 && ms < 2000) }' || fail "elapsed $ms ms"
}

TESTS=(test_update_moves_record test_algorithms test_query_and_repair test_wrong_secret
	test_wrong_key_name test_outside_policy test_zone_not_served test_messages_distinct
	test_server_down_then_back test_supersede_while_down test_udp_timeout_gives_up)
run_tests
