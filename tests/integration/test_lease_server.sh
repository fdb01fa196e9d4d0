#!/usr/bin/env bash
# The write lease guards the server process, not a port: every socket of it (its port,
# its tls-port, any interface, one made after the agent started), whatever a client
# names itself; every connection is cut when the lease comes back after drops, however
# many; a connection queued before the agent marked its listener and an EXEC inside
# MULTI past the deadline get no reply either; a server with a UNIX socket (which no
# socket filter sees) is refused.
#
# Each test brings up the three-host cluster (tests/lib/cluster.sh), every server with a
# tls-port besides its port, and makes h1's lease lapse WITHOUT a failover: its agent
# stopped (SIGSTOP), so nothing renews the lease and the kernel lets it run out, while
# the peers still see h1 (no host_down). Clients on h1's own host then get no reply.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/tls.sh
. tests/lib/tls.sh

PY=/usr/bin/python3
CLIENTS=$PWD/tests/lib/lease_clients.py
TLS_PORT=6380

# cluster_conf: the settings and the cleanup, nothing started yet.
cluster_conf() {
	need_root
	need_cmd ip nsenter nft redis-server redis-cli named tsig-keygen dig jq setsid openssl "$PY"
	export FL_NODE_PREFIX=s${BASHPID}n
	mkdir -p "$T/pki"
	mkca "$T/pki" ca
	mkcert "$T/pki" server ca "IP:10.77.0.1,IP:10.77.0.2,IP:10.77.0.3,IP:127.0.0.1"
	CL_REDIS_EXTRA="--tls-port $TLS_PORT --tls-cert-file $T/pki/server.crt --tls-key-file $T/pki/server.key --tls-ca-cert-file $T/pki/ca.crt --tls-auth-clients no"
	CL_KEEP=1
	cl_init "$T/cl" "fls$BASHPID"
	on_exit cl_down
}
cluster() {
	cluster_conf
	cluster_up
}
# cluster_up: after cluster_conf (and what a test changes in between), up, h1's lease held.
cluster_up() {
	cl_up || fail "cluster did not come up"
	OLD_NODE=$(cl_node 1)
	OLD_LOG=$CL_DIR/events-$OLD_NODE.jsonl
	cl_until 5 cl_has_event "$OLD_LOG" '.kind == "lease_regained"' ||
		fail "h1 never took the lease: $(tail -n 3 "$OLD_LOG")"
}

# lapse: h1's agent stopped, its lease left to run out in the kernel (500 ms).
lapse() {
	AGENT_PID=$(cl_pid "agent-$OLD_NODE")
	kill -STOP "$AGENT_PID"
	on_exit "kill -CONT $AGENT_PID"
	sleep 1.2
}
resume() { kill -CONT "$AGENT_PID"; }

# start_clients MODE ARGS...: lease_clients.py in h1's namespace, in the background;
# waits until its connections are up.
start_clients() {
	rm -f "$T/ready" "$T/go"
	cl_in 1 "$PY" "$CLIENTS" "$1" "$T/ready" "$T/go" "${@:2}" >"$T/clients.out" 2>&1 &
	CLIENTS_PID=$!
	on_exit "kill $CLIENTS_PID 2>/dev/null"
	cl_until 20 test -s "$T/ready" || fail "clients did not connect: $(cat "$T/clients.out")"
}
finish_clients() {
	touch "$T/go"
	wait "$CLIENTS_PID" || fail "clients failed: $(cat "$T/clients.out")"
}
answer() { sed -n "s/^$1 //p" "$T/clients.out"; }

# Past the lease: a client on the server's port, on its tls-port, and one that calls
# itself flatline-controller (which exempted it before) all get no reply. The SETNAME
# client connected while the lease was held, and the agent read CLIENT LIST (every
# tenth heartbeat) before it stopped.
test_lapsed_every_socket() {
	local ip
	cluster
	ip=$(cl_ip 1)
	# The prober's echoes leave from the node's address: its raw ICMP socket is bound.
	cl_in 1 ss -Hwanp | grep -F "pid=$(cl_pid "agent-$OLD_NODE")," | grep -qF " $ip:" ||
		fail "h1's raw ICMP socket is not bound to $ip: $(cl_in 1 ss -Hwanp)"
	start_clients probe "plain:$ip:6379" "tls:$ip:$TLS_PORT" "setname:$ip:6379" "tls:127.0.0.1:$TLS_PORT"
	sleep 1.5
	lapse
	finish_clients
	resume
	[ "$(answer "plain:$ip:6379")" = none ] || fail "the server's port answered past the lease: $(cat "$T/clients.out")"
	[ "$(answer "tls:$ip:$TLS_PORT")" = none ] || fail "the tls-port answered past the lease: $(cat "$T/clients.out")"
	[ "$(answer "tls:127.0.0.1:$TLS_PORT")" = none ] || fail "the tls-port on loopback answered past the lease"
	[ "$(answer "setname:$ip:6379")" = none ] ||
		fail "a client named flatline-controller got a reply past the lease: $(cat "$T/clients.out")"
}

# An interface made after the lease lapsed (a veth to a new namespace, routed to h1's
# address) is covered at once: the handshake passes (the route works), no reply does.
test_new_interface() {
	local ns
	cluster
	ns=$CL_NAME-c1 # cl_down removes it
	lapse
	ip netns add "$ns" || fail "failed to create $ns"
	on_exit "ip netns del $ns 2>/dev/null"
	ip link add flnew0 netns "$(cl_ns 1)" type veth peer name flnew1 netns "$ns" || fail "failed to create the veth"
	cl_in 1 ip addr add 10.98.0.1/24 dev flnew0
	cl_in 1 ip link set flnew0 up
	ip -n "$ns" addr add 10.98.0.2/24 dev flnew1
	ip -n "$ns" link set flnew1 up
	ip -n "$ns" link set lo up
	ip -n "$ns" route add 10.77.0.0/24 via 10.98.0.1
	rm -f "$T/ready" "$T/go"
	touch "$T/go"
	timeout 20 ip netns exec "$ns" "$PY" - "$(cl_ip 1)" >"$T/new.out" 2>&1 <<-'PYEOF'
		import socket, sys
		s = socket.create_connection((sys.argv[1], 6379), timeout=3)
		print("connected", flush=True)
		s.sendall(b"*1\r\n$4\r\nPING\r\n")
		s.settimeout(1.5)
		try:
		    print("reply" if s.recv(64) else "closed")
		except socket.timeout:
		    print("none")
	PYEOF
	resume
	grep -q '^connected$' "$T/new.out" || fail "no connection over the new interface: $(cat "$T/new.out")"
	[ "$(tail -n 1 "$T/new.out")" = none ] || fail "a reply left over the new interface past the lease: $(cat "$T/new.out")"
}

# The agent stopped the instant it takes its first lease (its lease_regained written):
# the server's sockets are marked by then, so once that lease runs out a client gets no
# reply. (Marked only at the next heartbeat, they were not: the server answered past
# the lease for good.)
test_stopped_as_it_takes_the_lease() {
	local node ev pidf r i
	cluster_conf
	node=$(cl_node 1)
	ev=$CL_DIR/events-$node.jsonl
	pidf=$CL_DIR/pids/agent-$node.pid
	# Polls for the event every 2 ms (a heartbeat is 100 ms); stops the agent at once.
	(
		end=$((SECONDS + 30))
		while [ $SECONDS -le $end ]; do
			if grep -qs '"kind":"lease_regained"' "$ev"; then
				kill -STOP "$(cat "$pidf")" && touch "$T/stopped"
				exit 0
			fi
			sleep 0.002
		done
	) &
	on_exit "kill $! 2>/dev/null"
	cl_up_servers || fail "the servers did not come up"
	cl_named_start || fail "named did not start"
	cl_write_conf
	cl_controller_start || fail "the controller did not start"
	for i in 1 2 3; do cl_agent_start "$i"; done
	on_exit "kill -CONT \$(cat $pidf) 2>/dev/null"
	cl_until 20 test -e "$T/stopped" || fail "h1 never took the lease: $(tail -n 3 "$CL_DIR/log/agent-$node.out")"
	sleep 1.2
	r=$(timeout 20 nsenter --net="/run/netns/$(cl_ns 1)" "$PY" - "$(cl_ip 1)" 2>&1 <<-'PYEOF'
		import socket, sys
		s = socket.create_connection((sys.argv[1], 6379), timeout=3)
		s.sendall(b"*1\r\n$4\r\nPING\r\n")
		s.settimeout(1.5)
		try:
		    print("reply" if s.recv(64) else "closed")
		except socket.timeout:
		    print("none")
	PYEOF
	)
	[ "$r" = none ] || fail "the server answered past the lease its agent stopped at: $r"
}

# The primary stopped before its agent ever ran, and its node has no `pidfile`: the
# agent cannot learn its pid (INFO is not answered), so its
# sockets carry no mark and a lease running out would silence nothing. Its REPORTs say
# lease=unguarded (they said "lapsed", and the controller promoted h2 after one lease
# span: h1, resumed, then answered its clients as a second primary). The controller
# waits, naming h1. Resumed, h1 is marked first: the failover may go on then, but a
# client on h1's own host has no write acknowledged by h1 after h2's promotion.
test_stopped_before_the_agent_started() {
	local node ev srv i
	cluster_conf
	node=$(cl_node 1)
	ev=$CL_DIR/events-$node.jsonl
	cl_up_servers || fail "the servers did not come up"
	srv=$(cl_pid "redis-$node")
	kill -STOP "$srv"
	on_exit "kill -CONT $srv 2>/dev/null"
	cl_named_start || fail "named did not start"
	cl_write_conf
	sed -i "\|^pidfile = $CL_DIR/$node/redis.pid\$|d" "$CL_CONF"
	grep -q "$node/redis.pid" "$CL_CONF" && fail "h1's pidfile still in the cluster file"
	cl_controller_start || fail "the controller did not start"
	for i in 1 2 3; do cl_agent_start "$i"; done
	cl_until 20 cl_has_event "$CL_CLOG" ".kind == \"lease_wait\" and .silent_peer == \"$node\"" ||
		fail "no lease wait naming h1: $(jq -c 'select(.kind | test("fail|lease|down|hung"))' "$CL_CLOG" | tail -n 4)"
	sleep 3 # many lease spans
	! cl_has_event "$CL_CLOG" '.kind == "failover_start"' ||
		fail "promoted over an unmarked primary: $(jq -c 'select(.kind | test("fail|lease"))' "$CL_CLOG" | tail -n 4)"
	# A client next to h1, its commands waiting in h1's socket when it resumes.
	cl_spawn h1writer "$(cl_ns 1)" "$CL_PY" "$CL_ROOT/tests/lib/clwriter.py" \
		--addr "$(cl_ip 1):6379" --out "$T/h1writer.out" --rate 200 --timeout-ms 300
	sleep 1
	resumed=$(cl_now_ns)
	kill -CONT "$srv"
	cl_until 20 grep -q "write lease guards the server's sockets (pid $srv" "$CL_DIR/log/agent-$node.out" ||
		fail "h1's sockets never marked: $(tail -n 3 "$CL_DIR/log/agent-$node.out")"
	sleep 2
	cl_stop h1writer
	tried=$(awk -v t="$resumed" '$3 > t' "$T/h1writer.out" | wc -l)
	[ "$tried" -gt 0 ] || fail "the client on h1 wrote nothing after h1 resumed: $(tail -n 3 "$CL_DIR/log/h1writer.out")"
	promoted=$(jq -r 'select(.kind == "promoted") | .ts' "$CL_CLOG" | head -n 1)
	if [ -n "$promoted" ]; then
		p_ns=$(date -d "$promoted" +%s%N)
		late=$(awk -v t="$p_ns" '$1 == "A" && $3 > t' "$T/h1writer.out" | wc -l)
		[ "$late" -eq 0 ] || fail "$late write(s) h1 acknowledged after h2's promotion (ms after it: $(awk -v t="$p_ns" '$1 == "A" && $3 > t { printf "%.1f ", ($3 - t) / 1e6 }' "$T/h1writer.out"); resumed $(((resumed - p_ns) / 1000000)) ms after it): $(jq -c 'select(.kind | test("fail|promot|lease"))' "$CL_CLOG" | tail -n 4)"
	else
		expect_eq "h1's role, no promotion" "$(cl_role 1)" master
	fi
	echo "    after h1 resumed: $tried writes tried on h1's host, promotion at ${promoted:-none}" >&2
}

# Connections made before the agent starts, while the server is stopped (they wait in
# its accept queue), accepted only after the agent's first scan marked the listener:
# created before the mark, they never inherited it, yet once the lease runs out they get
# no reply either (the program marks them at egress, by their marked listener).
never_spoke() { [ "$(cl_in 1 redis-cli -h "$2" CLIENT LIST | grep -c ' cmd=NULL ')" -ge "$1" ]; }
test_queued_before_the_scan() {
	local node ip rpid i
	cluster_conf
	node=$(cl_node 1)
	OLD_NODE=$node
	OLD_LOG=$CL_DIR/events-$node.jsonl
	cl_up_servers || fail "the servers did not come up"
	cl_named_start || fail "named did not start"
	cl_write_conf
	cl_controller_start || fail "the controller did not start"
	ip=$(cl_ip 1)
	rpid=$(cat "$CL_DIR/$node/redis.pid") || fail "no pid of h1's server"
	kill -STOP "$rpid"
	on_exit "kill -CONT $rpid 2>/dev/null"
	rm -f "$T/ready" "$T/go"
	cl_in 1 "$PY" "$CLIENTS" queued "$T/ready" "$T/go" "plain:$ip:6379" "plain:127.0.0.1:6379" \
		>"$T/clients.out" 2>&1 &
	CLIENTS_PID=$!
	on_exit "kill $CLIENTS_PID 2>/dev/null"
	cl_until 20 test -s "$T/ready" || fail "clients did not connect: $(cat "$T/clients.out")"
	for i in 1 2 3; do cl_agent_start "$i"; done
	cl_until 20 grep -qs "write lease guards the server's sockets (pid $rpid" "$CL_DIR/log/agent-$node.out" ||
		fail "h1's agent never marked the server: $(tail -n 3 "$CL_DIR/log/agent-$node.out")"
	kill -CONT "$rpid"
	cl_until 20 cl_has_event "$OLD_LOG" '.kind == "lease_regained"' ||
		fail "h1 never took the lease: $(tail -n 3 "$OLD_LOG")"
	# Both accepted by now (clients that never sent a command).
	cl_until 10 never_spoke 2 "$ip" ||
		fail "the queued connections were never accepted: $(cl_in 1 redis-cli -h "$ip" CLIENT LIST)"
	lapse
	finish_clients
	resume
	[ "$(answer "plain:$ip:6379")" = none ] ||
		fail "a connection queued before the first scan answered past the lease: $(cat "$T/clients.out")"
	[ "$(answer "plain:127.0.0.1:6379")" = none ] ||
		fail "a connection queued on loopback answered past the lease: $(cat "$T/clients.out")"
}

# A client inside MULTI when the lease runs out: its writes were queued (and answered
# QUEUED) under the lease; its EXEC past the deadline is not acknowledged.
test_multi_across_the_lapse() {
	cluster
	start_clients multi "$(cl_ip 1)" 6379
	lapse
	finish_clients
	resume
	[ "$(answer exec)" = none ] || fail "an EXEC past the lease was acknowledged: $(cat "$T/clients.out")"
	# It did reach the server, which ran it (the lease, taken back, lets the answer out).
	cl_until 10 multi_ran "$(cl_ip 1)" || fail "the EXEC never ran: the test proved nothing"
}
multi_ran() { [ "$(cl_in 1 timeout 2 redis-cli -h "$1" GET lease-multi 2>/dev/null)" = 1 ]; }

# More than 256 connections, each with a reply the lease dropped: when the lease comes
# back (the agent resumed, the controller names h1 primary) every one of them is cut.
test_every_connection_cut() {
	local n=300 since
	cluster
	start_clients many "$n" "$(cl_ip 1)" 6379
	lapse
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	touch "$T/go"
	sleep 0.5
	resume
	wait "$CLIENTS_PID" || fail "clients failed: $(cat "$T/clients.out")"
	[ "$(cat "$T/clients.out")" = "closed $n of $n" ] || fail "not every connection was cut: $(cat "$T/clients.out")"
	cl_until 5 cl_has_event "$OLD_LOG" ".kind == \"lease_regained\" and .ts >= \"$since\" and .connections_closed >= $n" ||
		fail "no lease_regained closing $n connections: $(grep lease_regained "$OLD_LOG" | tail -n 1)"
}

# A server listening on a UNIX socket: its agent refuses to run, with one clear line.
test_unixsocket_refused() {
	local node d rc
	cluster
	node=$(cl_node 3)
	d=$CL_DIR/$node
	cl_stop "agent-$node" KILL
	cl_stop "redis-$node" TERM
	CL_REDIS_EXTRA="$CL_REDIS_EXTRA --unixsocket $d/redis.sock"
	cl_redis_start 3 1 || fail "h3's server did not restart"
	rc=0
	timeout 30 nsenter --net="/run/netns/$(cl_ns 3)" "$FL" agent -c "$CL_CONF" --node "$node" \
		--event-log "$T/unix.jsonl" >"$T/unix.out" 2>&1 || rc=$?
	[ "$rc" != 124 ] || fail "the agent kept running: $(tail -n 3 "$T/unix.out")"
	[ "$rc" != 0 ] || fail "the agent exited 0: $(tail -n 3 "$T/unix.out")"
	grep -q "listens on the UNIX socket $d/redis.sock, which the write lease cannot guard" "$T/unix.out" ||
		fail "no clear message: $(tail -n 5 "$T/unix.out")"
}

# A server in its own pid namespace (as in a container: its pidfile and INFO say pid 1):
# the agent finds its pid here by its listener and marks its sockets, and past the lease
# a client on its host gets no reply, as for any server.
test_server_in_own_pid_namespace() {
	local ip outer real
	need_cmd unshare pgrep
	cluster_conf
	printf '#!/bin/sh\nexec unshare --pid --fork --mount-proc --kill-child %s "$@"\n' "$CL_SERVER" >"$T/in-pidns"
	chmod +x "$T/in-pidns"
	CL_SERVER=$T/in-pidns
	cluster_up
	ip=$(cl_ip 1)
	outer=$(cl_pid "redis-$OLD_NODE")
	real=$(pgrep -P "$outer")
	[ -n "$real" ] && [ "$real" -gt 1 ] || fail "no server process under unshare $outer"
	expect_eq "process_id h1 reports" "$(cl_redis 1 info server | tr -d '\r' | sed -n 's/^process_id://p')" 1
	expect_eq "h1's pidfile" "$(cat "$CL_DIR/$OLD_NODE/redis.pid")" 1
	cl_until 10 grep -q "write lease guards the server's sockets (pid $real" "$CL_DIR/log/agent-$OLD_NODE.out" ||
		fail "h1's sockets (pid $real) never marked: $(tail -n 3 "$CL_DIR/log/agent-$OLD_NODE.out")"
	start_clients probe "plain:$ip:6379" "tls:$ip:$TLS_PORT"
	sleep 1.5
	lapse
	finish_clients
	resume
	[ "$(answer "plain:$ip:6379")" = none ] || fail "the server's port answered past the lease: $(cat "$T/clients.out")"
	[ "$(answer "tls:$ip:$TLS_PORT")" = none ] || fail "the tls-port answered past the lease: $(cat "$T/clients.out")"
}

TESTS=(test_lapsed_every_socket test_new_interface test_stopped_as_it_takes_the_lease test_stopped_before_the_agent_started test_queued_before_the_scan
	test_multi_across_the_lapse
	test_every_connection_cut test_unixsocket_refused test_server_in_own_pid_namespace)
[ -n "${LEASE_TESTS:-}" ] && read -ra TESTS <<<"$LEASE_TESTS"
run_tests
