#!/usr/bin/env bash
# Per-shard server credentials ([shard] user and password, docs/man/flatline.conf.5.md)
# on the cluster harness (tests/lib/cluster.sh) and two more hosts:
#
# test_two_shards_two_passwords: shard cache (hosts 1-3, servers with requirepass A) has
#   password A; shard web (hosts 4-5, servers with requirepass B and an ACL user) has
#   that user and B; [redis] password is a third one that no server takes. Every agent
#   reports its server healthy (it authenticated with its shard's pair), `flatline check`
#   says which pair each node uses, and a kill -9 of each shard's primary fails each
#   over: the controller promotes a replica and repoints the other (AUTH with the
#   shard's pair), and the new primaries answer as masters.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

# web_healthy: both nodes of shard web report ok.
web_healthy() {
	[ "$(cl_status_json | jq '[.shards[] | select(.name == "web") | .nodes[] | select(.health == "ok")] | length' 2>/dev/null)" = 2 ]
}

# web_primary_is NODE: the controller's primary of shard web (learnt from INFO, after
# AUTH with the shard's pair).
web_primary_is() { [ "$(cl_status_json | jq -r '.shards[] | select(.name == "web") | .primary' 2>/dev/null)" = "$1" ]; }

# is_master IDX: host IDX's server says role:master (REDISCLI_AUTH: its password).
is_master() { [ "$(cl_role "$1")" = master ]; }

# as PASSWORD CMD...: CMD with the flavour's CLI authenticating as the default user.
as() { local p=$1; shift; REDISCLI_AUTH=$p "$@"; }

extra_clean() {
	local i node cg
	for i in 4 5; do
		node=$(cl_node "$i")
		cl_stop "agent-$node"
		cl_stop "redis-$node"
		rm -rf "/sys/fs/bpf/flatline/$node" "/run/flatline/agent-$node.lock"
		cg=$(cl_cg "$i")
		if [ -n "$cg" ] && [ -d "$cg" ]; then
			while read -r p; do kill -KILL "$p"; done <"$cg/cgroup.procs"
			for _ in $(seq 100); do rmdir "$cg" 2>/dev/null && break; sleep 0.02; done
		fi
	done
}

test_two_shards_two_passwords() {
	local pa pb n4 n5 i new other out
	need_root
	need_cmd ip nsenter nft named jq redis-server redis-cli setsid
	export FL_NODE_PREFIX=a${BASHPID}n
	pa=cache-pw-$BASHPID pb=web-pw-$BASHPID
	cl_init "$T/cl" "fla$BASHPID"
	n4=$(cl_node 4) n5=$(cl_node 5)
	FL_SHARD_CONF=$(
		cat <<-EOF
			password = $pa

			[redis]
			password = no-server-takes-this-$BASHPID

			[node "$n4"]
			address = $(cl_ip 4)
			redis = $(cl_ip 4):6379
			pidfile = $T/cl/$n4/redis.pid

			[node "$n5"]
			address = $(cl_ip 5)
			redis = $(cl_ip 5):6379
			pidfile = $T/cl/$n5/redis.pid

			[shard "web"]
			nodes = $n4 $n5
			user = flweb
			password = $pb
		EOF
	)
	export FL_SHARD_CONF
	on_exit cl_down
	on_exit extra_clean
	export REDISCLI_AUTH=$pa # the harness's checks of shard cache's servers
	CL_REDIS_EXTRA="--requirepass $pa --masterauth $pa" cl_up || fail "cluster did not come up"
	for i in 4 5; do
		cl_netns_attach "$(cl_ns "$i")" "veth$i" "$(cl_ip "$i")"
		[ -z "$CL_CG_KIND" ] || mkdir -p "$(cl_cg "$i")"
	done
	# Shard web: the default user's password B (replication) and the ACL user flweb.
	CL_REDIS_EXTRA="--requirepass $pb --masterauth $pb --user flweb on >$pb allkeys allchannels +@all" \
		cl_redis_start 4 || fail "server 4: $(cl_redis_why 4)"
	CL_REDIS_EXTRA="--requirepass $pb --masterauth $pb --user flweb on >$pb allkeys allchannels +@all" \
		cl_redis_start 5 4 || fail "server 5: $(cl_redis_why 5)"
	cl_until 15 as "$pb" cl_linked 5 4 || fail "server 5 did not sync"
	cl_agent_start 4
	cl_agent_start 5
	cl_until 15 web_healthy || fail "shard web not healthy: $(cl_status_json | jq -c '.shards')"
	# A shard whose servers came up after the controller started has no primary in its
	# model (null in status, the agents' leases lapsed): the controller restarted
	# finds it, as a controller started on a running fleet does.
	cl_stop controller
	# shellcheck disable=SC2119 # no extra options
	cl_controller_start || fail "the controller did not start again"
	cl_until 15 web_primary_is "$n4" || fail "the controller does not see $n4 as web's primary: $(cl_status_json | jq -c '.shards')"
	cl_healthy || fail "shard cache not healthy: $(cl_status_json | jq -c '.shards')"

	cl_ctl "$FL" check -c "$CL_CONF" >"$T/check" || fail "check"
	for i in 1 2 3; do
		grep -A8 "^agent on node $(cl_node "$i") " "$T/check" |
			grep -qx "  authenticates to its server as the default user with shard $CL_SHARD's password" ||
			fail "check: $(cl_node "$i"): $(grep -A8 "^agent on node $(cl_node "$i") " "$T/check")"
	done
	for i in 4 5; do
		grep -A8 "^agent on node $(cl_node "$i") " "$T/check" |
			grep -qx "  authenticates to its server as flweb with shard web's password" ||
			fail "check: $(cl_node "$i"): $(grep -A8 "^agent on node $(cl_node "$i") " "$T/check")"
	done

	# Shard cache fails over: promoted and repointed with password A.
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	cl_until 15 cl_has_event "$CL_CLOG" ".kind == \"promoted\" and .shard == \"$CL_SHARD\"" ||
		fail "shard $CL_SHARD: no promotion: $(tail -n 5 "$CL_CLOG")"
	new=$(jq -r "select(.kind == \"promoted\" and .shard == \"$CL_SHARD\") | .instance" "$CL_CLOG" | head -n 1)
	[ "$new" = "$(cl_node 2)" ] || [ "$new" = "$(cl_node 3)" ] || fail "promoted '$new'"
	new=$(cl_idx "$new")
	other=$((new == 2 ? 3 : 2))
	cl_until 10 is_master "$new" || fail "host $new is not a master: $(cl_role "$new")"
	cl_until 15 cl_linked "$other" "$new" || fail "host $other not repointed to host $new"

	# Shard web fails over: promoted with user flweb and password B.
	kill -KILL "$(cl_pid "redis-$n4")"
	cl_until 15 cl_has_event "$CL_CLOG" ".kind == \"promoted\" and .shard == \"web\" and .instance == \"$n5\"" ||
		fail "shard web: no promotion of $n5: $(tail -n 5 "$CL_CLOG")"
	cl_until 10 as "$pb" is_master 5 || fail "host 5 is not a master: $(as "$pb" cl_role 5)"
	out=$(cl_redis 5 --user flweb --pass "$pb" --no-auth-warning set k v) || fail "write to the new primary: $out"
	expect_eq "write to web's new primary" "$out" OK
	! cl_has_event "$CL_CLOG" '.kind == "promoted" and .shard == "web" and .instance != "'"$n5"'"' ||
		fail "another promotion in web"
	echo "    two shards, two passwords: $(cl_node "$new") and $n5 promoted" >&2
}

TESTS=(test_two_shards_two_passwords)
run_tests
