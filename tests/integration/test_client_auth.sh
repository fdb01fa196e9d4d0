#!/usr/bin/env bash
# Client authentication apart from node credentials, as
# Sentinel 6.2+ does it: [controller] requirepass and [user "name"] sections. Real
# controller, real agents (real BPF), real redis-server; real client libraries
# (redis-py, ioredis) logging in with the API password; an attacker guessing
# passwords at full speed; an agent connecting from an address not its node's.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
PY=/usr/bin/python3
NODE_DIR=$PWD/tests/node
ADMIN_PW=admin-pass-word-0001
READ_PW=reader-pass-word-001
OPS_PW=ops-pass-word-000001
SECRET=s3cret-s3cret-s3cret

# setup LISTEN ADDRESS A1 A2 [EXTRA]: two servers (ca1 primary, ca2 replica) whose
# nodes have addresses A1 and A2, the controller on LISTEN reached at ADDRESS (its
# stderr $T/controller.err, events $CLOG) with requirepass, a read-only user
# "reader" and a user "ops" that may also fail over; EXTRA more [controller] lines.
# An agent per server.
setup() {
	need_root
	# The users in a file of their own, as a controller-only include.
	cat >"$T/users.conf" <<-EOF
	[user "reader"]
	password = $READ_PW
	commands = read
	[user "ops"]
	password = $OPS_PW
	commands = read failover
	EOF
	chmod 600 "$T/users.conf"
	LB_LISTEN=$1 LB_ADDRESS=$2 LB_A1=$3 LB_A2=$4 LB_CTL="requirepass = $ADMIN_PW
${5:-}" LB_MORE="[include]
path = $T/users.conf" loopback_ctl ca
}

cli() { redis-cli --no-auth-warning -p "$CTL_PORT" "$@" 2>&1; }
if [[ ${BUILD:-build} == *asan* ]]; then RSS_MAX_KB=${RSS_MAX_KB:-524288}; else RSS_MAX_KB=${RSS_MAX_KB:-65536}; fi
hwm_kb() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }

test_every_command_needs_a_login() {
	setup 127.0.0.1:PORT 127.0.0.1:PORT 127.0.0.21 127.0.0.22
	wait_event "$CLOG" '.kind == "agent_connected"' >/dev/null || fail "no agent connected: the handshake needs no client login"
	local c r
	# Without a login, every command but AUTH, HELLO and QUIT: Redis's NOAUTH.
	for c in "PING" "INFO" "ROLE" "COMMAND" "SENTINEL MASTERS" "SENTINEL get-master-addr-by-name s" \
		"SENTINEL SENTINELS s" "SENTINEL FAILOVER s" "SENTINEL SET s quorum 1" "FLATLINE STATUS" \
		"FLATLINE FAILOVER s" "CLIENT LIST" "CLIENT KILL 127.0.0.1:1" "SUBSCRIBE +switch-master"; do
		r=$(cli $c | head -n 1)
		expect_eq "$c without a login" "$r" "NOAUTH Authentication required."
	done
	r=$(cli HELLO 3 | head -n 1)
	grep -q "^NOAUTH HELLO must be called with the client already authenticated" <<<"$r" || fail "HELLO without AUTH: $r"
	expect_eq "QUIT" "$(cli QUIT)" "OK"
	# The cluster secret is no client password once client authentication is on.
	expect_eq "AUTH <cluster secret>" "$(cli AUTH "$SECRET")" "WRONGPASS invalid username-password pair or user is disabled."
	expect_eq "AUTH wrong" "$(cli AUTH reader wrong-password-1234)" "WRONGPASS invalid username-password pair or user is disabled."
	# requirepass: the default user, everything.
	expect_eq "AUTH requirepass" "$(printf 'AUTH %s\nPING\n' "$ADMIN_PW" | cli | tr '\n' ' ')" "OK PONG "
	r=$(cli -a "$ADMIN_PW" SENTINEL get-master-addr-by-name s | tr '\n' ' ')
	expect_eq "admin asks for the master" "$r" "127.0.0.1 $P1 "
	# A read-only user reads, and may not fail over or change anything: NOPERM.
	r=$(cli --user reader --pass "$READ_PW" SENTINEL get-master-addr-by-name s | tr '\n' ' ')
	expect_eq "reader asks for the master" "$r" "127.0.0.1 $P1 "
	expect_eq "reader FAILOVER" "$(cli --user reader --pass "$READ_PW" SENTINEL FAILOVER s)" \
		"NOPERM this user has no permissions to run the 'sentinel|failover' command"
	expect_eq "reader FLATLINE FAILOVER" "$(cli --user reader --pass "$READ_PW" FLATLINE FAILOVER s)" \
		"NOPERM this user has no permissions to run the 'flatline|failover' command"
	expect_eq "ops SENTINEL SET" "$(cli --user ops --pass "$OPS_PW" SENTINEL SET s quorum 1)" \
		"NOPERM this user has no permissions to run the 'sentinel|set' command"
	# A password set at runtime is not given to read users, and the
	# file that keeps it (<state_file>.runtime) is 0600 whatever the umask.
	expect_eq "admin CONFIG SET sentinel-pass" \
		"$(cli -a "$ADMIN_PW" SENTINEL CONFIG SET sentinel-pass runtime-secret-0001)" OK
	r=$(cli --user reader --pass "$READ_PW" SENTINEL CONFIG GET '*')
	grep -qx 'sentinel-user' <<<"$r" || fail "reader CONFIG GET *: $r"
	! grep -qE 'runtime-secret-0001|sentinel-pass' <<<"$r" || fail "a read user got sentinel-pass: $r"
	expect_eq "reader CONFIG GET sentinel-pass" "$(cli --user reader --pass "$READ_PW" SENTINEL CONFIG GET sentinel-pass)" ""
	expect_eq "admin CONFIG GET sentinel-pass" \
		"$(cli -a "$ADMIN_PW" SENTINEL CONFIG GET sentinel-pass | tr '\n' ' ')" "sentinel-pass runtime-secret-0001 "
	expect_eq "mode of $T/state.runtime (umask $(umask))" "$(stat -c %a "$T/state.runtime")" 600
	# HELLO 3 AUTH user pass SETNAME name: logged in, RESP3, named, in one go.
	r=$(printf 'HELLO 3 AUTH reader %s SETNAME app1\nCLIENT GETNAME\nCLIENT INFO\n' "$READ_PW" | cli)
	grep -q '^proto 3$' <<<"$r" || fail "HELLO 3 AUTH: $r"
	grep -q '^app1$' <<<"$r" || fail "HELLO SETNAME not kept: $r"
	grep -q 'user=reader' <<<"$r" || fail "CLIENT INFO does not show the user: $r"
	r=$(cli HELLO 3 AUTH reader wrong-password-1234 | head -n 1)
	expect_eq "HELLO AUTH wrong" "$r" "WRONGPASS invalid username-password pair or user is disabled."
	# flatline check says who may do what.
	r=$("$FL" check -c "$CONF")
	grep -q "clients log in (NOAUTH before): default (requirepass): all; reader: read; ops: read failover;" <<<"$r" ||
		fail "flatline check does not say who may log in: $(grep -i client <<<"$r")"
	# The CLI logs in with the file's requirepass.
	"$FL" status -c "$CONF" | grep -q "^shard s" || fail "flatline status without a login"
	# ops may fail over (FLATLINE FAILOVER, answered when done).
	sleep 1.2 # past failover_block_ms of the start
	r=$(cli --user ops --pass "$OPS_PW" FLATLINE FAILOVER s)
	! grep -qE "^(ERR|NOPERM|NOAUTH|WRONGPASS)" <<<"$r" || fail "ops FLATLINE FAILOVER: $r"
	wait_event "$CLOG" '.kind == "failover_end"' 15 >/dev/null || fail "no failover_end after ops' FLATLINE FAILOVER: $r"
	[ "$(redis-cli -p "$P2" role | head -n 1)" = master ] || fail "ca2 not promoted by ops"
	# A connection that never logs in is closed 10 s after its accept (it cannot
	# hold a maxclients slot); one that logged in stays.
	local idle logged t0 t1 line
	exec {idle}<>"/dev/tcp/127.0.0.1/$CTL_PORT" {logged}<>"/dev/tcp/127.0.0.1/$CTL_PORT"
	t0=$(date +%s%N)
	printf 'AUTH %s\r\n' "$ADMIN_PW" >&"$logged"
	read -r -t 5 line <&"$logged" || fail "no answer to AUTH"
	expect_eq "AUTH on a kept connection" "${line%$'\r'}" "+OK"
	if read -r -t 30 line <&"$idle"; then fail "the idle connection got a line: $line"; fi
	t1=$(date +%s%N)
	(( (t1 - t0) / 1000000 >= 9000 && (t1 - t0) / 1000000 < 30000 )) ||
		fail "the idle connection closed after $(( (t1 - t0) / 1000000 )) ms, not ~10 s"
	grep -q "not logged in within 10000 ms" "$T/controller.err" || fail "no log line for the idle connection"
	printf 'PING\r\n' >&"$logged"
	read -r -t 5 line <&"$logged" || fail "the logged-in connection was closed too"
	expect_eq "PING on the logged-in connection" "${line%$'\r'}" "+PONG"
	exec {idle}>&- {logged}>&-
	# Not logged in and not reading its NOAUTH answers: closed past 64 KiB unread
	# (class "unauthenticated"), not at the 16 MiB of logged-in clients.
	sleep 1.1 # past the per-address log interval of the idle close above
	r=$($PY - "$CTL_PORT" <<-'EOP'
	import socket, sys, time
	s = socket.socket()
	s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
	s.connect(("127.0.0.1", int(sys.argv[1])))
	sent = 0
	try:
	    for _ in range(400):
	        s.sendall(b"PING\r\n" * 10000)
	        sent += 60000
	    print("open", sent)
	except OSError as e:
	    print("closed", sent)
	EOP
	)
	echo "    a client not logged in that does not read: $r bytes sent" >&2
	[ "${r%% *}" = closed ] || fail "a client not logged in that does not read was not closed: $r"
	grep -q "output buffer limit of class unauthenticated" "$T/controller.err" ||
		fail "no log line for the unauthenticated output limit"
	kill -0 "$CTL_PID" || fail "controller died"
}

# A guesser at full speed, 50 connections from one address: its answers are
# queued per source address, so it gets at most one per 2 s once warmed up; a
# client from another address logs in at once; the log stays bounded.
test_guessing_is_slowed_per_address() {
	setup 127.0.0.1:PORT 127.0.0.1:PORT 127.0.0.21 127.0.0.22
	local before after r lines t0 t1
	before=$(wc -l <"$T/controller.err")
	t0=$(awk '{print $14 + $15}' "/proc/$CTL_PID/stat")
	r=$($PY tests/lib/hostile_client.py auth-flood "$CTL_PORT" 20 50 127.0.0.1)
	t1=$(awk '{print $14 + $15}' "/proc/$CTL_PID/stat")
	after=$(wc -l <"$T/controller.err")
	lines=$((after - before))
	echo "    guesser, 50 connections for 20 s: $r; $lines lines on stderr; controller CPU $((t1 - t0)) ticks, peak RSS $(hwm_kb "$CTL_PID") kB" >&2
	jq -e '.answers >= 5' <<<"$r" >/dev/null || fail "the guesser got no answers at all: $r"
	# Unslowed it would be tens of thousands a second (350,000/s).
	jq -e '.per_s <= 5' <<<"$r" >/dev/null || fail "guessing not slowed: $r"
	jq -e '.wrongpass == .answers' <<<"$r" >/dev/null || fail "a guess got another answer than WRONGPASS: $r"
	[ "$lines" -le 30 ] || fail "failed AUTHs logged $lines lines in 20 s"
	# Memory stays bounded through ~500,000 connections opened and closed (ASan
	# keeps freed memory in its quarantine, up to 256 MiB: more there).
	[ "$(hwm_kb "$CTL_PID")" -le "$RSS_MAX_KB" ] || fail "controller peak RSS $(hwm_kb "$CTL_PID") kB > $RSS_MAX_KB kB"
	grep -q "failed AUTH from 127.0.0.1:[0-9]* (user default)" "$T/controller.err" || fail "failed AUTHs not logged"
	# Counted per address, not per connection: from the guesser's address even
	# the right password waits its turn (else the fast answer would tell which
	# guess was right), here past 30 s of queued answers: closed unanswered.
	r=$($PY - "$CTL_PORT" "$ADMIN_PW" 127.0.0.1 <<-'EOP'
	import socket, sys, time
	s = socket.socket(); s.bind((sys.argv[3], 0)); s.connect(("127.0.0.1", int(sys.argv[1])))
	s.settimeout(10)
	t0 = time.time()
	s.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(sys.argv[2]), sys.argv[2].encode()))
	print(s.recv(100).decode().strip() or "closed", int((time.time() - t0) * 1000))
	EOP
	)
	echo "    the right password from the guesser's address: $r ms" >&2
	[ "${r%% *}" = closed ] || [ "${r##* }" -ge 1000 ] || fail "the guesser's address got a fast answer: $r ms"
	# From another address: at once.
	r=$($PY - "$CTL_PORT" "$ADMIN_PW" <<-'EOP'
	import socket, sys, time
	s = socket.socket(); s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", int(sys.argv[1])))
	t0 = time.time()
	s.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(sys.argv[2]), sys.argv[2].encode()))
	print(s.recv(100).decode().strip(), int((time.time() - t0) * 1000))
	EOP
	)
	echo "    login from 127.0.0.2 meanwhile: $r ms" >&2
	[ "${r%% *}" = "+OK" ] || fail "login from another address: $r"
	# The guesser's address waits 30 s by now; another's is answered at once. The
	# bound is generous: with the guesser's connections filling the accept
	# backlog, a SYN can be dropped and resent after 1 s on a loaded machine.
	[ "${r##* }" -le 5000 ] || fail "login from another address delayed: $r ms"
	kill -0 "$CTL_PID" || fail "controller died"
}

# Real clients with the API password: redis-py (Sentinel(sentinel_kwargs=
# {'password': ...})) and ioredis (sentinelPassword) find the master, and keep
# writing through a kill -9 of it, to the promoted replica.
test_real_clients_with_password() {
	need_cmd node
	[ -d "$NODE_DIR/node_modules/ioredis" ] || skip "ioredis not installed in $NODE_DIR (scripts/install-deps.sh)"
	"$PY" -c 'import redis.sentinel' 2>/dev/null || skip "no python3-redis"
	setup 127.0.0.1:PORT 127.0.0.1:PORT 127.0.0.21 127.0.0.22
	wait_event "$CLOG" '.kind == "agent_connected"' >/dev/null || fail "no agent connected"
	SENTINEL_USER=reader SENTINEL_PASSWORD=$READ_PW "$PY" tests/lib/clientapp.py "127.0.0.1:$CTL_PORT" s kpy 100 "$T/redispy.out" \
		>"$T/redispy.json" 2>"$T/redispy.err" &
	on_exit "kill -TERM $! 2>/dev/null; wait $!"
	SENTINEL_PASSWORD=$ADMIN_PW node "$NODE_DIR/app.js" "127.0.0.1:$CTL_PORT" s kio 100 "$T/ioredis.out" \
		>"$T/ioredis.json" 2>"$T/ioredis.err" &
	on_exit "kill -TERM $! 2>/dev/null; wait $!"
	local app end n
	for app in redispy ioredis; do
		end=$((SECONDS + 15))
		until [ "$(grep -c '^A ' "$T/$app.out" 2>/dev/null)" -gt 50 ]; do
			[ $SECONDS -le $end ] || fail "$app wrote nothing: $(tail -n 3 "$T/$app.out" "$T/$app.err" 2>&1)"
			sleep 0.1
		done
		grep '^A ' "$T/$app.out" | tail -n 1 | grep -q " 127.0.0.1:$P1$" || fail "$app not writing to the primary: $(tail -n 1 "$T/$app.out")"
	done
	kill -KILL "$PID_1"
	wait_event "$CLOG" '.kind == "failover_end"' 15 >/dev/null || fail "no failover"
	for app in redispy ioredis; do
		n=$(grep -c '^A ' "$T/$app.out")
		end=$((SECONDS + 15))
		until [ "$(grep '^A ' "$T/$app.out" | tail -n 1 | awk '{print $4}')" = "127.0.0.1:$P2" ] &&
			[ "$(grep -c '^A ' "$T/$app.out")" -gt $((n + 50)) ]; do
			[ $SECONDS -le $end ] || fail "$app did not follow to the new primary: $(tail -n 3 "$T/$app.out")"
			sleep 0.1
		done
		echo "    $app: $(grep -c '^A ' "$T/$app.out") writes acknowledged, $(grep -c '^E ' "$T/$app.out") errors (during the failover), now on 127.0.0.1:$P2" >&2
		! grep '^E ' "$T/$app.out" | grep -qiE 'NOAUTH|WRONGPASS|NOPERM|auth' || fail "$app: an authentication error: $(grep '^E ' "$T/$app.out" | head -n 2)"
	done
}

# agent_address_check: an agent whose connection does not come from its node's
# address is refused (logged, bounded); the right one works. Dual-stack socket
# first (an IPv4 agent arrives as ::ffff:127.0.0.1), then IPv6 loopback.
test_agent_address_check() {
	need_cmd ip
	ip -6 addr show dev lo | grep -q '::1/128' || skip "no IPv6 loopback"
	setup '[::]:PORT' 127.0.0.1:PORT 127.0.0.1 127.0.0.22 "agent_address_check = yes"
	wait_event "$CLOG" '.kind == "agent_connected" and (.instance | startswith("ca1-"))' >/dev/null ||
		fail "the agent from its node's address (mapped) refused: $(tail -n 3 "$T/controller.err")"
	wait_event "$CLOG" '.kind == "agent_rejected" and (.instance | startswith("ca2-"))' >/dev/null ||
		fail "the agent from another address was not refused"
	local ev
	ev=$(jq -c 'select(.kind == "agent_rejected")' "$CLOG" | head -n 1)
	grep -q "not from the node's address" <<<"$ev" || fail "rejection without its reason: $ev"
	grep -q "rejected agent ca2-$$ from \[::ffff:127.0.0.1\]:[0-9]*: not from the node's address" "$T/controller.err" ||
		fail "no message: $(grep rejected "$T/controller.err" | head -n 2)"
	sleep 3 # the refused agent dials again and again
	[ "$(count_events "$CLOG" '.kind == "agent_connected" and (.instance | startswith("ca2-"))')" -eq 0 ] || fail "ca2's agent got in"
	[ "$(grep -c "rejected agent" "$T/controller.err")" -le 5 ] || fail "rejections flood stderr: $(grep -c "rejected agent" "$T/controller.err")"
	grep -q "AUTH not connected from this node's address" "$T/agent-ca2.err" || fail "the agent was not told: $(tail -n 2 "$T/agent-ca2.err")"
	run_cleanup; CLEANUP=()
	rm -f "$CLOG" "$T"/state*
	# IPv6: a node at ::1 gets in, one at 127.0.0.1 does not (its agent comes from ::1).
	setup '[::1]:PORT' '[::1]:PORT' 127.0.0.1 ::1 "agent_address_check = yes"
	wait_event "$CLOG" '.kind == "agent_connected" and (.instance | startswith("ca2-"))' >/dev/null ||
		fail "the IPv6 agent from its node's address refused: $(tail -n 3 "$T/controller.err")"
	wait_event "$CLOG" '.kind == "agent_rejected" and (.instance | startswith("ca1-"))' >/dev/null ||
		fail "an agent from ::1 for a node at 127.0.0.1 was not refused"
}

TESTS=(test_every_command_needs_a_login test_guessing_is_slowed_per_address
	test_real_clients_with_password test_agent_address_check)
run_tests
