#!/usr/bin/env bash
# The controller keeps the shard's name on its primary: real BIND9 named,
# real redis-server x3 on three loopback addresses (127.0.0.21-23, so each primary
# has its own address), real agents and controller.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
. tests/lib/named.sh

H1=127.0.0.21 H2=127.0.0.22 H3=127.0.0.23

# setup [KEY [SECRET [NAME [ZONE]]]]: named, the servers, the controller (check_ms 1000),
# agents. CLOG is the controller's event log.
setup() {
	need_root
	need_cmd redis-server redis-cli jq nsupdate
	start_named
	local key=${1:-flatline} secret=${2:-$SECRET} name=${3:-cache.ha.example.} zone=${4:-ha.example.}
	PORT=$(free_port) CTL_PORT=$(free_port)
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl
	cat >"$CONF" <<-EOF
	[cluster]
	name = t
	secret = s3cret-s3cret-s3cret
	[agent]
	lease_ms = 0 ; the write lease has its own tests (test_lease.sh), in namespaces
	ping_interval_ms = 50
	heartbeat_ms = 100
	[controller]
	listen = 127.0.0.1:$CTL_PORT
	state_file = $T/state
	event_log = $CLOG
	[dns]
	server = 127.0.0.1:$NAMED_PORT
	zone = $zone
	tsig_name = $key
	tsig_algorithm = hmac-sha256
	tsig_secret = $secret
	ttl = 1
	check_ms = 1000
	[node "dn1-$$"]
	address = $H1
	redis = $H1:$PORT
	[node "dn2-$$"]
	address = $H2
	redis = $H2:$PORT
	[node "dn3-$$"]
	address = $H3
	redis = $H3:$PORT
	[shard "s"]
	nodes = dn1-$$ dn2-$$ dn3-$$
	dns_name = $name
	EOF
	chmod 600 "$CONF" # it holds secrets
	for h in $H1 $H2 $H3; do
		args=()
		[ $h = $H1 ] || args=(--replicaof $H1 "$PORT")
		redis-server --port "$PORT" --bind $h --save '' --appendonly no --dir "$T" \
			--dbfilename "dump-$h.rdb" --logfile "$T/redis-$h.log" "${args[@]}" &
		on_exit "kill -KILL $!"
		eval "PID_${h##*.}=$!"
	done
	for h in $H1 $H2 $H3; do
		local end=$((SECONDS + FL_WAIT_S))
		until redis-cli -h $h -p "$PORT" ping 2>/dev/null | grep -q PONG; do
			[ $SECONDS -le $end ] || fail "redis on $h did not start"
			sleep 0.05
		done
	done
	"$FL" controller --allow-root -c "$CONF" >>"$T/controller.err" 2>&1 &
	CTL_PID=$!
	on_exit "kill -TERM $CTL_PID; wait $CTL_PID"
	wait_event "$CLOG" '.kind == "controller_ready"' >/dev/null || { cat "$T/controller.err" >&2; fail "controller did not start"; }
	for n in dn1 dn2 dn3; do
		"$FL" agent -c "$CONF" --node "$n-$$" --event-log "$T/events-$n.jsonl" 2>"$T/agent-$n.err" &
		on_exit "kill -TERM $!; wait $!"
	done
	for n in dn1 dn2 dn3; do
		wait_event "$CLOG" ".kind == \"agent_connected\" and .instance == \"$n-$$\"" >/dev/null ||
			fail "agent $n did not connect: $(cat "$T/agent-$n.err")"
	done
}

# wait_record ADDR: the name's A record is ADDR.
wait_record() {
	local end=$((SECONDS + FL_WAIT_S))
	until [ "$(dig_rr cache.ha.example. A)" = "$1" ]; do
		[ $SECONDS -le $end ] || fail "record is '$(dig_rr cache.ha.example. A)', want $1"
		sleep 0.05
	done
}

# The zone file says 10.0.0.1: the controller points the name at the primary at start;
# someone changes it behind our back and the drift check repairs it; a kill -9 moves it
# to the new primary; the SOA serial rises each time.
test_start_drift_and_failover_move_record() {
	setup
	wait_record $H1
	serial0=$(soa_serial)
	nsupdate -y "hmac-sha256:flatline:$SECRET" <<-EOF
	server 127.0.0.1 $NAMED_PORT
	update delete cache.ha.example. A
	update add cache.ha.example. 60 A 10.9.9.9
	send
	EOF
	expect_eq "record after the foreign update" "$(dig_rr cache.ha.example. A)" 10.9.9.9
	ev=$(wait_event "$CLOG" '.kind == "dns_repaired"') || { cat "$T/controller.err" >&2; fail "drift not repaired"; }
	expect_eq "repaired to" "$(jq -r .addr <<<"$ev")" $H1
	wait_record $H1
	serial1=$(soa_serial)
	[ "$serial1" -gt "$serial0" ] || fail "SOA serial did not rise: $serial0 -> $serial1"
	kill -KILL "$PID_21"
	ev=$(wait_event "$CLOG" ".kind == \"dns_updated\" and .addr != \"$H1\"") || fail "no dns_updated after the failover"
	new=$(jq -r .addr <<<"$ev")
	[ "$new" = $H2 ] || [ "$new" = $H3 ] || fail "moved to $new"
	expect_eq rcode "$(jq -r .rcode <<<"$ev")" NOERROR
	# The record moves only after the promotion was accepted.
	p=$(jq -c 'select(.kind == "promoted")' "$CLOG" | head -n 1)
	[ -n "$p" ] && [[ $(jq -r .ts <<<"$p") < $(jq -r .ts <<<"$ev") ]] || fail "dns_updated before promoted"
	expect_eq "A record after the failover" "$(dig_rr cache.ha.example. A)" "$new"
	[ "$(soa_serial)" -gt "$serial1" ] || fail "SOA serial did not rise after the failover"
	sleep 1.2 # a drift check has run since
	"$FL" status -c "$CONF" | grep -q "dns cache.ha.example. -> $new: agrees" ||
		fail "status does not show DNS agreeing: $("$FL" status -c "$CONF")"
}

# check_refused WHAT EXPECT-IN-MESSAGE SETUP-ARGS...: the configuration error is
# logged with its rcode and hint, once, and not retried in a loop.
check_refused() {
	local what=$1 want=$2
	shift 2
	setup "$@"
	ev=$(wait_event "$CLOG" '.kind == "dns_failed"') || fail "$what: no dns_failed"
	expect_eq "$what: config_error" "$(jq -r .config_error <<<"$ev")" true
	expect_eq "$what: attempts" "$(jq -r .attempts <<<"$ev")" 1
	grep -q -- "$want" <<<"$ev" || fail "$what: reason lacks '$want': $ev"
	sleep 3 # three drift checks' worth: still one failure, one message
	expect_eq "$what: dns_failed events" "$(count_events "$CLOG" '.kind == "dns_failed"')" 1
	expect_eq "$what: messages" "$(grep -c "DNS update of" "$T/controller.err")" 1
}

test_wrong_secret() {
	check_refused "wrong secret" BADSIG flatline "$(head -c 32 /dev/urandom | base64)"
	# The promotion does not wait for DNS.
	kill -KILL "$PID_21"
	wait_event "$CLOG" '.kind == "switch_master"' >/dev/null || fail "no failover while DNS refuses us"
}
test_wrong_key_name() { check_refused "wrong key name" BADKEY nokey; }
test_name_outside_policy() { check_refused "name outside the policy" REFUSED flatline "" other.ha.example.; }
test_zone_not_served() { check_refused "zone not served" NOT flatline "" cache.other.example. other.example.; }

# named stopped during a failover and started again: the record is repaired.
test_named_down_during_failover() {
	setup
	wait_record $H1
	stop_named
	kill -KILL "$PID_21"
	ev=$(wait_event "$CLOG" '.kind == "switch_master"') || fail "no failover with named down"
	sleep 1
	run_named || fail "named did not restart"
	ev=$(wait_event "$CLOG" '(.kind == "dns_updated" or .kind == "dns_repaired") and .addr != "'$H1'"' 15) ||
		fail "record not repaired after named came back: $(jq -c 'select(.kind | startswith("dns"))' "$CLOG")"
	new=$(jq -r .addr <<<"$ev")
	expect_eq "A record" "$(dig_rr cache.ha.example. A)" "$new"
}

TESTS=(test_start_drift_and_failover_move_record test_wrong_secret test_wrong_key_name
	test_name_outside_policy test_zone_not_served test_named_down_during_failover)
run_tests
