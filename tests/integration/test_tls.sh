#!/usr/bin/env bash
# TLS everywhere: certificates made here with the openssl CLI,
# real redis-servers on their tls-port only (port 0, tls-replication yes,
# tls-auth-clients yes), the controller on tls_listen only, agents and the
# controller speaking TLS to the servers and agents to the controller; a planned
# switchover and a kill -9 failed over with REPLICAOF over TLS; redis-py and ioredis
# following the shard through the Sentinel API over TLS; what must be refused is
# refused with a clear line and the controller stays up and small.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/tls.sh
. tests/lib/tls.sh
PY=/usr/bin/python3
NODE_DIR=$PWD/tests/node
# Peak resident memory allowed to the controller (VmHWM) under the attacks below;
# test_hostile.sh's bound, three times that under ASan (make check-integration-asan:
# shadow memory and the quarantine).
if [ "${BUILD:-build}" = build-asan ]; then RSS_MAX_KB=${RSS_MAX_KB:-196608}; fi
RSS_MAX_KB=${RSS_MAX_KB:-65536}

# conf FILE [EXTRA-AGENT-LINES]: the cluster file, TLS everywhere.
conf() {
	cat >"$1" <<-EOF
	[cluster]
	name = t
	secret = s3cret-s3cret-s3cret
	[agent]
	ping_interval_ms = 50
	hung_after = 4
	heartbeat_ms = 100
	lease_ms = 0
	${2:-tls_cert = $C/agent.crt
	tls_key = $C/agent.key}
	[controller]
	tls_listen = 127.0.0.1:$CTL_PORT
	tls_cert = $C/ctl.crt
	tls_key = $C/ctl.key
	tls_ca = $C/ca.crt
	node_down_after_ms = 1000
	state_file = $T/state
	event_log = $CLOG
	failover_block_ms = 1000
	[redis]
	tls = yes
	tls_ca = $C/ca.crt
	tls_cert = $C/client.crt
	tls_key = $C/client.key
	[node "t1-$$"]
	address = 127.0.0.21
	redis = 127.0.0.1:$P1
	[node "t2-$$"]
	address = 127.0.0.22
	redis = 127.0.0.1:$P2
	[shard "s"]
	nodes = t1-$$ t2-$$
	EOF
	chmod 600 "$1"
}

# start_ctl: the controller (testlib.sh's spawn_controller), under TLS_IN when set.
start_ctl() { spawn_controller "${TLS_IN[@]}"; }

# agent NAME [CONF]: an agent for node NAME-$$ with its stderr in $T/agent-NAME.err.
agent() {
	"${TLS_IN[@]}" "$FL" agent -c "${2:-$CONF}" --node "$1-$$" --event-log "$T/events-$1.jsonl" 2>"$T/agent-$1.err" &
	on_exit "kill -TERM $!; wait $!"
	LAST_AGENT=$!
}

# setup [SED]: certificates, t1 primary and t2 replica on their TLS ports, the
# controller on its TLS port only, an agent per server (SED: edits the cluster file).
setup() {
	need_tls
	certs
	P1=$(free_port) P2=$(free_port) CTL_PORT=$(free_port)
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl
	conf "$CONF"
	[ -z "${1:-}" ] || sed -i "$1" "$CONF"
	tls_redis "$P1"; PID_1=$REDIS_PID
	tls_redis "$P2" --replicaof 127.0.0.1 "$P1"; PID_2=$REDIS_PID
	start_ctl
	agent t1; A1=$LAST_AGENT
	agent t2
	wait_event "$CLOG" ".kind == \"agent_connected\" and .instance == \"t1-$$\"" >/dev/null ||
		{ tail -n 5 "$T/agent-t1.err" "$T/controller.err" >&2; fail "agent t1 did not connect over TLS"; }
	wait_event "$CLOG" ".kind == \"agent_connected\" and .instance == \"t2-$$\"" >/dev/null ||
		{ tail -n 5 "$T/agent-t2.err" "$T/controller.err" >&2; fail "agent t2 did not connect over TLS"; }
}

hwm_kb() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }

ctl_alive() { kill -0 "$CTL_PID" 2>/dev/null || { tail -n 5 "$T/controller.err" >&2; fail "controller died: $1"; }; }

ctl_rss() {
	local hwm
	ctl_alive "$1"
	hwm=$(hwm_kb "$CTL_PID")
	echo "    $1: controller peak RSS ${hwm} kB" >&2
	[ "$hwm" -le "$RSS_MAX_KB" ] || fail "$1: controller peak RSS ${hwm} kB > ${RSS_MAX_KB} kB"
}

# The whole cluster over TLS: status over TLS, a planned switchover (REPLICAOF over
# TLS: the old primary replicates from the new one on its TLS port), then kill -9 of
# the new primary failed over, and the survivor writable over TLS.
test_tls_cluster_failover() {
	setup
	until_s "$FL_WAIT_S" link_up "$P2" || fail "t2 never replicated from t1 over TLS"
	# No plain socket: tls_listen alone.
	! redis-cli -h 127.0.0.1 -p "$CTL_PORT" ping 2>/dev/null | grep -q PONG ||
		fail "the TLS port answered plain text"
	grep -q "listening on tls 127.0.0.1:$CTL_PORT" "$T/controller.err" ||
		fail "controller does not say it listens with TLS: $(head -n 3 "$T/controller.err")"
	local st
	st=$(timeout 10 "$FL" status -c "$CONF" --json) || fail "flatline status over TLS failed: $st"
	jq -e . <<<"$st" >/dev/null || fail "flatline status over TLS: not JSON: $st"
	grep -q "t1-$$" <<<"$st" || fail "flatline status over TLS: no node t1: $st"
	# Planned switchover, over TLS, to t2.
	timeout 30 "$FL" failover s --to "t2-$$" -c "$CONF" >"$T/failover.out" 2>&1 ||
		fail "flatline failover over TLS failed: $(tail -n 5 "$T/failover.out")"
	[ "$(role "$P2")" = master ] || fail "t2 not promoted by the switchover"
	until_s "$FL_WAIT_S" link_up "$P1" ||
		fail "t1 does not replicate from t2 over TLS: $(rcli "$P1" info replication | tr -d '\r' | grep -E 'role|master_')"
	rcli "$P2" set k1 v1 >/dev/null
	until_s 5 eval '[ "$(rcli "$P1" get k1)" = v1 ]' || fail "a write on t2 did not reach t1 over TLS"
	# kill -9 of the primary (t2): failed over to t1, writable over TLS.
	local n
	n=$(count_events "$CLOG" '.kind == "failover_end"')
	kill -KILL "$PID_2"
	local end=$((SECONDS + 15))
	until [ "$(count_events "$CLOG" '.kind == "failover_end"')" -gt "$n" ]; do
		[ $SECONDS -le $end ] || { tail -n 20 "$CLOG" >&2; fail "kill -9 of the primary not failed over"; }
		sleep 0.05
	done
	[ "$(role "$P1")" = master ] || fail "t1 not promoted"
	[ "$(rcli "$P1" set k2 v2)" = OK ] || fail "the new primary is not writable over TLS"
	ctl_rss "TLS cluster"
	# The one refusal: the plain-text PING above.
	[ "$(grep -c "TLS handshake failed" "$T/controller.err")" = 1 ] ||
		fail "handshakes failed in the healthy cluster: $(grep "TLS handshake failed" "$T/controller.err" | head -n 3)"
	! grep -q "TLS handshake failed" "$T/agent-t1.err" "$T/agent-t2.err" ||
		fail "an agent's handshake failed: $(grep -h "TLS handshake failed" "$T"/agent-*.err | head -n 3)"
}

# redis-py (Debian's python3-redis) and ioredis (tests/node, pinned) through the
# Sentinel API with TLS, to the primary on its TLS port: write and read back.
test_tls_sentinel_clients() {
	setup
	"$PY" -c 'import redis.sentinel' 2>/dev/null || skip "no python3-redis"
	local out
	out=$("$PY" - "$CTL_PORT" "$C" <<-'EOF' 2>&1
	import sys
	from redis.sentinel import Sentinel
	port, c = int(sys.argv[1]), sys.argv[2]
	tls = dict(ssl=True, ssl_ca_certs=c + "/ca.crt", ssl_certfile=c + "/client.crt",
	           ssl_keyfile=c + "/client.key", ssl_cert_reqs="required")
	s = Sentinel([("127.0.0.1", port)], sentinel_kwargs=tls, socket_timeout=2, **tls)
	print("master", "%s:%d" % s.discover_master("s"))
	m = s.master_for("s", socket_timeout=2)
	m.set("py", "ok")
	print("get", m.get("py").decode())
	EOF
	) || fail "redis-py over TLS: $out"
	grep -q "^master 127.0.0.1:$P1$" <<<"$out" || fail "redis-py: wrong master: $out"
	grep -q "^get ok$" <<<"$out" || fail "redis-py: no write through the Sentinel API: $out"
	echo "    redis-py: $(tr '\n' ' ' <<<"$out")" >&2
	need_cmd node
	[ -d "$NODE_DIR/node_modules/ioredis" ] || skip "ioredis not installed in $NODE_DIR (scripts/install-deps.sh)"
	out=$(timeout 20 node "$NODE_DIR/tls_sentinel.js" "$CTL_PORT" s "$C" 2>&1) || fail "ioredis over TLS: $out"
	grep -q "^get ok$" <<<"$out" || fail "ioredis: no write through the Sentinel API: $out"
	grep -q "^addr 127.0.0.1:$P1$" <<<"$out" || fail "ioredis: not on the primary: $out"
	echo "    ioredis: $(tr '\n' ' ' <<<"$out")" >&2
}

# ctl_said REGEX WHAT: the controller logged it (within FL_WAIT_S) and is alive.
ctl_said() {
	local end=$((SECONDS + FL_WAIT_S))
	until grep -qE "$1" "$T/controller.err"; do
		[ $SECONDS -le $end ] || { tail -n 5 "$T/controller.err" >&2; fail "$2: controller did not say /$1/"; }
		sleep 0.05
	done
	ctl_alive "$2"
}

# What must not get in: an agent without a client certificate, an agent that
# does not trust the controller's CA, one whose certificate is from another CA,
# a plain-text client, a handshake that never finishes; the controller stays up,
# small, and the cluster still fails over.
test_tls_refusals() {
	setup
	# 1. No client certificate (tls_auth_clients defaults to yes): flatline status,
	# then an agent in t1's place for a while.
	conf "$T/nocert.conf" "tls_ca = $C/ca.crt"
	"$FL" status -c "$T/nocert.conf" >"$T/status-nocert.out" 2>&1 &&
		fail "flatline status without a client certificate got in"
	ctl_said "TLS handshake failed: .*(peer did not return a certificate|certificate required)" \
		"no client certificate"
	kill -TERM "$A1"
	wait "$A1" || fail "agent t1 exited with status $?"
	sleep 1.1 # the per-address message interval
	local before
	before=$(grep -c "TLS handshake failed: peer did not return a certificate" "$T/controller.err")
	# wrong_agent CONF NAME REGEX: an agent for t1 with CONF says REGEX, then stops.
	wrong_agent() {
		"$FL" agent -c "$1" --node "t1-$$" --event-log "$T/events-$2.jsonl" 2>"$T/agent-$2.err" &
		local wpid=$! end=$((SECONDS + FL_WAIT_S))
		on_exit "kill -TERM $wpid; wait $wpid"
		until grep -qE "$3" "$T/agent-$2.err"; do
			[ $SECONDS -le $end ] || { tail -n 5 "$T/agent-$2.err" >&2; fail "$2: agent did not say /$3/"; }
			sleep 0.05
		done
		kill -TERM "$wpid"
		wait "$wpid" || fail "the $2 agent exited with status $?"
	}
	wrong_agent "$T/nocert.conf" nocert "controller 127.0.0.1:$CTL_PORT: .*certificate required"
	[ "$(grep -c "TLS handshake failed: peer did not return a certificate" "$T/controller.err")" -gt "$before" ] ||
		fail "no client certificate: the controller did not say why it closed the agent"
	# 2. The agent's CA is not the controller's: the agent refuses the controller.
	conf "$T/wrongca.conf" "tls_ca = $C/evilca.crt
	tls_cert = $C/agent.crt
	tls_key = $C/agent.key"
	wrong_agent "$T/wrongca.conf" wrongca "TLS handshake failed: certificate verify failed"
	ctl_alive "wrong CA"
	[ "$(count_events "$CLOG" ".kind == \"agent_connected\" and .instance == \"t1-$$\"")" = 1 ] ||
		fail "the agent without a certificate or with the wrong CA connected"
	mv "$T/agent-t1.err" "$T/agent-t1-first.err"
	agent t1
	until_s "$FL_WAIT_S" eval '[ "$(count_events "$CLOG" ".kind == \"agent_connected\" and .instance == \"t1-$$\"")" = 2 ]' ||
		fail "agent t1 did not come back"
	# 3. A client certificate from another CA: the controller refuses it.
	sleep 1.1 # the per-address message interval (the wrong-CA agent's aborts)
	"$FL" status -c "$CONF" --cert "$C/evil.crt" --key "$C/evil.key" >"$T/status-evil.out" 2>&1 &&
		fail "a certificate from another CA got in"
	ctl_said "TLS handshake failed: .*certificate verify failed|TLS handshake failed: .*unknown ca" \
		"certificate from another CA"
	# 4. Plain text on the TLS port.
	sleep 1.1 # the per-address message interval
	timeout 5 redis-cli -h 127.0.0.1 -p "$CTL_PORT" ping >"$T/plain.out" 2>&1 || echo "exit $?" >>"$T/plain.out"
	! grep -q PONG "$T/plain.out" || fail "plain text answered on the TLS port"
	ctl_said "TLS handshake failed: .*\(not TLS: a plain-text peer" "plain-text client"
	# 5. A TLS handshake begun and never finished: cut after the pre-auth timeout.
	sleep 1.1
	local t0=$SECONDS
	"$PY" - "$CTL_PORT" >"$T/stall.out" 2>&1 <<-'EOF' || fail "stalled handshake: $(cat "$T/stall.out")"
	import socket, sys, time
	s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
	s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello, begun
	s.settimeout(30)
	t = time.time()
	try:
	    d = s.recv(100)
	except ConnectionResetError:
	    d = b""
	print("closed after %.1f s, %d bytes" % (time.time() - t, len(d)))
	sys.exit(0 if d == b"" and time.time() - t < 20 else 1)
	EOF
	echo "    stalled handshake: $(cat "$T/stall.out")" >&2
	ctl_said "TLS handshake not finished within 5000 ms" "stalled handshake"
	[ $((SECONDS - t0)) -ge 4 ] || fail "stalled handshake cut too early ($((SECONDS - t0)) s)"
	# 6. 300 handshakes left half done at once, then 200 plain-text peers: RSS bounded.
	"$PY" - "$CTL_PORT" <<-'EOF' || fail "connection flood failed"
	import socket, sys, time
	port = int(sys.argv[1])
	socks = []
	for i in range(300):
	    s = socket.create_connection(("127.0.0.1", port))
	    s.sendall(b"\x16\x03\x01\x40\x00\x01\x00\x3f\xfc\x03\x03" + b"A" * 1000)
	    socks.append(s)
	for i in range(200):
	    s = socket.create_connection(("127.0.0.1", port))
	    s.sendall(b"*1\r\n$4\r\nPING\r\n" * 100)
	    socks.append(s)
	time.sleep(1)
	EOF
	ctl_rss "500 hostile TLS connections"
	# The agents are still connected and the cluster still fails over.
	kill -KILL "$PID_1"
	wait_event "$CLOG" '.kind == "failover_end"' 15 >/dev/null || { tail -n 20 "$CLOG" >&2; fail "no failover after the attacks"; }
	[ "$(role "$P2")" = master ] || fail "t2 not promoted"
}

# Bad TLS configuration: one line naming file:line, at load (flatline check) or
# when the controller starts; nothing half started.
test_tls_config_errors() {
	need_tls
	certs
	P1=$(free_port) P2=$(free_port) CTL_PORT=$(free_port)
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl
	local out
	# A key that does not match its certificate.
	conf "$CONF"
	sed -i "s|^tls_key = $C/ctl.key|tls_key = $C/server.key|" "$CONF"
	out=$("$FL" check -c "$CONF" 2>&1) && fail "flatline check accepted a mismatched key: $out"
	grep -qE "^$CONF:[0-9]+: \[controller\] tls_key: failed to use private key $C/server.key: it does not match" <<<"$out" ||
		fail "mismatched key: $out"
	out=$(timeout 10 "$FL" controller --allow-root -c "$CONF" 2>&1) && fail "controller started with a mismatched key"
	grep -q "tls_key: failed to use private key" <<<"$out" || fail "controller, mismatched key: $out"
	# A file that cannot be read.
	conf "$CONF"
	sed -i "s|^tls_ca = $C/ca.crt|tls_ca = $C/missing.crt|" "$CONF"
	out=$("$FL" check -c "$CONF" 2>&1) && fail "flatline check accepted a missing CA file"
	grep -qE "^$CONF:[0-9]+: \[controller\] tls_ca: failed to load CA certificates $C/missing.crt: No such file or directory" <<<"$out" ||
		fail "missing file: $out"
	# Not PEM.
	conf "$CONF"
	echo garbage >"$C/garbage.crt"
	sed -i "0,\|^tls_cert = $C/ctl.crt|s||tls_cert = $C/garbage.crt|" "$CONF"
	out=$("$FL" check -c "$CONF" 2>&1) && fail "flatline check accepted a garbage certificate"
	grep -qE "^$CONF:[0-9]+: \[controller\] tls_cert: failed to load certificate $C/garbage.crt" <<<"$out" ||
		fail "garbage certificate: $out"
	# Bad values, at load.
	conf "$CONF"
	sed -i 's|^tls_listen = .*|&\ntls_auth_clients = maybe|' "$CONF"
	out=$("$FL" check -c "$CONF" 2>&1) && fail "flatline check accepted tls_auth_clients = maybe"
	grep -qE "^$CONF:[0-9]+: \[controller\] tls_auth_clients: not yes, no or optional: 'maybe'" <<<"$out" ||
		fail "bad tls_auth_clients: $out"
	conf "$CONF"
	sed -i "s|^tls = yes|tls = sometimes|" "$CONF"
	out=$("$FL" check -c "$CONF" 2>&1) && fail "flatline check accepted tls = sometimes"
	grep -qE "^$CONF:[0-9]+: \[redis\] tls: not a boolean" <<<"$out" || fail "bad tls: $out"
	# A certificate that does not carry the name the agents dial: refused by them.
	conf "$CONF"
	out=$("$FL" check -c "$CONF" 2>&1) || fail "the good file does not validate: $out"
	grep -q "listens with TLS on 127.0.0.1:$CTL_PORT" <<<"$out" || fail "flatline check does not say TLS: $out"
}

# The controller's certificate must carry the address agents dial: one for another
# name is refused by the agent (host name verification), with the reason.
test_tls_hostname_checked() {
	need_tls
	certs
	P1=$(free_port) P2=$(free_port) CTL_PORT=$(free_port)
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl
	conf "$CONF"
	sed -i "s|^tls_cert = $C/ctl.crt|tls_cert = $C/other.crt|; s|^tls_key = $C/ctl.key|tls_key = $C/other.key|" "$CONF"
	tls_redis "$P1"
	tls_redis "$P2" --replicaof 127.0.0.1 "$P1"
	start_ctl
	agent t1
	local end=$((SECONDS + FL_WAIT_S))
	until grep -q "certificate verify failed: .*\(hostname\|IP address\) mismatch" "$T/agent-t1.err"; do
		[ $SECONDS -le $end ] || { tail -n 5 "$T/agent-t1.err" >&2; fail "agent accepted a certificate for another name"; }
		sleep 0.05
	done
	[ "$(count_events "$CLOG" '.kind == "agent_connected"')" = 0 ] ||
		fail "an agent connected to a controller whose certificate names another host"
	ctl_alive "host name mismatch"
}

# The write lease with the servers on their tls-port: everything in a network
# namespace of its own (the lease's pins outlive the agent; never in the root
# namespace), lease_ms = 500. The primary's agent takes the lease; a TLS client's
# write is acknowledged; kill -9 of that agent: once the lease has run out the same
# TLS connection's write is not acknowledged (the kernel drops the reply on the
# tls-port); a new agent gets the lease back and a new TLS connection writes again.
# node_down_after_ms is 30 s so that no failover interferes.
test_tls_lease() {
	need_tls
	need_cmd ip nsenter
	local ns=fltls$BASHPID
	ip netns add "$ns" || fail "ip netns add failed"
	on_exit "ip netns del $ns"
	on_exit "rm -rf /sys/fs/bpf/flatline/t1-$$ /sys/fs/bpf/flatline/t2-$$ /run/flatline/agent-t1-$$.lock /run/flatline/agent-t2-$$.lock"
	ip -n "$ns" link set lo up
	TLS_IN=(nsenter --net="/run/netns/$ns")
	setup 's/^lease_ms = 0/lease_ms = 500/; s/^node_down_after_ms = 1000/node_down_after_ms = 30000/'
	wait_event "$T/events-t1.jsonl" '.kind == "lease_regained"' >/dev/null ||
		{ tail -n 5 "$T/agent-t1.err" >&2; fail "t1's agent never took the lease"; }
	"${TLS_IN[@]}" "$PY" - "$P1" "$C" "$T/go" >"$T/lease-client.out" 2>&1 <<-'EOF' &
	import os, sys, time
	import redis
	port, c, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
	r = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=c + "/ca.crt",
	                ssl_certfile=c + "/client.crt", ssl_keyfile=c + "/client.key",
	                socket_timeout=2)
	print("first", r.set("a", "1"), flush=True)
	while not os.path.exists(go):
	    time.sleep(0.02)
	t = time.time()
	try:
	    print("second acked", r.set("b", "2"), flush=True)
	except Exception as e:
	    print("second unacked %s after %.1f s" % (type(e).__name__, time.time() - t), flush=True)
	EOF
	local cpid=$!
	on_exit "kill -KILL $cpid"
	until_s "$FL_WAIT_S" grep -q '^first True' "$T/lease-client.out" ||
		fail "no TLS write acknowledged under the lease: $(cat "$T/lease-client.out")"
	kill -KILL "$A1"
	sleep 1.5 # the lease (500 ms from the last REPORT sent) has run out
	touch "$T/go"
	wait "$cpid" || fail "the TLS client failed: $(cat "$T/lease-client.out")"
	echo "    $(tail -n 1 "$T/lease-client.out")" >&2
	grep -q '^second unacked' "$T/lease-client.out" ||
		fail "a write on the tls-port was acknowledged after the lease ran out: $(cat "$T/lease-client.out")"
	[ -z "$(rcli_t 3 "$P1" ping 2>/dev/null)" ] || fail "a new TLS connection got an answer without the lease"
	mv "$T/events-t1.jsonl" "$T/events-t1-first.jsonl"
	agent t1
	wait_event "$T/events-t1.jsonl" '.kind == "lease_regained"' >/dev/null ||
		{ tail -n 5 "$T/agent-t1.err" >&2; fail "the new agent did not get the lease back"; }
	until_s "$FL_WAIT_S" eval '[ "$(rcli_t 3 "$P1" set c 3 2>/dev/null)" = OK ]' ||
		fail "no TLS write acknowledged once the lease was back"
}

# The write lease over TLS across kill -9 of the primary (in a network namespace: the
# lease's pins outlive the agent): failed over to t2, t1 restarted as a master by
# hand (its supervisor) while holding no lease. The controller cannot open a TLS
# connection to it (the server's handshake flight is dropped before the controller
# can name itself), so t1's agent demotes it (self_demoted) over its own connection;
# a client writing to t1 directly all along gets no write acknowledged, and the
# controller's status shows t1 as a replica.
test_tls_lease_old_primary_rejoins() {
	need_tls
	need_cmd ip nsenter
	"$PY" -c 'import redis' 2>/dev/null || skip "no python3-redis"
	local ns=fltlr$BASHPID
	ip netns add "$ns" || fail "ip netns add failed"
	on_exit "ip netns del $ns"
	on_exit "rm -rf /sys/fs/bpf/flatline/t1-$$ /sys/fs/bpf/flatline/t2-$$ /run/flatline/agent-t1-$$.lock /run/flatline/agent-t2-$$.lock"
	ip -n "$ns" link set lo up
	TLS_IN=(nsenter --net="/run/netns/$ns")
	setup 's/^lease_ms = 0/lease_ms = 500/'
	wait_event "$T/events-t1.jsonl" '.kind == "lease_regained"' >/dev/null ||
		{ tail -n 5 "$T/agent-t1.err" >&2; fail "t1's agent never took the lease"; }
	until_s "$FL_WAIT_S" link_up "$P2" || fail "t2 never replicated from t1 over TLS"
	kill -KILL "$PID_1"
	wait_event "$CLOG" '.kind == "failover_end"' >/dev/null ||
		{ tail -n 20 "$CLOG" >&2; fail "kill -9 of the primary not failed over"; }
	[ "$(role "$P2")" = master ] || fail "t2 not promoted"
	# Restarted as a master (no replicaof): no lease, the controller names t2.
	tls_redis_bg "$P1"
	"${TLS_IN[@]}" "$PY" - "$P1" "$C" "$T/stop" >"$T/writer.out" 2>&1 <<-'EOF' &
	import os, sys, time
	import redis
	port, c, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
	acked = tries = 0
	readonly = None
	t0 = time.time()
	while not os.path.exists(stop):
	    try:
	        r = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=c + "/ca.crt",
	                        ssl_certfile=c + "/client.crt", ssl_keyfile=c + "/client.key",
	                        socket_timeout=0.3, socket_connect_timeout=0.3)
	        while not os.path.exists(stop):
	            tries += 1
	            if r.set("x", str(tries)):
	                acked += 1
	    except redis.exceptions.ReadOnlyError:
	        if readonly is None:
	            readonly = time.time() - t0
	        time.sleep(0.05)
	    except Exception:
	        time.sleep(0.01)
	print("acked %d tries %d readonly_after_s %s" % (acked, tries, readonly), flush=True)
	EOF
	local wpid=$!
	on_exit "kill -KILL $wpid"
	# A replica of t2 within 10 s (the agent's next answers; the lease then holds).
	until_s 10 eval '[ "$(rcli_t 2 "$P1" role 2>/dev/null | head -n 1)" = slave ]' ||
		{ tail -n 5 "$T/agent-t1.err" >&2; fail "the old primary was not demoted within 10 s"; }
	local ev
	ev=$(wait_event "$T/events-t1.jsonl" '.kind == "self_demoted"') ||
		{ tail -n 5 "$T/agent-t1.err" >&2; fail "no self_demoted event"; }
	echo "    $ev" >&2
	jq -e --arg p "t2-$$" '.primary == $p and .epoch >= 1' <<<"$ev" >/dev/null ||
		fail "self_demoted does not name t2 at an epoch: $ev"
	until_s "$FL_WAIT_S" link_up "$P1" || fail "t1 does not replicate from t2 over TLS"
	# The controller says it as its own demotion (and publishes +convert-to-slave).
	wait_event "$CLOG" ".kind == \"old_primary_demoted\" and .instance == \"t1-$$\" and (.reason | test(\"self_demoted\"))" >/dev/null ||
		{ tail -n 10 "$CLOG" >&2; fail "the controller did not log t1's demotion by its agent"; }
	sleep 1
	touch "$T/stop"
	wait "$wpid" || fail "the writer failed: $(cat "$T/writer.out")"
	echo "    writer on the old primary: $(cat "$T/writer.out")" >&2
	grep -q '^acked 0 ' "$T/writer.out" ||
		fail "the old primary acknowledged writes after the failover: $(cat "$T/writer.out")"
	grep -q 'readonly_after_s [0-9]' "$T/writer.out" ||
		fail "the writer never met the demoted server: $(cat "$T/writer.out")"
	local st
	until_s "$FL_WAIT_S" eval 'st=$("${TLS_IN[@]}" timeout 10 "$FL" status -c "$CONF" --json) &&
		jq -e --arg id "t1-$$" "[.. | objects | select(.id? == \$id and .role? == \"replica\" and .server_role? == \"slave\")] | length > 0" <<<"$st" >/dev/null' ||
		fail "the controller's status does not show t1 as a replica: $st"
	# No config file: the REPLICAOF did not outlive the server. Killed and restarted
	# as a master again (same epoch): demoted again.
	local down='.kind == "proc_exit" or .kind == "proc_down"' n
	n=$(count_events "$T/events-t1.jsonl" "$down")
	kill -KILL "$REDIS_PID"
	until_s "$FL_WAIT_S" eval '[ "$(count_events "$T/events-t1.jsonl" "$down")" -gt "$n" ]' ||
		fail "t1's agent did not see its server's second exit"
	tls_redis_bg "$P1"
	until_s 10 eval '[ "$(jq -c "select(.kind == \"self_demoted\")" "$T/events-t1.jsonl" | wc -l)" -ge 2 ]' ||
		{ tail -n 5 "$T/agent-t1.err" >&2; fail "the old primary restarted as a master again was not demoted again"; }
	until_s 10 eval '[ "$(rcli_t 2 "$P1" role 2>/dev/null | head -n 1)" = slave ]' ||
		fail "t1 is not a replica after its second restart"
}

# A client over TLS follows a failover: redis-py's Sentinel (ssl=True) writes every
# 10 ms through master_for, before and after kill -9 of the primary; every error is
# counted, the writes resume on the new primary, and the outage is bounded.
test_tls_client_follows_failover() {
	setup
	"$PY" -c 'import redis.sentinel' 2>/dev/null || skip "no python3-redis"
	until_s "$FL_WAIT_S" link_up "$P2" || fail "t2 never replicated from t1 over TLS"
	"$PY" - "$CTL_PORT" "$C" "$T/killed" >"$T/writer.out" 2>&1 <<-'EOF' &
	import os, sys, time
	from redis.sentinel import Sentinel
	port, c, killed = int(sys.argv[1]), sys.argv[2], sys.argv[3]
	tls = dict(ssl=True, ssl_ca_certs=c + "/ca.crt", ssl_certfile=c + "/client.crt",
	           ssl_keyfile=c + "/client.key", ssl_cert_reqs="required")
	s = Sentinel([("127.0.0.1", port)], sentinel_kwargs=tls, socket_timeout=1, **tls)
	m = s.master_for("s", socket_timeout=1)
	before = after = errors = 0
	last_ok = time.time()
	gap = 0.0
	end = time.time() + 30
	while time.time() < end:
	    try:
	        m.set("w", str(before + after))
	        now = time.time()
	        gap = max(gap, now - last_ok)
	        last_ok = now
	        if os.path.exists(killed):
	            after += 1
	        else:
	            before += 1
	        if after >= 100:
	            break
	    except Exception as e:
	        errors += 1
	        if errors <= 3:
	            print("error", type(e).__name__, str(e)[:100], flush=True)
	        time.sleep(0.05)
	    time.sleep(0.01)
	addr = "%s:%d" % s.discover_master("s")
	print("before %d after %d errors %d gap_ms %d master %s" % (before, after, errors, gap * 1000, addr))
	EOF
	local wpid=$!
	on_exit "kill -KILL $wpid"
	sleep 1
	touch "$T/killed"
	kill -KILL "$PID_1"
	wait "$wpid" || fail "the TLS writer failed: $(cat "$T/writer.out")"
	local line b a e g
	line=$(grep '^before ' "$T/writer.out") || fail "the TLS writer said nothing: $(cat "$T/writer.out")"
	echo "    redis-py over TLS across kill -9: $line" >&2
	read -r _ b _ a _ e _ g _ <<<"$line"
	[ "$b" -gt 10 ] || fail "too few writes before the kill: $line"
	[ "$a" -ge 100 ] || fail "the writer did not follow the failover: $line"
	grep -q "master 127.0.0.1:$P2$" <<<"$line" || fail "the writer is not on the new primary: $line"
	# The failover takes node_down_after_ms (1 s) and some; 10 s bounds it generously.
	[ "$g" -le 10000 ] || fail "writes stopped for $g ms across the failover: $line"
	# Errors while no primary answers: at most one per 60 ms (1 s timeout or 50 ms pause).
	[ "$e" -le $((g / 50 + 5)) ] || fail "$e errors for a $g ms outage: $line"
	[ "$(rcli "$P2" get w)" -ge $((b + a - 1)) ] || fail "the last write is not on t2: $(rcli "$P2" get w)"
}

TESTS=(test_tls_cluster_failover test_tls_sentinel_clients test_tls_refusals test_tls_config_errors
	test_tls_hostname_checked test_tls_client_follows_failover test_tls_lease
	test_tls_lease_old_primary_rejoins)
run_tests
