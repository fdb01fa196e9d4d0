# A real Redis/Valkey Cluster on loopback (sourced, bash, after testlib.sh and
# flavour.sh): tests/integration/test_cluster_mode.sh and bench/cluster.sh.
#   rcluster_start NODE_TIMEOUT_MS   six servers (FL_SERVER), 3 primaries with a replica
#                                    each, made by the cli, settled in every node's view;
#                                    P[0..5] their ports, PID_<port>
#   rcluster_flatline                the cluster file (one [shard] per primary, mode =
#                                    cluster, its replica listed with it), controller and
#                                    agents (the write lease at its default; RC_AGENT_CONF:
#                                    more [agent] lines); waits until each shard is
#                                    cluster_consistent and every agent holds its lease
#   rcluster_kill PORT               kill -9 (RC_SIG=STOP: SIGSTOP, SIGCONT once its
#                                    slots are writable elsewhere) of that primary with
#                                    redis-py's RedisCluster (RC_WRITER=ioredis:
#                                    ioredis's Cluster, tests/node) writing throughout and a probe of its slots; sets
#                                    KILL_MS (kill -> a SET of its slots answered OK),
#                                    KILL_ON (the port that answered), KILL_RES (the
#                                    writer's JSON: acked, lost, lost_after, gap_ms)
# Everything started is stopped by the caller's on_exit list.

rc_cli() { "${FL_CLI:-redis-cli}" "$@"; }

# six ports, each with its bus port (+10000, or + RC_BUS_OFFSET) free, below the
# ephemeral range.
rcluster_ports() {
	local p
	P=()
	while [ ${#P[@]} -lt 6 ]; do
		p=$((20000 + RANDOM % 2700))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
		(exec 3<>"/dev/tcp/127.0.0.1/$((p + ${RC_BUS_OFFSET:-10000}))") 2>/dev/null && continue
		[[ " ${P[*]} " == *" $p "* ]] && continue
		P+=("$p")
	done
}

# rcluster_server PORT NODE_TIMEOUT_MS: one cluster node (again, after a kill); its bus
# at PORT + RC_BUS_OFFSET if set, with RC_SERVER_ARGS (split into words) if set.
rcluster_server() {
	# shellcheck disable=SC2086 # RC_SERVER_ARGS: one word per argument
	start_redis "$1" --cluster-enabled yes --cluster-config-file "$T/nodes-$1.conf" \
		--cluster-node-timeout "$2" --pidfile "$T/redis-$1.pid" \
		${RC_BUS_OFFSET:+--cluster-port $(($1 + RC_BUS_OFFSET))} ${RC_SERVER_ARGS:-}
	eval "PID_$1=$REDIS_PID"
}

# rcluster_settled: every node says cluster_state ok and sees the three replicas.
rcluster_settled() {
	local p
	for p in "${P[@]}"; do
		[ "$(rc_cli -p "$p" cluster info | tr -d '\r' | sed -n 's/^cluster_state://p')" = ok ] &&
			[ "$(rc_cli -p "$p" cluster nodes | grep -c slave)" = 3 ] || return 1
	done
}

rcluster_start() {
	local p end
	rcluster_ports
	NODE_TIMEOUT_MS=$1
	for p in "${P[@]}"; do
		rcluster_server "$p" "$1"
	done
	# shellcheck disable=SC2046 # one argument per node
	rc_cli --cluster create $(for p in "${P[@]}"; do echo "127.0.0.1:$p"; done) \
		--cluster-replicas 1 --cluster-yes >"$T/create.out" 2>&1 ||
		fail "cluster create: $(tail -n 5 "$T/create.out")"
	# Every node's view, not one: the cli makes the replicas with CLUSTER REPLICATE, which
	# Redis 7.0 does not broadcast; a primary learns that a node became a replica only
	# from that node's own PING or PONG (up to half a node timeout: 7.5 s at 15000).
	# Until then it denies the node a vote ("Failover auth denied ...: it is a master
	# node"), and a replica that lost an election stands again only 4 node timeouts
	# later (60 s): a fault before the cluster has settled is not the case tested.
	end=$((SECONDS + 20))
	until rcluster_settled; do
		[ $SECONDS -le $end ] || fail "cluster not settled: $(for p in "${P[@]}"; do
			echo "view of $p: $(rc_cli -p "$p" cluster nodes | awk '{print $2, $3}' | paste -sd' ')"
		done)"
		sleep 0.1
	done
	# PRIMARIES and REPLICA_OF[primary port] = its replica's port, as the cluster made them.
	PRIMARIES=()
	declare -gA REPLICA_OF=()
	local line me master m
	while read -r line; do
		me=$(awk '{print $2}' <<<"$line" | sed 's/@.*//; s/.*://')
		master=$(awk '{print $4}' <<<"$line")
		m=$(rc_cli -p "${P[0]}" cluster nodes | awk -v id="$master" '$1 == id {print $2}' |
			sed 's/@.*//; s/.*://')
		PRIMARIES+=("$m")
		REPLICA_OF[$m]=$me
	done < <(rc_cli -p "${P[0]}" cluster nodes | grep slave)
}

rcluster_flatline() {
	local i p s
	CTL_PORT=$(free_port)
	CONF=$T/cluster.conf CLOG=$T/controller.jsonl
	cat >"$CONF" <<-EOF
	[cluster]
	name = t
	secret = s3cret-s3cret-s3cret
	[agent]
	ping_interval_ms = 50
	heartbeat_ms = 100
	${RC_AGENT_CONF:-}
	[controller]
	listen = 127.0.0.1:$CTL_PORT
	node_down_after_ms = 1000
	state_file = $T/state
	event_log = $CLOG
	EOF
	for i in 0 1 2 3 4 5; do
		printf '[node "c%s"]\naddress = 127.0.0.%s\nredis = 127.0.0.1:%s\n' \
			"${P[$i]}" "$((21 + i))" "${P[$i]}" >>"$CONF"
	done
	SHARDS=()
	for p in "${PRIMARIES[@]}"; do
		printf '[shard "s%s"]\nnodes = c%s c%s\nmode = cluster\n' "$p" "$p" "${REPLICA_OF[$p]}" >>"$CONF"
		SHARDS+=("s$p")
	done
	chmod 600 "$CONF"
	"$FL" controller --allow-root -c "$CONF" -v >"$T/controller.err" 2>&1 &
	CTL_PID=$!
	on_exit "kill -TERM $CTL_PID; wait $CTL_PID"
	wait_event "$CLOG" '.kind == "controller_ready"' >/dev/null ||
		fail "controller did not start: $(cat "$T/controller.err")"
	declare -gA AGENT_PID=()
	# The write lease outlives its agent (pinned, on purpose): removed once the agents
	# are gone, or a later test's server on the same port would stay silenced.
	for p in "${P[@]}"; do
		on_exit "rm -rf /sys/fs/bpf/flatline/c$p /run/flatline/agent-c$p.lock"
	done
	for p in "${P[@]}"; do
		"$FL" agent -c "$CONF" --node "c$p" --event-log "$T/events-c$p.jsonl" \
			2>"$T/agent-c$p.err" &
		AGENT_PID[$p]=$!
		on_exit "kill -CONT $!; kill -TERM $!; wait $!"
	done
	for p in "${P[@]}"; do
		wait_event "$CLOG" ".kind == \"agent_connected\" and .instance == \"c$p\"" >/dev/null ||
			fail "agent c$p did not connect: $(cat "$T/agent-c$p.err")"
	done
	# Each shard checked against the cluster's view, and found as listed.
	for s in "${SHARDS[@]}"; do
		wait_event "$CLOG" ".kind == \"cluster_consistent\" and .shard == \"$s\"" >/dev/null ||
			fail "$s not checked: $(jq -c 'select(.kind | test("cluster"))' "$CLOG")"
	done
	# The write lease held by every node (primaries and replicas), the cluster bus left
	# outside it.
	[[ ${RC_AGENT_CONF:-} == *"lease_ms = 0"* ]] && return 0
	for p in "${P[@]}"; do
		wait_event "$T/events-c$p.jsonl" '.kind == "lease_regained"' >/dev/null ||
			fail "c$p never held its write lease: $(tail -n 5 "$T/agent-c$p.err")"
		grep -q "cluster bus $((p + ${RC_BUS_OFFSET:-10000})): [1-9][0-9]* socket(s) left unmarked" "$T/agent-c$p.err" ||
			fail "c$p: the bus not left out of the lease: $(grep 'lease guards' "$T/agent-c$p.err")"
	done
}

# rcluster_slots PORT: its slot ranges as "a-b,c-d".
rcluster_slots() {
	rc_cli -p "$1" cluster nodes | awk '/myself/ {for (i = 9; i <= NF; i++) print $i}' |
		sed 's/^\([0-9]*\)$/\1-\1/' | paste -sd,
}

rcluster_kill() {
	local vp=$1 slots t0 wpid ppid tw limit=$((NODE_TIMEOUT_MS / 1000 * 4 + 30))
	slots=$(rcluster_slots "$vp")
	KILL_SLOTS=$slots
	# RC_WRITER=ioredis: ioredis's Cluster (tests/node/cluster_writer.js) instead.
	if [ "${RC_WRITER:-}" = ioredis ]; then
		node tests/node/cluster_writer.js "$(printf '%s\n' "${P[@]}" | paste -sd,)" "$T/writes" \
			>"$T/ioredis.out" 2>&1 &
	else
		"${PY:-/usr/bin/python3}" tests/lib/rcwriter.py write "$(printf '%s\n' "${P[@]}" | paste -sd,)" "$T/writes" &
	fi
	wpid=$!
	on_exit "kill -TERM $wpid"
	"${PY:-/usr/bin/python3}" tests/lib/rcwriter.py probe \
		"$(printf '%s\n' "${P[@]}" | grep -vx "$vp" | paste -sd,)" "$slots" "$T/probe" &
	ppid=$!
	on_exit "kill $ppid"
	# Writing before the fault: a loaded machine may take seconds to start node and
	# ioredis (the writer's file not even there yet).
	sleep 1
	wait_for 10 eval '[ "$(cat "$T/writes" 2>/dev/null | grep -c "^A")" -gt 100 ]' ||
		fail "the writer does not write: $(tail -n 3 "$T/writes" 2>&1; cat "$T/ioredis.out" 2>/dev/null)"
	t0=$(date +%s%N)
	KILL_T0=$t0
	eval "kill -${RC_SIG:-KILL} \$PID_$vp"
	local end=$((SECONDS + limit))
	until [ -s "$T/probe" ]; do
		[ $SECONDS -le $end ] || fail "the slots of $vp not writable within $limit s"
		sleep 0.01
	done
	wait "$ppid" || fail "the probe exited with status $?"
	read -r tw KILL_ON <"$T/probe"
	KILL_MS=$(((tw - t0) / 1000000))
	# SIGSTOP: the old primary resumes once its slots are served elsewhere (its replies
	# must not reach anyone: its lease ran out).
	[ "${RC_SIG:-KILL}" != STOP ] || eval "kill -CONT \$PID_$vp"

	# The writer runs on for the client's own bound (test_cluster_mode: back within 3 s):
	# redis-py sleeps ~1 s before it re-reads the slot map, longer on a loaded machine.
	sleep 3
	kill -TERM "$wpid"
	# A writer that died (its status, not set -e's silence): its outcomes up to then
	# would pass for a quiet client.
	wait "$wpid" 2>/dev/null || fail "the writer exited with status $?: $(tail -n 3 "$T/writes" 2>&1; cat "$T/ioredis.out" 2>/dev/null)"
	# Checked through the nodes that are alive.
	KILL_RES=$("${PY:-/usr/bin/python3}" tests/lib/rcwriter.py check \
		"$(printf '%s\n' "${P[@]}" | grep -vx "$vp" | paste -sd,)" "$T/writes" "$t0" "$slots")
}
