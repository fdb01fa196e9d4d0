#!/usr/bin/env bash
# flatline's Sentinel API against a real redis-sentinel on the same kind of cluster:
# the same servers (tests/lib/cluster.sh's three namespace hosts), first
# watched by one Debian redis-sentinel (quorum 1), then by flatline. Each answers the
# same commands (tests/lib/compat.py: reply types and field names, command by command)
# and runs the same planned switchover (SENTINEL FAILOVER after AUTH), its event
# stream recorded (PSUBSCRIBE *). The comparison is printed as two tables (docs/sentinel.md's
# "Sentinel compatibility" lists the differences and why); a difference that is not a
# known one fails the test.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

PY=/usr/bin/python3

ctl_cli() { cl_ctl timeout 5 redis-cli -h "$CL_CTL_IP" -p "$1" "${@:2}"; }
switched() { grep -q '^+switch-master ' "$1" && grep -q '^+convert-to-slave ' "$1"; }

# run_switchover PORT EVENTS [AUTH]: records the stream while the primary moves to h2.
run_switchover() {
	local port=$1 ev=$2 auth=${3:-} out
	cl_spawn "events-$port" "$CL_NS_CTL" "$PY" "$PWD/tests/lib/sentinel_events.py" "$CL_CTL_IP" "$port" "$ev"
	sleep 0.5
	if [ -n "$auth" ]; then
		out=$(ctl_cli "$port" -a "$auth" --no-auth-warning sentinel failover "$CL_SHARD")
	else
		out=$(ctl_cli "$port" sentinel failover "$CL_SHARD")
	fi
	[ "$out" = OK ] || fail "SENTINEL FAILOVER on :$port: $out"
	cl_until 40 switched "$ev" || fail "no +switch-master and +convert-to-slave from :$port: $(cat "$ev")"
	cl_stop "events-$port"
}

sentinel_ready() { [ "$(ctl_cli 26380 sentinel master "$CL_SHARD" 2>/dev/null | sed -n '/^num-slaves$/{n;p}')" = 2 ]; }

test_sentinel_compat() {
	local d rc
	need_root
	need_cmd ip nsenter nft redis-server redis-cli redis-sentinel named tsig-keygen dig jq setsid "$PY"
	"$PY" -c 'import redis' 2>/dev/null || skip "no python3-redis"
	export FL_NODE_PREFIX=s${BASHPID}n
	CL_KEEP=1
	# 1. Redis Sentinel alone on the servers.
	cl_init "$T/sentinel" "fls$BASHPID"
	on_exit cl_down
	cl_up_servers || fail "servers did not come up"
	d=$CL_DIR/rs
	mkdir -p "$d"
	cat >"$d/sentinel.conf" <<-EOF2
		port 26380
		bind $CL_CTL_IP
		daemonize no
		dir $d
		logfile $d/sentinel.log
		sentinel monitor $CL_SHARD $(cl_ip 1) 6379 1
		sentinel down-after-milliseconds $CL_SHARD 60000
	EOF2
	cl_spawn redis-sentinel "$CL_NS_CTL" redis-sentinel "$d/sentinel.conf"
	cl_until 30 sentinel_ready || fail "redis-sentinel did not find the replicas: $(tail -n 5 "$d/sentinel.log")"
	cl_ctl "$PY" tests/lib/compat.py shapes "$CL_CTL_IP" 26380 "$CL_SHARD" >"$T/sentinel.json" ||
		fail "shapes from redis-sentinel"
	run_switchover 26380 "$T/events-sentinel.txt"
	cl_stop redis-sentinel
	cl_down
	# 2. flatline on a fresh cluster of the same shape.
	cl_init "$T/flatline" "flf$BASHPID"
	cl_up || fail "flatline cluster did not come up"
	cl_ctl "$PY" tests/lib/compat.py shapes "$CL_CTL_IP" "$CL_CTL_PORT" "$CL_SHARD" "$CL_SECRET" >"$T/flatline.json" ||
		fail "shapes from flatline"
	run_switchover "$CL_CTL_PORT" "$T/events-flatline.txt" "$CL_SECRET"
	rc=0
	"$PY" tests/lib/compat.py compare "$T/sentinel.json" "$T/flatline.json" \
		"$T/events-sentinel.txt" "$T/events-flatline.txt" >"$T/compat.md" || rc=$?
	sed 's/^/    /' "$T/compat.md" >&2
	echo "    Sentinel's stream:" >&2
	sed 's/^/      /' "$T/events-sentinel.txt" >&2
	echo "    flatline's stream:" >&2
	sed 's/^/      /' "$T/events-flatline.txt" >&2
	[ "$rc" = 0 ] || fail "differences that are not known ones (see the tables)"
}

TESTS=(test_sentinel_compat)
run_tests
