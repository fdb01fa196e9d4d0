#!/usr/bin/env bash
# TLS everywhere (issue 14, part 3): certificates made here with the openssl CLI,
# real redis-servers on their tls-port only (port 0, tls-replication yes,
# tls-auth-clients yes), the controller on tls_listen only, agents and the
# controller speaking TLS to the servers and agents to the controller; a planned
# switchover and a kill -9 failed over with REPLICAOF over TLS; redis-py and ioredis
# following the shard through the Sentinel API over TLS; what must be refused is
# refused with a clear line and the controller stays up and small.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
PY=/usr/bin/python3
NODE_DIR=$PWD/tests/node
# Peak resident memory allowed to the controller (VmHWM) under the attacks below;
# test_hostile.sh's bound, three times that under ASan (make check-integration-asan:
# shadow memory and the quarantine).
if [ "${BUILD:-build}" = build-asan ]; then RSS_MAX_KB=${RSS_MAX_KB:-196608}; fi
RSS_MAX_KB=${RSS_MAX_KB:-65536}

need_tls() {
	need_root
	need_cmd openssl redis-server redis-cli jq # a redis-server without TLS: SKIP in tls_redis
}

# mkcert DIR NAME CA SAN: NAME.key/NAME.crt signed by CA (CA.key/CA.crt), for
# servers and clients both.
mkcert() {
	local d=$1 n=$2 ca=$3 san=$4
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$d/$n.key" \
		-out "$d/$n.csr" -subj "/CN=$n" 2>/dev/null || fail "openssl req $n failed"
	printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n' \
		"$san" >"$d/$n.ext"
	openssl x509 -req -in "$d/$n.csr" -CA "$d/$ca.crt" -CAkey "$d/$ca.key" -CAcreateserial \
		-out "$d/$n.crt" -days 2 -extfile "$d/$n.ext" 2>/dev/null || fail "openssl x509 $n failed"
	chmod 600 "$d/$n.key"
}

mkca() { # DIR NAME
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$1/$2.key" -out "$1/$2.crt" -subj "/CN=$2" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign,cRLSign \
		2>/dev/null || fail "openssl req -x509 $2 failed"
}

# certs: $C/ca (the cluster's CA), server (redis, 127.0.0.1), ctl (the controller,
# 127.0.0.1 and localhost), agent and client (client certificates), and from another
# CA: evil (a client certificate) and evilca.crt.
certs() {
	C=$T/pki
	mkdir -p "$C"
	mkca "$C" ca
	mkca "$C" evilca
	mkcert "$C" server ca "IP:127.0.0.1"
	mkcert "$C" ctl ca "IP:127.0.0.1,DNS:localhost"
	mkcert "$C" agent ca "DNS:agent"
	mkcert "$C" client ca "DNS:client"
	mkcert "$C" evil evilca "IP:127.0.0.1"
	mkcert "$C" other ca "DNS:other.example"
}

# tls_redis PORT [ARGS...]: redis-server on its TLS port only; REDIS_PID.
tls_redis() {
	local port=$1; shift
	redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--tls-cert-file "$C/server.crt" --tls-key-file "$C/server.key" \
		--tls-ca-cert-file "$C/ca.crt" --tls-auth-clients yes --tls-replication yes \
		--repl-diskless-sync-delay 0 --dir "$T" --dbfilename "dump-$port.rdb" \
		--logfile "$T/redis-$port.log" "$@" &
	REDIS_PID=$!
	on_exit "kill -KILL $REDIS_PID"
	local end=$((SECONDS + FL_WAIT_S))
	until rcli "$port" ping 2>/dev/null | grep -q PONG; do
		kill -0 "$REDIS_PID" 2>/dev/null || { tail -n 5 "$T/redis-$port.log" >&2; skip "redis-server has no TLS (tls-port)"; }
		[ $SECONDS -le $end ] || fail "redis-server on TLS port $port did not start"
		sleep 0.05
	done
}

rcli() { # PORT ARGS...: redis-cli over TLS with the client certificate
	local port=$1; shift
	redis-cli --tls --cacert "$C/ca.crt" --cert "$C/client.crt" --key "$C/client.key" \
		-h 127.0.0.1 -p "$port" "$@"
}

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

start_ctl() { spawn_controller; }

# agent NAME [CONF]: an agent for node NAME-$$ with its stderr in $T/agent-NAME.err.
agent() {
	"$FL" agent -c "${2:-$CONF}" --node "$1-$$" --event-log "$T/events-$1.jsonl" 2>"$T/agent-$1.err" &
	on_exit "kill -TERM $!; wait $!"
	LAST_AGENT=$!
}

# setup: certificates, t1 primary and t2 replica on their TLS ports, the controller
# on its TLS port only, an agent per server.
setup() {
	need_tls
	certs
	P1=$(free_port) P2=$(free_port) CTL_PORT=$(free_port)
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl
	conf "$CONF"
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

role() { rcli "$1" role 2>/dev/null | head -n 1; }
link_up() { rcli "$1" info replication 2>/dev/null | tr -d '\r' | grep -q '^master_link_status:up'; }
until_s() { # SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -le $end ] || return 1; sleep 0.05; done
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

TESTS=(test_tls_cluster_failover test_tls_sentinel_clients test_tls_refusals test_tls_config_errors
	test_tls_hostname_checked)
run_tests
