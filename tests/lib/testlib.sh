# Shared helpers for the integration tests (sourced, bash).
# Each test file defines test functions and lists them in TESTS; run_tests runs
# each in a subshell with its own temp dir and a cleanup trap, and prints
# PASS/FAIL/SKIP lines that tests/run.sh counts.

FL=${FL:-$PWD/${BUILD:-build}/flatline}
FL_WAIT_S=${FL_WAIT_S:-10} # generous bound for things that take milliseconds

# Say why and fail the current test.
fail() { echo "    $*" >&2; exit 1; }
# Skip the current test with a reason.
skip() { echo "$*" > "$T/.skip"; exit 0; }
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
need_cmd() { for c in "$@"; do command -v "$c" >/dev/null || skip "needs $c (scripts/install-deps.sh)"; done; }

# Cleanup actions, run in reverse order when the test's subshell exits.
CLEANUP=()
on_exit() { CLEANUP+=("$*"); }
run_cleanup() {
	local i
	set +e # a failing cleanup step must not stop the others (or change the status)
	for ((i = ${#CLEANUP[@]} - 1; i >= 0; i--)); do eval "${CLEANUP[$i]}" >/dev/null 2>&1; done
}

# start_agent NODE ARGS... : the agent in the background with its log in $T;
# waits for agent_start. Sets AGENT_PID and LOG.
start_agent() {
	local node=$1; shift
	LOG=$T/events-$node.jsonl
	"$FL" agent --node "$node" --event-log "$LOG" "$@" 2>"$T/agent-$node.err" &
	AGENT_PID=$!
	# The write lease's pins outlive the agent by design (docs/agent.md): gone after the test.
	on_exit "rm -rf /sys/fs/bpf/flatline/$node/lease"
	on_exit "kill -TERM $AGENT_PID; wait $AGENT_PID"
	wait_event "$LOG" ".kind == \"agent_start\" and .agent_pid == $AGENT_PID" >/dev/null || {
		cat "$T/agent-$node.err" >&2
		fail "agent $node did not start"
	}
}

# stop_agent: SIGTERM and wait; fails if it does not exit 0.
stop_agent() {
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID" || fail "agent exited with status $?"
}

# wait_event LOG JQ-FILTER [SECONDS]: waits until a line matches; prints it.
wait_event() {
	local log=$1 filter=$2 limit=${3:-$FL_WAIT_S} end line
	end=$((SECONDS + limit))
	while [ $SECONDS -le $end ]; do
		if [ -s "$log" ]; then
			line=$(jq -c "select($filter)" "$log" 2>/dev/null | head -n 1)
			[ -n "$line" ] && { echo "$line"; return 0; }
		fi
		sleep 0.02
	done
	return 1
}

# start_recpeer PORT [ARGS]: the recording controller peer (tests/lib/recpeer.py;
# ARGS: --reject, --garbage, --silent ...), accepting once this returns; REC is its
# record, a JSON line per command it received.
start_recpeer() {
	local port=$1
	shift
	REC=$T/rec-$port.jsonl
	: >"$REC"
	"${PY:-/usr/bin/python3}" tests/lib/recpeer.py "$port" "$REC" "$@" &
	on_exit "kill $!"
	wait_listening "$port" "recording peer"
}

# spawn_controller [CMD ARGS...]: `flatline controller -c $CONF` (run under CMD when given,
# e.g. prlimit), stderr in $T/controller.err, CTL_PID, stopped at exit; returns once
# its event log ($CLOG, the file's event_log) says controller_ready.
spawn_controller() {
	"$@" "$FL" controller --allow-root -c "$CONF" >"$T/controller.err" 2>&1 &
	CTL_PID=$!
	on_exit "kill -TERM $CTL_PID; wait $CTL_PID"
	wait_event "$CLOG" '.kind == "controller_ready"' >/dev/null ||
		{ cat "$T/controller.err" >&2; fail "controller did not start"; }
}

# spawn_agents NAME...: an agent (-c $CONF) for each node NAME-$$, events in
# $T/events-NAME.jsonl, stderr in $T/agent-NAME.err, stopped at exit.
spawn_agents() {
	local n
	for n in "$@"; do
		"$FL" agent -c "$CONF" --node "$n-$$" --event-log "$T/events-$n.jsonl" 2>"$T/agent-$n.err" &
		on_exit "kill -TERM $!; wait $!"
	done
}

# loopback_ctl NAME: the hostile and client-authentication tests' loopback cluster:
# two servers (NAME1-$$ the primary on P1, NAME2-$$ its replica on P2), the controller
# on CTL_PORT (its stderr $T/controller.err, events $CLOG, file $CONF with secret
# $SECRET, state ${STATE:-$T/state}), an agent per server; PID_1 is the primary's
# redis-server. Returns once both are started (wait for what the test needs).
# LB_LISTEN, LB_ADDRESS: the controller's listen and address (PORT is CTL_PORT;
# default 127.0.0.1:PORT, no address); LB_A1, LB_A2: the nodes' addresses (default
# 127.0.0.21, 127.0.0.22); LB_CTL: more [controller] lines; LB_MORE: sections
# between [controller] and the nodes; LB_RUN: the command the controller runs under.
loopback_ctl() {
	local n=$1
	need_root
	need_cmd redis-server redis-cli jq
	P1=$(free_port) P2=$(free_port) CTL_PORT=$(free_port)
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl
	SECRET=${SECRET:-s3cret-s3cret-s3cret}
	local listen=${LB_LISTEN:-127.0.0.1:PORT}
	cat >"$CONF" <<-EOF
	[cluster]
	name = $n
	secret = $SECRET
	[agent]
	ping_interval_ms = 50
	hung_after = 4
	heartbeat_ms = 100
	lease_ms = 0
	[controller]
	listen = ${listen//PORT/$CTL_PORT}
	${LB_ADDRESS:+address = ${LB_ADDRESS//PORT/$CTL_PORT}}
	node_down_after_ms = 1000
	state_file = ${STATE:-$T/state}
	event_log = $CLOG
	failover_block_ms = 1000
	${LB_CTL:-}
	${LB_MORE:-}
	[node "${n}1-$$"]
	address = ${LB_A1:-127.0.0.21}
	redis = 127.0.0.1:$P1
	[node "${n}2-$$"]
	address = ${LB_A2:-127.0.0.22}
	redis = 127.0.0.1:$P2
	[shard "s"]
	nodes = ${n}1-$$ ${n}2-$$
	EOF
	chmod 600 "$CONF"
	start_redis "$P1"; PID_1=$REDIS_PID
	start_redis "$P2" --replicaof 127.0.0.1 "$P1"
	# shellcheck disable=SC2086 # LB_RUN: a command and its arguments
	spawn_controller ${LB_RUN:-}
	spawn_agents "${n}1" "${n}2"
}

# wait_listening PORT WHAT: until 127.0.0.1:PORT accepts a connection, else fails
# saying WHAT did not start.
wait_listening() {
	local end=$((SECONDS + FL_WAIT_S))
	until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
		[ $SECONDS -le $end ] || fail "$2 did not start"
		sleep 0.05
	done
}

# wait_nodes_healthy CONF N: until `flatline status` shows N nodes of the first shard
# with health ok, else fails with the status.
wait_nodes_healthy() {
	local end=$((SECONDS + FL_WAIT_S)) st
	until st=$("$FL" status -c "$1" --json 2>/dev/null) &&
		[ "$(jq '[.shards[0].nodes[] | select(.health == "ok")] | length' <<<"$st")" = "$2" ]; do
		[ $SECONDS -le $end ] || fail "nodes not healthy: $st"
		sleep 0.05
	done
}

# wait_report JQ-FILTER [SECONDS]: the first REPORT in REC whose .args match; prints it.
wait_report() { wait_event "$REC" ".cmd == \"REPORT\" and ($1)" "${2:-$FL_WAIT_S}"; }

# wait_linked REPLICA_PORT MASTER_PORT: the replica replicates from that port with the
# link up. INFO is read by the test's own info_field PORT FIELD (its server's client).
wait_linked() {
	local end=$((SECONDS + FL_WAIT_S))
	while [ $SECONDS -le $end ]; do
		[ "$(info_field "$1" master_port)" = "$2" ] &&
			[ "$(info_field "$1" master_link_status)" = up ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_for SECS CMD [ARG...]: runs CMD every 0.1 s until it succeeds (0), or SECS pass (1).
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}
count_events() { local n; n=$(jq -c "select($2)" "$1" 2>/dev/null | wc -l); echo "$n"; }

# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" == "$3" ] || fail "$1: got '$2', want '$3'"; }

# FL_ONLY=REGEX runs only the tests whose names match (while working on some).
run_tests() {
	local t rc
	for t in "${TESTS[@]}"; do
		[[ -z ${FL_ONLY:-} || $t =~ $FL_ONLY ]] || continue
		T=$(mktemp -d /tmp/flatline-test.XXXXXX)
		(
			set -eu
			CLEANUP=()
			trap run_cleanup EXIT
			"$t"
		) >"$T/.out" 2>&1
		rc=$?
		if [ -f "$T/.skip" ]; then
			echo "SKIP $t: $(cat "$T/.skip")"
		elif [ $rc -eq 0 ]; then
			echo "PASS $t"
		else
			echo "FAIL $t"
			sed 's/^/    /' "$T/.out" | tail -n 30
		fi
		[ -n "${FL_KEEP:-}" ] || rm -rf "$T"
	done
}

# start_redis PORT [ARGS...]: a redis-server (FL_SERVER when set: valkey-server, see
# tests/lib/flavour.sh) on 127.0.0.1:PORT with its files in $T; waits until it answers.
# Sets REDIS_PID.
start_redis() {
	local port=$1; shift
	"${FL_SERVER:-redis-server}" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--repl-diskless-sync-delay 0 --dir "$T" --dbfilename "dump-$port.rdb" \
		--logfile "$T/redis-$port.log" "$@" &
	REDIS_PID=$!
	on_exit "kill -KILL $REDIS_PID"
	wait_redis "$port" || fail "redis-server on port $port did not start"
}

# wait_redis PORT: until it answers PING (or FL_WAIT_S).
wait_redis() {
	local end=$((SECONDS + FL_WAIT_S))
	while [ $SECONDS -le $end ]; do
		"${FL_CLI:-redis-cli}" -p "$1" ping 2>/dev/null | grep -qE 'PONG|NOAUTH' && return 0
		sleep 0.02
	done
	return 1
}

# free_port: a TCP port on 127.0.0.1 nobody listens on.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768+)
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

# make_hosts PREFIX NET [NET6]: namespaces PREFIX-br (a bridge) and PREFIX-a, PREFIX-b,
# each joined to the bridge by a veth pair (eth0), with NET.1 and NET.2 (/24), and with
# NET6 (a ULA prefix such as fd00:f1::) NET6 1 and NET6 2 (/64, no DAD wait). Only these
# namespaces have the addresses: no packet leaves them. Removed on exit. Sets NA and NB
# (nsenter prefixes: not `ip netns exec`, which remounts /sys and hides bpffs).
make_hosts() {
	local pfx=$1 net=$2 net6=${3:-} h
	need_root
	need_cmd ip nsenter
	ip netns add "$pfx-br"
	on_exit "ip netns del $pfx-br"
	ip -n "$pfx-br" link add br0 type bridge
	ip -n "$pfx-br" link set br0 up
	for h in a b; do
		ip netns add "$pfx-$h"
		on_exit "ip netns del $pfx-$h"
		ip -n "$pfx-br" link add "v$h" type veth peer name eth0 netns "$pfx-$h"
		ip -n "$pfx-br" link set "v$h" master br0 up
		ip -n "$pfx-$h" link set lo up
		ip -n "$pfx-$h" link set eth0 up
	done
	ip -n "$pfx-a" addr add "$net.1/24" dev eth0
	ip -n "$pfx-b" addr add "$net.2/24" dev eth0
	if [ -n "$net6" ]; then
		ip -n "$pfx-a" addr add "${net6}1/64" dev eth0 nodad
		ip -n "$pfx-b" addr add "${net6}2/64" dev eth0 nodad
	fi
	NA="nsenter --net=/run/netns/$pfx-a"
	NB="nsenter --net=/run/netns/$pfx-b"
}
