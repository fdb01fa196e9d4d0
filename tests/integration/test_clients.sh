#!/usr/bin/env bash
# Client libraries nobody here wrote, with their default options, following the shard
# through the controller's Sentinel API (issue 16): ioredis (npm, the version pinned in
# tests/node/package.json, installed by scripts/install-deps.sh) and redis-py (Debian's
# python3-redis). Each test brings up a cluster (tests/lib/cluster.sh), starts both
# applications (tests/node/app.js, tests/lib/clientapp.py: RPUSH at 200/s, one command
# at a time), drives one change of primary and checks that both now write to the new
# primary and that no error reached either application.
#
# A planned switchover is the case that strands a client that is never told: the old
# primary stays up as a replica, so a connection to it answers READONLY for ever.
# flatline, as Sentinel, kills the normal and pub/sub clients of every server it
# reconfigures (in the same MULTI as REPLICAOF), and the libraries reconnect through
# the Sentinel API.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

PY=/usr/bin/python3
NODE_DIR=$PWD/tests/node
RATE=200

need_clients() {
	need_root
	need_cmd ip nsenter nft redis-server redis-cli named tsig-keygen dig jq setsid node "$PY"
	[ -d "$NODE_DIR/node_modules/ioredis" ] ||
		skip "ioredis not installed in $NODE_DIR (scripts/install-deps.sh)"
	"$PY" -c 'import redis.sentinel' 2>/dev/null || skip "no python3-redis"
}

cluster() {
	need_clients
	export FL_NODE_PREFIX=c${BASHPID}n
	CL_KEEP=1
	cl_init "$T/cl" "flc$BASHPID"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	OLD=1
	local s="$CL_CTL_IP:$CL_CTL_PORT"
	cl_spawn ioredis "$CL_NS_CTL" node "$NODE_DIR/app.js" "$s" "$CL_SHARD" wio "$RATE" "$CL_DIR/ioredis.out"
	cl_spawn redispy "$CL_NS_CTL" "$PY" "$PWD/tests/lib/clientapp.py" "$s" "$CL_SHARD" wpy "$RATE" "$CL_DIR/redispy.out"
	cl_until 15 acked_over ioredis 100 || fail "ioredis wrote nothing: $(tail -n 3 "$CL_DIR/log/ioredis.out" "$CL_DIR/ioredis.out")"
	cl_until 15 acked_over redispy 100 || fail "redis-py wrote nothing: $(tail -n 3 "$CL_DIR/log/redispy.out" "$CL_DIR/redispy.out")"
}
acked_over() { [ "$(grep -c '^A ' "$CL_DIR/$1.out" 2>/dev/null)" -gt "$2" ]; }

ctl_ev() { cl_has_event "$CL_CLOG" "$1"; }

# moved APP: after the failover, APP has had 100 more writes acknowledged, by the new
# primary; no error reached it.
moved() {
	local app=$1 n addr
	n=$(grep -c '^A ' "$CL_DIR/$app.out")
	cl_until 10 acked_over "$app" $((n + 100)) ||
		fail "$app stopped writing: $(tail -n 3 "$CL_DIR/$app.out")"
	addr=$(grep '^A ' "$CL_DIR/$app.out" | tail -n 1 | awk '{ print $4 }')
	[ "${addr%:*}" = "$(cl_ip "$NEW")" ] ||
		fail "$app writes to $addr, not to the new primary $(cl_ip "$NEW")"
	if grep -q '^E ' "$CL_DIR/$app.out"; then
		fail "$(grep -c '^E ' "$CL_DIR/$app.out") errors reached $app: $(grep '^E ' "$CL_DIR/$app.out" | head -n 3)"
	fi
	echo "    $app: $(grep -c '^A ' "$CL_DIR/$app.out") writes acknowledged, 0 errors, now on $addr" >&2
}

new_primary() {
	cl_until 10 ctl_ev '.kind == "failover_end"' || fail "no failover_end: $(tail -n 5 "$CL_CLOG")"
	NEW=$(cl_masters)
	[ "$(grep -c . <<<"$NEW")" = 1 ] && [ "$NEW" != "$OLD" ] || fail "primaries now: $(tr '\n' ' ' <<<"$NEW")"
}

test_clients_sigkill() {
	cluster
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	new_primary
	moved ioredis
	moved redispy
}

test_clients_switchover() {
	cluster
	cl_ctl "$FL" failover "$CL_SHARD" --to "$(cl_node 2)" -c "$CL_CONF" >"$T/failover.out" 2>&1 ||
		fail "flatline failover: $(cat "$T/failover.out")"
	new_primary
	[ "$NEW" = 2 ] || fail "primary is $(cl_node "$NEW"), asked for $(cl_node 2)"
	cl_until 10 cl_linked 1 2 || fail "the old primary does not follow the new one: $(cl_role 1)"
	moved ioredis
	moved redispy
}

TESTS=(test_clients_switchover test_clients_sigkill)
run_tests
