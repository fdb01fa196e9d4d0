# shellcheck shell=bash disable=SC2034  # sets variables for the sourcing test
# BIND9 named for the DNS tests (sourced after testlib.sh, inside a test): the primary for
# ha.example. on 127.0.0.1 at a random high port, everything in $T/named, its own TSIG
# keys from tsig-keygen, no rndc (controls { };). Runs as the invoking user (-u omitted),
# so it can write its journal in the temp directory.
#
#   start_named            keys, zone, config; starts named and waits for an answer.
#                          Sets NAMED_PORT, NAMED_DIR, NAMED_LOG, SECRET (key flatline,
#                          hmac-sha256), SECRET512 (flatline512), SECRET1 (flatline1).
#   stop_named / run_named stop it (SIGTERM, wait) / start it again on the same port.
#   dig_rr NAME TYPE       the RRset's data, one per line, sorted (dig's errors dropped).
#   soa_serial             the zone's serial.
#
# Every key may change cache.ha.example.'s A records; flatline its AAAA records too.

need_named() { need_cmd named tsig-keygen dig; }

key_secret() { # KEYNAME
	awk -v k="\"$1\"" '$1 == "key" && $2 == k { f = 1 }
		f && $1 == "secret" { gsub(/[";]/, "", $2); print $2; exit }' "$NAMED_DIR/keys.conf"
}

write_named_conf() {
	cat >"$NAMED_DIR/named.conf" <<EOF
include "$NAMED_DIR/keys.conf";
options {
	directory "$NAMED_DIR";
	pid-file "$NAMED_DIR/named.pid";
	session-keyfile "$NAMED_DIR/session.key";
	managed-keys-directory "$NAMED_DIR";
	listen-on port $NAMED_PORT { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
};
controls { };
zone "ha.example" {
	type primary;
	file "$NAMED_DIR/ha.example.db";
	update-policy {
		grant flatline name cache.ha.example. A;
		grant flatline name cache.ha.example. AAAA;
		grant flatline512 name cache.ha.example. A;
		grant flatline1 name cache.ha.example. A;
	};
};
EOF
}

# run_named: starts named on NAMED_PORT; 0 once it answers over UDP and over TCP (what
# the tests use: dnsupdate's default), 1 if it died, stayed mute, or could not have the
# port. named that cannot bind one of the two says "address in use" and serves the
# other only (a client's socket on that port, even one in TIME_WAIT, takes it for TCP).
run_named() {
	local end=$((SECONDS + FL_WAIT_S)) mark
	mark=$(wc -l <"$NAMED_LOG" 2>/dev/null || echo 0)
	named -g -c "$NAMED_DIR/named.conf" >>"$NAMED_LOG" 2>&1 &
	NAMED_PID=$!
	while [ $SECONDS -le $end ]; do
		kill -0 "$NAMED_PID" 2>/dev/null || { NAMED_PID=; return 1; }
		if tail -n +"$((mark + 1))" "$NAMED_LOG" | grep -q 'address in use'; then
			echo "named on port $NAMED_PORT: $(tail -n +"$((mark + 1))" "$NAMED_LOG" | grep 'address in use' | head -n 1)" >&2
			return 1
		fi
		dig_rr ha.example. SOA | grep -q '^ns\.ha\.example\. ' &&
			dig_rr ha.example. SOA +tcp | grep -q '^ns\.ha\.example\. ' && return 0
		sleep 0.05
	done
	return 1
}

stop_named() {
	[ -n "${NAMED_PID:-}" ] || return 0
	kill -TERM "$NAMED_PID" 2>/dev/null || true
	wait "$NAMED_PID" 2>/dev/null || true # not our child if a subshell started it: poll
	for _ in $(seq 100); do kill -0 "$NAMED_PID" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$NAMED_PID" 2>/dev/null || true
	NAMED_PID=
}

start_named() {
	local try lo
	need_named
	NAMED_DIR=$T/named
	NAMED_LOG=$NAMED_DIR/named.log
	mkdir -p "$NAMED_DIR"
	{
		tsig-keygen -a hmac-sha256 flatline
		tsig-keygen -a hmac-sha512 flatline512
		tsig-keygen -a hmac-sha1 flatline1
	} >"$NAMED_DIR/keys.conf"
	SECRET=$(key_secret flatline)
	SECRET512=$(key_secret flatline512)
	SECRET1=$(key_secret flatline1)
	cat >"$NAMED_DIR/ha.example.db" <<'EOF'
$TTL 60
@	IN SOA	ns.ha.example. admin.ha.example. 1 60 60 600 60
@	IN NS	ns.ha.example.
ns	IN A	127.0.0.1
cache	IN A	10.0.0.1
EOF
	on_exit stop_named
	# A random port below the kernel's ephemeral range (no client socket takes one
	# there); it may still be taken by a server: then another.
	lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	[ "${lo:-0}" -gt 12000 ] || lo=32768
	for try in 1 2 3 4 5; do
		NAMED_PORT=$((10000 + RANDOM % (lo - 10000)))
		write_named_conf
		run_named && return 0
		stop_named
	done
	tail -n 20 "$NAMED_LOG" >&2
	fail "named did not start"
}

dig_rr() { dig +short +time=1 +tries=1 -p "$NAMED_PORT" @127.0.0.1 "$@" | grep -v '^;' | sort; } # NAME TYPE [dig options]
soa_serial() { dig_rr ha.example. SOA | awk '{ print $3 }'; }
