#!/usr/bin/env bash
# Redundancy restored with real servers, agents and a controller (tests/lib/cluster.sh:
# three namespace hosts, a fourth and fifth made here for the spares): the primary's
# host killed, the failover, then a spare of [shard] spares attached and synced
# (spare_attached, replica_synced, redundancy_restored, flatline_shard_replicas, kept
# across a restart) with every acknowledged write on it; a non-empty spare refused and
# the next used; the old primary back before restore_after_ms (no spare used); a
# failover while a spare is not yet promotable never picks it (and its sync moves to
# the new primary); provision_script called with the shard, the primary, the epoch and
# the reason when no spare is left; two losses at once with one spare (attached, the
# script called for the other) while Sentinel and DNS clients keep naming the primary;
# a spare whose sync fails (OOM-killed in it; its disk full, the sync retried for ever)
# replaced by the next. In HA mode (test_spares_ha.sh) the leader killed mid-attach and
# in the spare's promotable wait. SPARES_TESTS="test_a test_b" runs only those.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh

PY=/usr/bin/python3
MPORT=9187

# cluster SHARD-LINES [SPARE-IDX...]: the cluster, with these [shard] lines and the
# [node] sections of the spares on hosts IDX (their servers and agents started, empty).
cluster() {
	local lines=$1 i extra=""
	shift
	need_root
	need_cmd ip nsenter nft named tsig-keygen dig jq setsid curl "$PY"
	[ -z "${FL_HA:-}" ] || need_cmd etcd
	export FL_NODE_PREFIX=s${BASHPID}n
	CL_KEEP=1
	cl_init "$T/cl" "fls$BASHPID"
	[ -z "$CL_FLAVOUR_WHY" ] || skip "$CL_FLAVOUR_WHY"
	for i in "$@"; do
		extra+=$'\n'"[node \"$(cl_node "$i")\"]"$'\n'"address = $(cl_ip "$i")"
		extra+=$'\n'"redis = $(cl_hp "$(cl_ip "$i")" 6379)"$'\n'"${SPARE_NODE_CONF:-}"
	done
	export FL_SHARD_CONF="$lines$extra"
	export FL_CTL_CONF="metrics_listen = 0.0.0.0:$MPORT
provision_script = $T/provision.sh
${CTL_CONF:-}"
	cat >"$T/provision.sh" <<-EOF
		#!/bin/sh
		printf '%s|' "\$@" >>"$T/provision.args"
		echo >>"$T/provision.args"
	EOF
	chmod 755 "$T/provision.sh"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
	for i in "$@"; do host_up "$i"; done
}

# host_up IDX: a namespace on the bridge, an empty server (a primary of its own), its agent.
host_up() {
	cl_netns_attach "$(cl_ns "$1")" "veth$1" "$(cl_ip "$1")"
	[ -z "$CL_CG_KIND" ] || mkdir -p "$(cl_cg "$1")"
	on_exit host_clean "$1"
	# HOST_SMALL_DISK=IDX: its server's dir on a 1 MB tmpfs (a full disk; its log and
	# pidfile stay where they were).
	local extra=${CL_REDIS_EXTRA:-} d
	if [ "${HOST_SMALL_DISK:-}" = "$1" ]; then
		d=$CL_DIR/$(cl_node "$1")/rdb
		mkdir -p "$d"
		mount -t tmpfs -o size=1m flatline-test "$d" || fail "tmpfs on $d"
		on_exit "umount -l $d"
		extra+=" --dir $d"
	fi
	CL_REDIS_EXTRA=$extra cl_redis_start "$1" || fail "server on host $1 did not start"
	[ "${HOST_SMALL_DISK:-}" != "$1" ] || [ "$(cl_redis "$1" config get dir | tail -n 1)" = "$d" ] ||
		fail "host $1's dir: $(cl_redis "$1" config get dir)"
	# HOST_DATA=IDX: a key written before its agent runs (then it answers no client),
	# in db HOST_DATA_DB (0).
	[ "${HOST_DATA:-}" != "$1" ] || cl_redis "$1" -n "${HOST_DATA_DB:-0}" set precious 1 >/dev/null ||
		fail "set on host $1"
	cl_agent_start "$1"
	wait_ctl ".kind == \"agent_connected\" and .instance == \"$(cl_node "$1")\"" 15
}
host_clean() {
	local cg node
	node=$(cl_node "$1")
	cl_stop "agent-$node"
	cl_stop "redis-$node"
	rm -rf "/sys/fs/bpf/flatline/$node" "/run/flatline/agent-$node.lock"
	cg=$(cl_cg "$1")
	if [ -n "$cg" ] && [ -d "$cg" ]; then
		while read -r p; do kill -KILL "$p"; done <"$cg/cgroup.procs"
		for _ in $(seq 100); do rmdir "$cg" 2>/dev/null && break; sleep 0.02; done
	fi
}
# untouched IDX: the spare's server was never made a replica (its log; once its agent
# runs, a spare's server answers no client: it is a master without a write lease, and
# the lease outlives the agent).
untouched() {
	! grep -q "Connecting to MASTER\|REPLICAOF" "$CL_DIR/$(cl_node "$1")/redis.log" ||
		fail "the spare's server on host $1 was made a replica: $(grep -m 2 'MASTER\|REPLICAOF' "$CL_DIR/$(cl_node "$1")/redis.log")"
}
# host_kill IDX: the host gone at once: its server and agent killed, its cable pulled.
host_kill() {
	T0=$(cl_now_ns)
	kill -KILL "$(cl_pid "agent-$(cl_node "$1")")" "$(cl_pid "redis-$(cl_node "$1")")"
	cl_link_down "$1"
}

ctl_ev() { cl_has_event "$CL_CLOG" "$1"; }
wait_ctl() { # JQ-FILTER [SECONDS]
	cl_until "${2:-10}" ctl_ev "$1" || fail "no controller event ($1) within ${2:-10} s: $(tail -n 5 "$CL_CLOG")"
}
ev() { jq -c "select($1)" "$CL_CLOG" 2>/dev/null | head -n 1; }
shard_json() { cl_status_json | jq -c --arg s "$CL_SHARD" '.shards[] | select(.name == $s)' 2>/dev/null; }
shard_is() { [ "$(shard_json | jq -r "$1" 2>/dev/null)" = true ]; }
node_json() { shard_json | jq -c --arg n "$1" '.nodes[] | select(.id == $n)' 2>/dev/null; }
metric() { cl_ctl curl -s "http://$CL_CTL_IP:$MPORT/metrics" | awk -v m="$1{shard=\"$CL_SHARD\"}" '$1 == m { print $2 }'; }
# metric_is NAME VALUE: the shard's metric NAME is VALUE now (asked again on each call).
metric_is() { [ "$(metric "$1")" = "$2" ]; }
# role_is IDX ROLE / node_role_is NODE ROLE: asked again on each call (for cl_until).
role_is() { [ "$(cl_role "$1")" = "$2" ]; }
node_role_is() { [ "$(node_json "$1" | jq -r .role)" = "$2" ]; }
# ms_between EVENT-A EVENT-B: milliseconds from one event's ts to the other's.
ms_between() {
	"$PY" -c 'import sys, json, datetime as d
t = [d.datetime.strptime(json.loads(a)["ts"], "%Y-%m-%dT%H:%M:%S.%fZ") for a in sys.argv[1:]]
print(int((t[1] - t[0]).total_seconds() * 1000))' "$1" "$2"
}
# the new primary's index (one master among hosts 1..3)
new_primary() {
	local m
	m=$(cl_masters)
	[ "$(grep -c . <<<"$m")" = 1 ] || fail "primaries: $(tr '\n' ' ' <<<"$m")"
	echo "$m"
}
# lost_acked IDX: writes acknowledged after T0 missing from server IDX's list w.
lost_acked() {
	CL_CLI_TIMEOUT=10 cl_redis "$1" lrange w 0 -1 >"$T/final-$1"
	awk -v t="$T0" 'NR == FNR { have[$1] = 1; next } $1 == "A" && $3 > t && !($2 in have)' \
		"$T/final-$1" "$CL_DIR/writer.out" | wc -l
}

# fill IDX KEYS BYTES [random]: KEYS keys of BYTES bytes written on the primary IDX by
# scripts (their writes replicated like any other), in chunks; random: of SHA-1 hex
# digests (an RDB that does not compress), else one letter repeated.
fill() {
	local done=0 n val="string.rep('v', tonumber(ARGV[3]))"
	[ "${4:-}" != random ] || val="string.sub(table.concat(t), 1, tonumber(ARGV[3]))"
	while [ "$done" -lt "$2" ]; do
		n=$(($2 - done > 20000 ? 20000 : $2 - done))
		CL_CLI_TIMEOUT=30 cl_redis "$1" eval "for i = ARGV[1], ARGV[2] do
			local t = {}
			if ARGV[4] == 'random' then for j = 1, tonumber(ARGV[3]) / 40 + 1 do t[j] = redis.sha1hex(i .. ':' .. j) end end
			redis.call('set', 'fill:' .. i, $val) end" \
			0 "$done" $((done + n - 1)) "$3" "${4:-}" >/dev/null || fail "fill on host $1"
		done=$((done + n))
	done
}
# ts_ns ISO-TS: nanoseconds since the epoch; ev_ns JQ-FILTER [LOG]: the first matching
# event's time, as that.
ts_ns() { date -u -d "$1" +%s%N; }
ev_ns() { ts_ns "$(jq -r "select($1) | .ts" "${2:-$CL_CLOG}" 2>/dev/null | head -n 1)"; }
# watch_start: the clients of a shard, from the ctl namespace, every 50 ms until
# watch_stop: redis-py's Sentinel client (discover_master, and SENTINEL
# get-master-addr-by-name) in DIR/log/watch-sentinel.out and a DNS lookup of the
# shard's name (dig at named) in DIR/log/watch-dns.out, each line "NS ADDRESS...".
watch_start() {
	cat >"$T/watch.py" <<-'PYEOF'
		import sys, time, redis
		from redis.sentinel import Sentinel
		host, port, shard = sys.argv[1], int(sys.argv[2]), sys.argv[3]
		s = Sentinel([(host, port)], socket_timeout=1)
		r = redis.Redis(host=host, port=port, socket_timeout=1, decode_responses=True)
		while True:
		    try:
		        a = r.execute_command("SENTINEL", "get-master-addr-by-name", shard)
		        ga = "%s:%s" % (a[0], a[1])
		    except Exception as e:
		        ga = "ERR:" + type(e).__name__
		    try:
		        m = s.discover_master(shard)
		        dm = "%s:%s" % m
		    except Exception as e:
		        dm = "ERR:" + type(e).__name__
		    print(time.time_ns(), ga, dm, flush=True)
		    time.sleep(0.05)
	PYEOF
	cl_spawn watch-sentinel "$CL_NS_CTL" "$PY" -u "$T/watch.py" "$CL_CTL_IP" "$CL_CTL_PORT" "$CL_SHARD"
	# shellcheck disable=SC2016 # expanded by that bash
	cl_spawn watch-dns "$CL_NS_CTL" bash -c 'while :; do
		a=$(dig +short +time=1 +tries=1 @"$1" "$2" "$3" 2>/dev/null | grep -v "^;" | tr "\n" " ")
		echo "$(date +%s%N) ${a:-none}"; sleep 0.05; done' dns "$CL_CTL_IP" "$CL_DNS_NAME" "$CL_RR"
	cl_until 10 grep -q ":6379 .*:6379" "$CL_DIR/log/watch-sentinel.out" ||
		fail "the Sentinel client found no primary: $(tail -n 3 "$CL_DIR/log/watch-sentinel.out")"
}
# watch_check PRIMARY-IDX FROM-NS TO-NS: every answer the clients had named that primary
# (never the spare, never none), and each asked at least 5 times between FROM and TO.
watch_check() {
	local want bad n f
	want=$(cl_ip "$1"):6379
	cl_stop watch-sentinel
	cl_stop watch-dns
	bad=$(awk -v w="$want" '$2 != w || $3 != w' "$CL_DIR/log/watch-sentinel.out" | head -n 3)
	[ -z "$bad" ] || fail "the Sentinel client was told another primary: $bad"
	bad=$(awk -v w="$(cl_ip "$1")" '$2 != w || NF != 2' "$CL_DIR/log/watch-dns.out" | head -n 3)
	[ -z "$bad" ] || fail "DNS named another address: $bad"
	for f in watch-sentinel watch-dns; do
		n=$(awk -v a="$2" -v b="$3" '$1 >= a && $1 <= b' "$CL_DIR/log/$f.out" | wc -l)
		[ "$n" -ge 5 ] || fail "$f asked only $n times during the attach"
	done
}

# The primary's host killed: failover, a deficit, the spare attached after
# restore_after_ms and synced, redundancy restored; every write acknowledged after the
# kill is on the new primary and on the spare; the spare stays a member across a restart.
test_host_kill_spare() {
	local n4 new d a acked since
	cluster "restore_after_ms = 2000
promotable_after_ms = 500
spares = s${BASHPID}n4" 4
	n4=$(cl_node 4)
	[ "$(shard_json | jq -r '.spares[0]')" = "$n4" ] || fail "status has no spare: $(shard_json)"
	# (the replicas count once their first REPORTs say they are linked and synced)
	cl_until 5 metric_is flatline_shard_replicas 2 || fail "replicas metric: $(metric flatline_shard_replicas)"
	[ "$(metric flatline_shard_replicas_desired)" = 2 ] || fail "desired metric"
	# A Sentinel client's view: redis-py subscribed to +slave on the controller.
	cat >"$T/sub.py" <<-'PYEOF'
		import sys, redis
		ps = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), decode_responses=True).pubsub()
		ps.subscribe("+slave")
		for m in ps.listen():
		    print(m["type"], m["data"], flush=True)
	PYEOF
	cl_spawn sub-slave "$CL_NS_CTL" "$PY" -u "$T/sub.py" "$CL_CTL_IP" "$CL_CTL_PORT"
	cl_until 10 grep -q '^subscribe' "$CL_DIR/log/sub-slave.out" || fail "redis-py did not subscribe: $(cat "$CL_DIR/log/sub-slave.out")"
	cl_writer_start --rate 200 || fail "writer"
	sleep 0.5
	host_kill 1
	wait_ctl '.kind == "failover_end"' 15
	new=$(new_primary)
	wait_ctl ".kind == \"replica_deficit\" and .shard == \"$CL_SHARD\" and .replicas == 1 and .desired == 2"
	cl_until 5 shard_is '.deficit_ms > 0' || fail "status shows no deficit: $(shard_json)"
	cl_ctl "$FL" status -c "$CL_CONF" | grep -q "REPLICA DEFICIT: 1 of 2" || fail "status text: $(cl_ctl "$FL" status -c "$CL_CONF")"
	wait_ctl ".kind == \"spare_attached\" and .instance == \"$n4\"" 15
	d=$(ev '.kind == "replica_deficit"')
	a=$(ev '.kind == "spare_attached"')
	[ "$(ms_between "$d" "$a")" -ge 1900 ] || fail "spare attached $(ms_between "$d" "$a") ms after the deficit (restore_after_ms 2000)"
	wait_ctl ".kind == \"replica_synced\" and .instance == \"$n4\" and .duration_ms >= 0 and .bytes > 0" 30
	wait_ctl ".kind == \"redundancy_restored\" and .replicas == 2 and .desired == 2" 15
	cl_until 5 grep -q "^message slave $(cl_ip 4):[0-9]* $(cl_ip 4) [0-9]* @ $CL_SHARD $(cl_ip "$new") " \
		"$CL_DIR/log/sub-slave.out" || fail "no +slave for the spare: $(cat "$CL_DIR/log/sub-slave.out")"
	cl_until 5 cl_linked 4 "$new" || fail "the spare does not follow $(cl_node "$new"): $(cl_info 4 master_host)"
	[ "$(node_json "$n4" | jq -r .role)" = replica ] || fail "status: $(node_json "$n4")"
	[ "$(shard_json | jq -r '.spares | length')" = 0 ] || fail "still listed as a spare: $(shard_json)"
	cl_until 5 metric_is flatline_shard_replicas 2 || fail "replicas metric: $(metric flatline_shard_replicas)"
	wait_ctl ".kind == \"replica_promotable\" and .instance == \"$n4\"" 10
	sleep 0.5
	cl_writer_stop
	acked=$(awk -v t="$T0" '$1 == "A" && $3 > t' "$CL_DIR/writer.out" | wc -l)
	[ "$acked" -gt 100 ] || fail "only $acked writes acknowledged after the kill"
	CL_CLI_TIMEOUT=5 cl_redis "$new" wait 2 3000 >/dev/null
	expect_eq "acknowledged writes lost on the new primary" "$(lost_acked "$new")" 0
	expect_eq "acknowledged writes missing on the spare" "$(lost_acked 4)" 0
	echo "    $acked writes acknowledged after the kill, none lost; spare synced in $(jq -r 'select(.kind == "replica_synced") | .duration_ms' "$CL_CLOG") ms" >&2
	# Kept: a member of the shard after a restart (the state file's attach line).
	grep -q "^member attach node $n4 shard $CL_SHARD" "$CL_DIR/state" || fail "state file: $(grep member "$CL_DIR/state")"
	cl_stop controller
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	cl_controller_start || fail "controller did not start again"
	cl_until 10 node_role_is "$n4" replica || fail "after the restart: $(node_json "$n4")"
	# Restarted, the controller holds the attached spare unpromotable until it has seen
	# it synced and steady again (promotable_after_ms): said a second time.
	wait_ctl ".kind == \"replica_promotable\" and .instance == \"$n4\" and .ts >= \"$since\"" 15
}

# A spare with data (in db 1: DBSIZE of db 0 says 0) is refused with the reason; the
# next one (empty) is attached.
test_nonempty_refused() {
	local n4 n5
	HOST_DATA=4 HOST_DATA_DB=1 cluster "restore_after_ms = 0
spares = s${BASHPID}n4 s${BASHPID}n5" 4 5
	n4=$(cl_node 4) n5=$(cl_node 5)
	host_kill 1
	wait_ctl '.kind == "failover_end"' 15
	wait_ctl ".kind == \"spare_refused\" and .instance == \"$n4\" and (.reason | test(\"not empty\"))" 10
	wait_ctl ".kind == \"spare_attached\" and .instance == \"$n5\"" 10
	wait_ctl ".kind == \"redundancy_restored\"" 20
	[ -z "$(ev ".kind == \"spare_attached\" and .instance == \"$n4\"")" ] || fail "$n4 was attached"
	[ "$(shard_json | jq -r '.spares | join(" ")')" = "$n4" ] || fail "spares now: $(shard_json)"
	untouched 4
	cl_has_event "$CL_CLOG" ".kind == \"spare_refused\" and (.reason | test(\"1 keys in INFO keyspace\"))" ||
		fail "refused for another reason: $(ev '.kind == "spare_refused"')"
}

# The old primary back (and demoted) before restore_after_ms: no spare is used.
test_old_primary_back() {
	local n4 old new
	cluster "restore_after_ms = 20000
spares = s${BASHPID}n4" 4
	n4=$(cl_node 4)
	old=1
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	wait_ctl '.kind == "failover_end"' 15
	new=$(new_primary)
	wait_ctl '.kind == "replica_deficit"' 10
	cl_redis_start 1 || fail "server 1 did not start again"
	cl_until 20 cl_linked "$old" "$new" || fail "the old primary is not a replica of $(cl_node "$new")"
	wait_ctl '.kind == "redundancy_restored" and .replicas == 2' 15
	[ "$(ms_between "$(ev '.kind == "replica_deficit"')" "$(ev '.kind == "redundancy_restored"')")" -lt 20000 ] ||
		fail "restored only after restore_after_ms"
	sleep 2
	[ -z "$(ev '.kind == "spare_attached"')" ] || fail "a spare was attached: $(ev '.kind == "spare_attached"')"
	[ "$(shard_json | jq -r '.spares[0]')" = "$n4" ] || fail "$n4 is no spare any more: $(shard_json)"
	untouched 4
}

# A failover while the attached spare is not yet promotable (promotable_after_ms long)
# picks another replica though the spare has the best priority (and a switchover to
# it is refused); the epoch change moves the spare's sync to the new primary.
test_no_promotion_of_syncing() {
	local n4 second third out
	SPARE_NODE_CONF="priority = 1" CTL_CONF="failover_block_ms = 1000" cluster "restore_after_ms = 0
promotable_after_ms = 600000
spares = s${BASHPID}n4" 4
	n4=$(cl_node 4)
	host_kill 1
	wait_ctl '.kind == "failover_end"' 15
	second=$(new_primary)
	wait_ctl ".kind == \"replica_synced\" and .instance == \"$n4\"" 30
	cl_until 5 shard_is ".spare_node == \"$n4\" and .spare_state == \"steady\"" || fail "status: $(shard_json)"
	cl_ctl "$FL" status -c "$CL_CONF" | grep -q "SPARE $n4: steady" || fail "status text"
	# A planned switchover to it is refused too.
	if out=$(cl_ctl timeout 15 "$FL" failover "$CL_SHARD" --to "$n4" -c "$CL_CONF" 2>&1); then
		fail "a switchover to the unpromotable spare was accepted: $out"
	fi
	grep -q "just attached" <<<"$out" || fail "switchover: $out"
	# The second primary's server killed (its agent sees it: no lease wait; a second
	# host kill is test_second_host_kill).
	kill -KILL "$(cl_pid "redis-$(cl_node "$second")")"
	wait_ctl ".kind == \"promoted\" and .instance != \"$(cl_node 1)\" and .instance != \"$(cl_node "$second")\"" 15
	[ -z "$(ev ".kind == \"promoted\" and .instance == \"$n4\"")" ] || fail "the spare was promoted"
	cl_until 5 role_is 4 slave || fail "the spare's server is a '$(cl_role 4)'"
	wait_ctl ".kind == \"spare_sync_aborted\" and .instance == \"$n4\" and (.reason | test(\"epoch\"))" 10
	third=$(new_primary)
	cl_until 10 cl_linked 4 "$third" || fail "the spare does not follow the third primary"
}

# admitted_without IDX NODE: host IDX's agent runs with a lease admission grant (its
# last lease_admission event) that leaves NODE out: its echoes renew nothing there.
admitted_without() {
	local a
	a=$(jq -r 'select(.kind == "lease_admission") | .admitted' \
		"$CL_DIR/events-$(cl_node "$1").jsonl" 2>/dev/null | tail -n 1)
	[ -n "$a" ] && ! tr ',' '\n' <<<"$a" | grep -qx "$2"
}

# confirmed NODE PEER: flatline status says NODE's agent confirmed PEER's withdrawal.
confirmed() { [ "$(node_json "$1" | jq -r --arg p "$2" '.withdrawals_confirmed | index($p) != null')" = true ]; }

# Two host kills in a row: n1's, then (the spare attached and promotable) the second
# primary's. n1, declared down at the first kill, is withdrawn from every other agent's
# lease admission; the second primary's agent applies that grant (lease_admission in
# its log) and says so in its next REPORT: from then on no echo reply of n1 renews its
# lease, whatever n1's kernel still does. So when its host dies too, the failover does
# not wait for the silent n1 (n1 stays down throughout): the third node or the synced
# spare is promoted, there is one writable primary, and no write acknowledged after
# that promotion is lost.
test_second_host_kill() {
	local n1 n4 second rest third other inst n acked
	CTL_CONF="failover_block_ms = 1000" cluster "restore_after_ms = 0
promotable_after_ms = 500
spares = s${BASHPID}n4" 4
	n1=$(cl_node 1)
	n4=$(cl_node 4)
	cl_writer_start --rate 200 || fail "writer"
	sleep 0.5
	host_kill 1
	wait_ctl '.kind == "failover_end"' 15
	second=$(new_primary)
	wait_ctl ".kind == \"replica_promotable\" and .instance == \"$n4\"" 40
	cl_until 5 cl_linked 4 "$second" || fail "the spare does not follow $(cl_node "$second")"
	cl_until 10 admitted_without "$second" "$n1" ||
		fail "host $second's agent still admits $n1: $(jq -c 'select(.kind == "lease_admission")' "$CL_DIR/events-$(cl_node "$second").jsonl" | tail -n 2)"
	# and the controller has its word for it (flatline status --json)
	cl_until 5 confirmed "$(cl_node "$second")" "$n1" || fail "status: $(node_json "$(cl_node "$second")")"
	[ "$(node_json "$n1" | jq -r .admission)" = withdrawn ] || fail "status: $(node_json "$n1")"
	host_kill "$second"
	wait_ctl ".kind == \"promoted\" and .instance != \"$(cl_node "$second")\"" 15
	T0=$(cl_now_ns)
	[ -z "$(ev ".kind == \"lease_wait\" and .silent_peer == \"$n1\"")" ] ||
		fail "the second failover waited for the dead n1: $(ev '.kind == "lease_wait"')"
	! cl_alive "agent-$n1" || fail "n1's agent runs"
	rest=$((5 - second)) # the third of hosts 1..3
	inst=$(jq -r "select(.kind == \"promoted\" and .instance != \"$(cl_node "$second")\") | .instance" "$CL_CLOG" | head -n 1)
	third=${inst##*n}
	[ "$third" = "$rest" ] || [ "$third" = 4 ] || fail "promoted $inst"
	wait_ctl '.kind == "failover_end" and .to == "'"$inst"'"' 15
	# Asked until it answers: its write lease (and so its replies to clients) comes
	# with the controller's next answer to its agent.
	cl_until 5 role_is "$third" master || fail "the third primary is a '$(cl_role "$third")'"
	other=$((third == 4 ? rest : 4))
	cl_until 10 cl_linked "$other" "$third" || fail "host $other does not follow the third primary"
	[ "$(cl_role "$other")" = slave ] || fail "host $other's server is a '$(cl_role "$other")'"
	sleep 1
	cl_writer_stop
	acked=$(awk -v t="$T0" '$1 == "A" && $3 > t' "$CL_DIR/writer.out" | wc -l)
	[ "$acked" -gt 50 ] || fail "only $acked writes acknowledged after the second promotion"
	CL_CLI_TIMEOUT=5 cl_redis "$third" wait 1 3000 >/dev/null
	expect_eq "acknowledged writes lost on the third primary" "$(lost_acked "$third")" 0
	expect_eq "acknowledged writes missing on its replica" "$(lost_acked "$other")" 0
	n=$(jq -c 'select(.kind == "promoted")' "$CL_CLOG" | wc -l)
	expect_eq "promotions" "$n" 2
	echo "    second failover to $inst with n1 still down ($(ms_between "$(ev ".kind == \"node_down\" and .instance == \"$(cl_node "$second")\"")" "$(ev ".kind == \"promoted\" and .instance == \"$inst\"")") ms from node_down); $acked writes acknowledged after it, none lost" >&2
}

# A withdrawal not confirmed still blocks: n1 (the primary) cut off from the controller
# only (its peers still reach it, so it is agent_lost, and it keeps its lease through
# their echoes), then n3's host killed: n3 is withdrawn from n1's admission, but n1's
# agent never hears it. n1's host killed next: n1 and n3 may be cut off together with
# n3's kernel still answering n1's echoes, so nothing is promoted while n3 is silent
# (failover_blocked: peer n3 is silent); once n3's host is back (its agent; its server stays
# down) the failover goes to n2.
test_unconfirmed_withdrawal_blocks() {
	local n1 n3 n
	CTL_CONF="failover_block_ms = 1000" cluster "restore_after_ms = 600000"
	n1=$(cl_node 1)
	n3=$(cl_node 3)
	[ "$(new_primary)" = 1 ] || fail "the primary is not host 1"
	cl_in 1 nft -f - <<-EOF
		table inet flctlcut {
			chain out { type filter hook output priority -10; policy accept; ip daddr $CL_CTL_IP tcp dport $CL_CTL_PORT drop; }
		}
	EOF
	wait_ctl ".kind == \"agent_lost\" and .instance == \"$n1\"" 15
	host_kill 3
	wait_ctl ".kind == \"node_down\" and .instance == \"$n3\"" 15
	cl_until 10 admitted_without 2 "$n3" || fail "host 2's agent still admits $n3"
	! admitted_without 1 "$n3" || fail "host 1's agent heard the withdrawal through the cut"
	[ "$(cl_role 1)" = master ] || fail "host 1 is a '$(cl_role 1)'"
	host_kill 1
	wait_ctl ".kind == \"failover_blocked\" and .from == \"$n1\" and (.reason | test(\"peer $n3 is silent\"))" 15
	sleep 3
	n=$(jq -c 'select(.kind == "promoted")' "$CL_CLOG" | wc -l)
	expect_eq "promotions while n3 is silent and n1 never confirmed its withdrawal" "$n" 0
	! grep -qi "MASTER MODE enabled\|PRIMARY MODE enabled" "$CL_DIR/$(cl_node 2)/redis.log" ||
		fail "host 2's server was made a primary while n3 is silent"
	cl_link_up 3
	cl_agent_start 3
	wait_ctl ".kind == \"promoted\" and .instance == \"$(cl_node 2)\"" 15
	cl_until 5 role_is 2 master || fail "host 2 is a '$(cl_role 2)'"
}

# No spare left: provision_script runs with the shard, the primary, the epoch, the reason.
test_provision() {
	local new epoch
	cluster "restore_after_ms = 0"
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	wait_ctl '.kind == "failover_end"' 15
	new=$(new_primary)
	wait_ctl '.kind == "provision_requested" and (.reason | test("no spare left"))' 10
	cl_until 10 test -s "$T/provision.args" || fail "provision_script did not run"
	epoch=$(shard_json | jq -r .epoch)
	expect_eq "provision_script's arguments" "$(cat "$T/provision.args")" \
		"$CL_SHARD|$(cl_ip "$new"):6379|$epoch|replica_deficit: 1 of 2 replicas, no spare left|"
	sleep 2
	expect_eq "provision_script runs (once per deficit)" "$(wc -l <"$T/provision.args")" 1
}

# Both replicas' hosts killed at once, one spare: it is attached and synced (the
# deficit 0 of 2), then, no spare left for the other loss, provision_script is called
# once (1 of 2) and redundancy is not said restored. Throughout, redis-py's Sentinel
# client and a DNS lookup of the shard's name name the primary, never the syncing
# spare; every write acknowledged after the kills is on the primary and on the spare.
test_two_losses() {
	local n4 acked a p
	cluster "restore_after_ms = 0
promotable_after_ms = 1000
spares = s${BASHPID}n4" 4
	n4=$(cl_node 4)
	fill 1 20000 1000 # 20 MB: a sync that takes a moment
	watch_start
	cl_writer_start --rate 200 || fail "writer"
	sleep 0.5
	host_kill 2
	kill -KILL "$(cl_pid "agent-$(cl_node 3)")" "$(cl_pid "redis-$(cl_node 3)")"
	cl_link_down 3
	wait_ctl ".kind == \"replica_deficit\" and .shard == \"$CL_SHARD\" and .desired == 2" 15
	wait_ctl ".kind == \"spare_attached\" and .instance == \"$n4\" and .replicas == 0" 15
	wait_ctl ".kind == \"replica_synced\" and .instance == \"$n4\"" 30
	wait_ctl ".kind == \"replica_promotable\" and .instance == \"$n4\"" 10
	wait_ctl '.kind == "provision_requested" and (.reason | test("1 of 2 replicas, no spare left"))' 10
	cl_until 10 test -s "$T/provision.args" || fail "provision_script did not run"
	expect_eq "provision_script's arguments" "$(cat "$T/provision.args")" \
		"$CL_SHARD|$(cl_ip 1):6379|$(shard_json | jq -r .epoch)|replica_deficit: 1 of 2 replicas, no spare left|"
	a=$(ev_ns ".kind == \"spare_attached\"")
	p=$(ev_ns ".kind == \"provision_requested\"")
	[ "$p" -gt "$a" ] || fail "provision_requested before the spare was used"
	cl_until 5 metric_is flatline_shard_replicas 1 || fail "replicas metric: $(metric flatline_shard_replicas)"
	sleep 2
	expect_eq "provision_script runs (once per deficit)" "$(wc -l <"$T/provision.args")" 1
	[ -z "$(ev '.kind == "redundancy_restored"')" ] || fail "restored with 1 of 2: $(ev '.kind == "redundancy_restored"')"
	[ -z "$(ev '.kind == "failover_begin" or .kind == "promoted"')" ] || fail "a failover: $(ev '.kind == "promoted"')"
	watch_check 1 "$a" "$(ev_ns ".kind == \"replica_promotable\" and .instance == \"$n4\"")"
	cl_writer_stop
	acked=$(awk -v t="$T0" '$1 == "A" && $3 > t' "$CL_DIR/writer.out" | wc -l)
	[ "$acked" -gt 100 ] || fail "only $acked writes acknowledged after the kills"
	CL_CLI_TIMEOUT=5 cl_redis 1 wait 1 3000 >/dev/null
	expect_eq "acknowledged writes lost on the primary" "$(lost_acked 1)" 0
	expect_eq "acknowledged writes missing on the spare" "$(lost_acked 4)" 0
	echo "    $acked writes acknowledged after the kills, none lost; Sentinel and DNS named $(cl_node 1) in $(wc -l <"$CL_DIR/log/watch-sentinel.out")+$(wc -l <"$CL_DIR/log/watch-dns.out") lookups" >&2
}

# A spare whose host has less memory than the dataset (its memory cgroup): the kernel
# kills its server in the full sync, spare_sync_failed, and the next spare is attached
# and synced; the failed one is never promotable, every acknowledged write is on the
# primary and on the second spare.
test_sync_fails_next() {
	local n4 n5 acked
	[ -n "$(cl_cg_kind)" ] || skip "no memory cgroup to give the spare less memory than the dataset"
	cluster "restore_after_ms = 0
promotable_after_ms = 500
spares = s${BASHPID}n4 s${BASHPID}n5" 4 5
	n4=$(cl_node 4) n5=$(cl_node 5)
	fill 1 60000 1000 # 60 MB
	CL_CLI_TIMEOUT=20 cl_redis 1 wait 2 15000 >/dev/null
	cl_cg_limit 4 $((32 << 20)) || fail "memory limit of host 4"
	cl_writer_start --rate 200 || fail "writer"
	sleep 0.5
	host_kill 3
	wait_ctl ".kind == \"spare_attached\" and .instance == \"$n4\"" 20
	wait_ctl ".kind == \"spare_sync_failed\" and .instance == \"$n4\" and (.reason | test(\"down\"))" 30
	cl_running "$(cl_pid "redis-$n4")" && fail "the first spare's server still runs"
	cl_has_event "$CL_DIR/events-$n4.jsonl" '.kind == "oom_kill" or .oom == true' ||
		fail "its agent saw no OOM kill: $(tail -n 3 "$CL_DIR/events-$n4.jsonl")"
	wait_ctl ".kind == \"spare_attached\" and .instance == \"$n5\"" 15
	wait_ctl ".kind == \"replica_synced\" and .instance == \"$n5\"" 30
	wait_ctl ".kind == \"replica_promotable\" and .instance == \"$n5\"" 10
	wait_ctl '.kind == "redundancy_restored" and .replicas == 2' 15
	[ -z "$(ev ".kind == \"replica_synced\" and .instance == \"$n4\"")" ] || fail "the failed spare said synced"
	[ -z "$(ev ".kind == \"replica_promotable\" and .instance == \"$n4\"")" ] || fail "the failed spare promotable"
	cl_until 5 cl_linked 5 1 || fail "the second spare does not follow the primary"
	sleep 0.5
	cl_writer_stop
	acked=$(awk -v t="$T0" '$1 == "A" && $3 > t' "$CL_DIR/writer.out" | wc -l)
	[ "$acked" -gt 100 ] || fail "only $acked writes acknowledged after the kill"
	CL_CLI_TIMEOUT=5 cl_redis 1 wait 2 3000 >/dev/null
	expect_eq "acknowledged writes lost on the primary" "$(lost_acked 1)" 0
	expect_eq "acknowledged writes missing on the second spare" "$(lost_acked 5)" 0
	expect_eq "keys on the second spare" "$(cl_redis 5 dbsize)" "$(cl_redis 1 dbsize)"
	echo "    $n4 OOM-killed in its sync, $n5 attached and synced; $acked writes acknowledged, none lost" >&2
}

# leader_not IDX: a controller other than IDX leads (asked again on each call).
leader_not() { local l; l=$(cl_ha_leader) && [ "$l" != "$1" ]; }
# syncing IDX: the server is in a full sync now.
syncing() { [ "$(cl_info "$1" master_sync_in_progress)" = 1 ]; }

# A spare whose disk is full (its dir a 1 MB tmpfs, the full sync's RDB 5 MB that does
# not compress): its server retries the sync for ever, each try a new full sync of the
# primary, and the controller sees it syncing each time; after three, spare_sync_failed,
# and the next spare is attached and synced, with every acknowledged write on it.
test_sync_fails_disk_full() {
	local n4 n5 acked
	HOST_SMALL_DISK=4 cluster "restore_after_ms = 0
promotable_after_ms = 500
spares = s${BASHPID}n4 s${BASHPID}n5" 4 5
	n4=$(cl_node 4) n5=$(cl_node 5)
	fill 1 5000 1000 random
	CL_CLI_TIMEOUT=20 cl_redis 1 wait 2 15000 >/dev/null
	cl_writer_start --rate 200 || fail "writer"
	sleep 0.5
	host_kill 3
	wait_ctl ".kind == \"spare_attached\" and .instance == \"$n4\"" 20
	wait_ctl ".kind == \"spare_sync_failed\" and .instance == \"$n4\" and (.reason | test(\"full syncs from the primary failed\"))" 60
	grep -q "short write\\|No space left on device" "$CL_DIR/$n4/redis.log" ||
		fail "the spare's sync failed for another reason: $(grep -m 3 -i "error\|fail" "$CL_DIR/$n4/redis.log")"
	wait_ctl ".kind == \"spare_attached\" and .instance == \"$n5\"" 15
	wait_ctl ".kind == \"replica_synced\" and .instance == \"$n5\"" 30
	wait_ctl ".kind == \"replica_promotable\" and .instance == \"$n5\"" 10
	wait_ctl '.kind == "redundancy_restored" and .replicas == 2' 15
	[ -z "$(ev ".kind == \"replica_synced\" and .instance == \"$n4\"")" ] || fail "the failed spare said synced"
	[ -z "$(ev ".kind == \"replica_promotable\" and .instance == \"$n4\"")" ] || fail "the failed spare promotable"
	sleep 0.5
	cl_writer_stop
	acked=$(awk -v t="$T0" '$1 == "A" && $3 > t' "$CL_DIR/writer.out" | wc -l)
	[ "$acked" -gt 100 ] || fail "only $acked writes acknowledged after the kill"
	CL_CLI_TIMEOUT=5 cl_redis 1 wait 2 3000 >/dev/null
	expect_eq "acknowledged writes lost on the primary" "$(lost_acked 1)" 0
	expect_eq "acknowledged writes missing on the second spare" "$(lost_acked 5)" 0
	echo "    $(jq -r "select(.kind == \"spare_sync_failed\") | .reason" "$CL_CLOG"); $n5 attached and synced; $acked writes, none lost" >&2
}

# switchover_refused NODE PATTERN: `flatline failover --to NODE` is refused, saying
# PATTERN (in SW_OUT); one accepted fails the test.
switchover_refused() {
	if SW_OUT=$(cl_ctl timeout 15 "$FL" failover "$CL_SHARD" --to "$1" -c "$CL_CONF" 2>&1); then
		fail "a switchover to $1 was accepted: $SW_OUT"
	fi
	grep -q "$2" <<<"$SW_OUT"
}

# HA (test_spares_ha.sh): only the leader attaches. The leader SIGKILLed between
# spare_attached and replica_synced (a primary whose RDB takes seconds to write:
# rdb-key-save-delay): the new leader resumes the sync, says it synced and, only
# promotable_after_ms later, promotable; until then a switchover to the spare is
# refused. The attach is said once, by the old leader, and kept once in etcd; every
# acknowledged write is on the primary and on the spare.
test_ha_leader_killed_mid_attach() {
	local lead nl n4 i acked k s p
	[ -n "${FL_HA:-}" ] || skip "HA only (test_spares_ha.sh)"
	cluster "restore_after_ms = 0
promotable_after_ms = 3000
spares = s${BASHPID}n4" 4
	n4=$(cl_node 4)
	lead=$(cl_ha_leader) || fail "no leader"
	fill 1 30000 100
	CL_CLI_TIMEOUT=20 cl_redis 1 wait 2 15000 >/dev/null
	cl_redis 1 config set rdb-key-save-delay 400 >/dev/null || fail "rdb-key-save-delay" # ~12 s
	cl_writer_start --rate 200 || fail "writer"
	sleep 0.5
	host_kill 3
	cl_until 20 ctl_ev ".kind == \"spare_attached\" and .instance == \"$n4\"" ||
		fail "c$lead did not attach: $(tail -n 5 "$CL_CLOG")"
	kill -KILL "$(cl_pid "controller-c$lead")"
	k=$(cl_now_ns)
	! ctl_ev '.kind == "replica_synced"' || fail "synced before the leader was killed: widen the sync"
	for i in 1 2 3; do
		[ "$i" = "$lead" ] && continue
		! cl_has_event "$(cl_ha_log "$i")" '.kind == "spare_attached" or .kind == "spare_refused"' ||
			fail "follower c$i attached: $(jq -c 'select(.kind | test("spare"))' "$(cl_ha_log "$i")")"
	done
	cl_until 15 leader_not "$lead" || fail "no new leader"
	nl=$(cl_ha_leader)
	CL_CLOG=$(cl_ha_log "$nl")
	# Syncing under the new leader: no candidate.
	cl_until 10 syncing 4 ||
		fail "the spare is not syncing any more: widen the sync"
	cl_until 10 switchover_refused "$n4" "just attached\|full sync" || fail "switchover: $SW_OUT"
	wait_ctl ".kind == \"replica_synced\" and .instance == \"$n4\"" 40
	wait_ctl ".kind == \"replica_promotable\" and .instance == \"$n4\"" 15
	s=$(ev_ns ".kind == \"replica_synced\" and .instance == \"$n4\"")
	p=$(ev_ns ".kind == \"replica_promotable\" and .instance == \"$n4\"")
	[ $(((p - s) / 1000000)) -ge 2900 ] || fail "promotable $(((p - s) / 1000000)) ms after synced (promotable_after_ms 3000)"
	wait_ctl '.kind == "redundancy_restored" and .replicas == 2' 15
	for i in 1 2 3; do # attached once, by c$lead; resumed, not attached again
		[ "$i" = "$lead" ] || ! cl_has_event "$(cl_ha_log "$i")" '.kind == "spare_attached"' ||
			fail "c$i attached too: $(jq -c 'select(.kind == "spare_attached")' "$(cl_ha_log "$i")")"
	done
	expect_eq "attach lines for $n4 in etcd" \
		"$(cl_etcdctl get --print-value-only "/flatline/$CL_NAME/members" | grep -c "^member attach node $n4 ")" 1
	cl_etcdctl get --print-value-only "/flatline/$CL_NAME/members" | grep -q "^member attach node $n4 shard $CL_SHARD\b" ||
		fail "etcd's members: $(cl_etcdctl get --print-value-only "/flatline/$CL_NAME/members")"
	[ "$(cl_ha_status "$nl" | jq -r --arg n "$n4" '[.shards[].nodes[] | select(.id == $n)] | length')" = 1 ] ||
		fail "$n4 in more than one shard: $(cl_ha_status "$nl")"
	cl_until 5 cl_linked 4 1 || fail "the spare does not follow the primary"
	cl_redis 1 config set rdb-key-save-delay 0 >/dev/null
	cl_writer_stop
	acked=$(awk -v t="$T0" '$1 == "A" && $3 > t' "$CL_DIR/writer.out" | wc -l)
	[ "$acked" -gt 100 ] || fail "only $acked writes acknowledged after the kill"
	CL_CLI_TIMEOUT=5 cl_redis 1 wait 2 3000 >/dev/null
	expect_eq "acknowledged writes lost on the primary" "$(lost_acked 1)" 0
	expect_eq "acknowledged writes missing on the spare" "$(lost_acked 4)" 0
	echo "    c$lead killed $(((k - $(ev_ns ".kind == \"spare_attached\"" "$(cl_ha_log "$lead")")) / 1000000)) ms after spare_attached; c$nl resumed, synced, promotable $(((p - s) / 1000000)) ms later; $acked writes, none lost" >&2
}

# HA: the leader killed once the spare synced, in its promotable_after_ms wait. Every
# controller counts that wait from what it sees (its own failovers depend on it), so
# the new leader says the spare promotable about promotable_after_ms after the sync,
# not that long after it took over; until then a switchover to it is refused.
test_ha_leader_killed_steady() {
	local lead nl n4 acked s p el
	[ -n "${FL_HA:-}" ] || skip "HA only (test_spares_ha.sh)"
	cluster "restore_after_ms = 0
promotable_after_ms = 8000
spares = s${BASHPID}n4" 4
	n4=$(cl_node 4)
	lead=$(cl_ha_leader) || fail "no leader"
	cl_writer_start --rate 200 || fail "writer"
	sleep 0.5
	host_kill 3
	wait_ctl ".kind == \"replica_synced\" and .instance == \"$n4\"" 30
	kill -KILL "$(cl_pid "controller-c$lead")"
	s=$(ev_ns ".kind == \"replica_synced\" and .instance == \"$n4\"")
	! ctl_ev '.kind == "replica_promotable"' || fail "promotable before the leader was killed"
	cl_until 15 leader_not "$lead" || fail "no new leader"
	nl=$(cl_ha_leader)
	CL_CLOG=$(cl_ha_log "$nl")
	wait_ctl '.kind == "leader_elected"' 5
	el=$(ts_ns "$(jq -r 'select(.kind == "leader_elected") | .ts' "$CL_CLOG" | tail -n 1)")
	cl_until 10 switchover_refused "$n4" "just attached" || fail "switchover: $SW_OUT"
	wait_ctl ".kind == \"replica_promotable\" and .instance == \"$n4\"" 20
	p=$(ev_ns ".kind == \"replica_promotable\" and .instance == \"$n4\"")
	# (c$nl counts from the agents' REPORTs, c$lead said synced from its INFO poll, 250 ms
	# apart at most; not carried over, it would be 8000 ms or more after c$nl led.)
	[ $(((p - s) / 1000000)) -ge 7700 ] || fail "promotable $(((p - s) / 1000000)) ms after synced (promotable_after_ms 8000)"
	[ $(((p - el) / 1000000)) -lt 7800 ] ||
		fail "promotable $(((p - el) / 1000000)) ms after c$nl led, $(((p - s) / 1000000)) ms after synced: the wait was not carried over"
	[ -z "$(ev '.kind == "promoted"')" ] || fail "a promotion: $(ev '.kind == "promoted"')"
	cl_writer_stop
	acked=$(awk -v t="$T0" '$1 == "A" && $3 > t' "$CL_DIR/writer.out" | wc -l)
	[ "$acked" -gt 100 ] || fail "only $acked writes acknowledged after the kill"
	CL_CLI_TIMEOUT=5 cl_redis 1 wait 2 3000 >/dev/null
	expect_eq "acknowledged writes lost on the primary" "$(lost_acked 1)" 0
	expect_eq "acknowledged writes missing on the spare" "$(lost_acked 4)" 0
	echo "    c$nl led $(((el - s) / 1000000)) ms after the sync; promotable $(((p - s) / 1000000)) ms after it (promotable_after_ms 8000); $acked writes, none lost" >&2
}

if [ -n "${SPARES_TESTS:-}" ]; then
	read -r -a TESTS <<<"$SPARES_TESTS"
else
	TESTS=(test_host_kill_spare test_nonempty_refused test_old_primary_back
		test_no_promotion_of_syncing test_second_host_kill
		test_unconfirmed_withdrawal_blocks test_provision test_two_losses
		test_sync_fails_next test_sync_fails_disk_full)
fi
run_tests
