#!/usr/bin/env bash
# A real Redis/Valkey Cluster in network namespaces, one node per host, for the cluster
# fault tests (tests/integration/test_cluster_faults.sh). Sourced after testlib.sh; it
# sources tests/lib/cluster.sh and partition.sh and uses their namespaces, bridge and
# fault helpers (cl_isolate, cl_link_down, pt_colo_*):
#
#   namespace <name>-ctl    bridge 10.79.0.254: the controller and the clients (the
#                           cluster writer, the probe, redis-cli)
#   namespace <name>-h1..6  eth0 10.79.0.1..6: one cluster node (port 6379, FL_FLAVOUR's
#                           server, --cluster-enabled yes) and its agent each; node ids
#                           <prefix>1..6
#
#   rcn_up NODE_TIMEOUT_MS  the hosts, six servers, the cluster (3 primaries with a
#                           replica each, by the flavour's cli: no replica on its
#                           primary's host), the cluster file (one [shard] per primary,
#                           mode = cluster, the agents at the shipped defaults: write
#                           lease 200 ms), controller and agents; waits until every shard
#                           is cluster_consistent and every agent holds its lease.
#                           Sets PRIMARIES (host indexes), REPLICA_OF[idx], RCN_ADDRS
#                           (every node, "ip:6379,...")
#   rcn_slots IDX           its slot ranges, "a-b,c-d"
#   rcn_down                everything stopped and removed (on_exit'ed by rcn_up)
# Only the servers differ from cluster.sh's hosts: rcn_* sets CL_* for 6 hosts.

RCN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib/cluster.sh
. "$RCN_ROOT/tests/lib/cluster.sh"
# shellcheck source=tests/lib/partition.sh
. "$RCN_ROOT/tests/lib/partition.sh"
RCN_HOSTS=(1 2 3 4 5 6)

rcn_addr() { echo "$(cl_ip "$1"):6379"; }
rcn_addrs() { # IDX...: their addresses, comma-separated
	local i out=()
	for i in "$@"; do out+=("$(rcn_addr "$i")"); done
	(IFS=,; echo "${out[*]}")
}
rcn_others() { local i; for i in "${RCN_HOSTS[@]}"; do [ "$i" = "$1" ] || echo "$i"; done; }

rcn_server_start() {
	local i=$1 node d
	node=$(cl_node "$i")
	d=$CL_DIR/$node
	mkdir -p "$d"
	cl_spawn "redis-$node" "$(cl_ns "$i")" "$CL_SERVER" --port 6379 \
		--bind "$(cl_ip "$i") 127.0.0.1" --protected-mode no --save '' --appendonly no \
		--dir "$d" --pidfile "$d/redis.pid" --logfile "$d/redis.log" \
		--repl-diskless-sync-delay 0 --cluster-enabled yes \
		--cluster-config-file "$d/nodes.conf" --cluster-node-timeout "$RCN_NODE_TIMEOUT_MS"
	cl_until "$CL_WAIT_S" cl_redis_ping "$i" ||
		cl_die "$(basename "$CL_SERVER") on $node did not start: $(tail -n 3 "$d/redis.log")"
}

rcn_conf() {
	local i p
	cat >"$CL_CONF" <<-EOF
		[cluster]
		name = $CL_NAME
		secret = $CL_SECRET
		[agent]
		event_log = $CL_DIR/events.jsonl
		[controller]
		listen = $(cl_hp "$CL_CTL_IP" "$CL_CTL_PORT")
		address = $(cl_hp "$CL_CTL_IP" "$CL_CTL_PORT")
		state_file = $CL_DIR/state
		event_log = $CL_CLOG
	EOF
	for i in "${RCN_HOSTS[@]}"; do
		printf '[node "%s"]\naddress = %s\nredis = %s\npidfile = %s\n' "$(cl_node "$i")" \
			"$(cl_ip "$i")" "$(rcn_addr "$i")" "$CL_DIR/$(cl_node "$i")/redis.pid" >>"$CL_CONF"
	done
	for p in "${PRIMARIES[@]}"; do
		printf '[shard "s%s"]\nnodes = %s %s\nmode = cluster\n' "$p" "$(cl_node "$p")" \
			"$(cl_node "${REPLICA_OF[$p]}")" >>"$CL_CONF"
	done
	chmod 600 "$CL_CONF"
}

# PRIMARIES and REPLICA_OF from CLUSTER NODES (host index = the address's last byte).
rcn_topology() {
	local nodes line me master
	nodes=$(cl_redis 1 cluster nodes)
	PRIMARIES=()
	declare -gA REPLICA_OF=()
	while read -r line; do
		me=$(awk '{print $2}' <<<"$line" | sed 's/:.*//')
		master=$(awk '{print $4}' <<<"$line")
		master=$(awk -v id="$master" '$1 == id {print $2}' <<<"$nodes" | sed 's/:.*//')
		PRIMARIES+=("$(cl_idx_of_ip "$master")")
		REPLICA_OF[$(cl_idx_of_ip "$master")]=$(cl_idx_of_ip "$me")
	done < <(grep slave <<<"$nodes")
	[ ${#PRIMARIES[@]} = 3 ] || cl_die "not 3 replicas: $nodes"
}

# Every host's view (as rcluster_settled in rcluster.sh: Redis 7.0 does not broadcast the
# cli's CLUSTER REPLICATE, and a primary that still takes a replica for a master denies
# it a vote, which then stands again only 4 node timeouts later).
rcn_ok() {
	local i
	for i in "${RCN_HOSTS[@]}"; do
		[ "$(cl_redis "$i" cluster info | tr -d '\r' | sed -n 's/^cluster_state://p')" = ok ] &&
			[ "$(cl_redis "$i" cluster nodes | grep -c slave)" = 3 ] || return 1
	done
}

rcn_up() {
	local i node s
	RCN_NODE_TIMEOUT_MS=$1
	export FL_NODE_PREFIX=rc${BASHPID}n
	CL_KEEP=${CL_KEEP:-1}
	cl_init "$T/rcn" "flr$BASHPID"
	on_exit rcn_down
	[ -z "$CL_FLAVOUR_WHY" ] || skip "$CL_FLAVOUR_WHY"
	mkdir -p "$CL_DIR/pids" "$CL_DIR/log"
	CL_SECRET=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
	cl_save_env
	CL_HAVE_ENV=1
	(
		set -e
		cl_net_up
		for i in 4 5 6; do cl_netns_attach "$(cl_ns "$i")" "veth$i" "$(cl_ip "$i")"; done
	) || fail "failed to create the namespaces"
	for i in "${RCN_HOSTS[@]}"; do rcn_server_start "$i" || fail "server $i"; done
	# shellcheck disable=SC2046 # one argument per node
	cl_ctl timeout 60 "$CL_CLI" --cluster create $(for i in "${RCN_HOSTS[@]}"; do rcn_addr "$i"; done) \
		--cluster-replicas 1 --cluster-yes >"$CL_DIR/create.out" 2>&1 ||
		fail "cluster create: $(tail -n 5 "$CL_DIR/create.out")"
	cl_until 20 rcn_ok || fail "cluster not ok: $(cl_redis 1 cluster nodes)"
	rcn_topology || fail "topology"
	RCN_ADDRS=$(rcn_addrs "${RCN_HOSTS[@]}")
	rcn_conf
	cl_controller_start || fail "controller"
	for i in "${RCN_HOSTS[@]}"; do cl_agent_start "$i"; done
	for i in "${RCN_HOSTS[@]}"; do
		node=$(cl_node "$i")
		cl_until "$CL_WAIT_S" cl_has_event "$CL_CLOG" \
			".kind == \"agent_connected\" and .instance == \"$node\"" ||
			fail "agent $node did not connect: $(tail -n 3 "$CL_DIR/log/agent-$node.out")"
		cl_until "$CL_WAIT_S" cl_has_event "$CL_DIR/events-$node.jsonl" '.kind == "lease_regained"' ||
			fail "$node never held its write lease: $(tail -n 3 "$CL_DIR/log/agent-$node.out")"
	done
	for s in "${PRIMARIES[@]}"; do
		cl_until "$CL_WAIT_S" cl_has_event "$CL_CLOG" ".kind == \"cluster_consistent\" and .shard == \"s$s\"" ||
			fail "s$s not consistent: $(jq -c 'select(.kind | test("cluster"))' "$CL_CLOG")"
	done
}

rcn_slots() {
	cl_redis "$1" cluster nodes | awk '/myself/ {for (i = 9; i <= NF; i++) print $i}' |
		sed 's/^\([0-9]*\)$/\1-\1/' | paste -sd,
}

rcn_down() {
	local i node
	cl_down
	# cl_down removes the pins of hosts 1-3; these are 4-6's (their agents stopped).
	for i in 4 5 6; do
		node=$(cl_node "$i")
		rm -rf "/sys/fs/bpf/flatline/$node" "/run/flatline/agent-$node.lock"
	done
}
