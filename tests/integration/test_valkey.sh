#!/usr/bin/env bash
# What flatline relies on from the server, against the real valkey-server 8.0 (built from
# the vendored tarball by scripts/build-valkey.sh; tests/lib/flavour.sh finds it), where
# Valkey could differ from Redis 7.0:
#   - INFO: server_name:valkey, valkey_version beside redis_version:7.2.4, the
#     replication fields (role:slave, master_*, offsets), process_id;
#   - the -BUSY text ("Valkey is busy running a script"): alive, never hung;
#   - ACLs: every command flatline sends, run as a [redis] user allowed only those
#     (FL_ACL below), and a wrong password reported once;
#   - the promotion transaction (MULTI, REPLICAOF NO ONE, CONFIG REWRITE, CLIENT KILL TYPE
#     normal/pubsub, EXEC), REPLICAOF HOST PORT for the other replicas and for the old
#     primary back, and the log's "PRIMARY MODE enabled" (Redis: "MASTER");
#   - CLIENT PAUSE WRITE / CLIENT UNPAUSE of a planned switchover (`flatline failover`),
#     with no acknowledged write lost;
#   - the server's own FAILOVER command run by an operator, and what flatline then does.
# The failure suite against Valkey is test_cluster_valkey.sh.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/flavour.sh
. tests/lib/flavour.sh
PY=/usr/bin/python3

# The least a [redis] user needs for everything flatline sends (docs/servers.md).
FL_ACL=(resetchannels -@all +ping +info +auth +hello "+client|setname" "+client|pause"
	"+client|unpause" "+client|kill" +replicaof "+config|rewrite" +multi +exec)
ACL_USER=flatline ACL_PASS=fl-pw

need_valkey() {
	need_root
	need_cmd jq "$PY"
	fl_flavour_set valkey || skip "$FL_FLAVOUR_WHY"
	VCLI=$FL_CLI
}

# vstart PORT [ARGS]: valkey-server with the ACL user; PID in REDIS_PID.
vstart() {
	local port=$1
	shift
	start_redis "$port" --pidfile "$T/redis-$port.pid" --user "$ACL_USER" on ">$ACL_PASS" \
		"${FL_ACL[@]}" "$@"
}
vcli() { local p=$1; shift; timeout 5 "$VCLI" -p "$p" "$@"; }
info_field() { vcli "$1" info "${3:-replication}" 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }


# cluster_file OUT CTL_PORT NODE=PORT[=PRIORITY]...: one shard, the ACL user.
cluster_file() {
	local out=$1 ctl=$2 n id port prio ids=""
	shift 2
	{
		printf '[cluster]\nname = t\nsecret = s3cret-s3cret-s3cret\n'
		# lease_ms = 0: these agents run in the machine's own namespace (the lease's
		# pins outlive them); the write lease is tested in namespaces by test_lease.sh.
		printf '[agent]\nping_interval_ms = 50\nhung_after = 4\nheartbeat_ms = 100\nlease_ms = 0\n'
		printf '[controller]\nlisten = 127.0.0.1:%s\nnode_down_after_ms = 1000\n' "$ctl"
		printf 'state_file = %s\nevent_log = %s\nfailover_block_ms = %s\n' \
			"$T/state" "$T/controller.jsonl" "${BLOCK_MS:-1000}"
		printf '[redis]\nuser = %s\npassword = %s\n' "$ACL_USER" "${PASSWORD:-$ACL_PASS}"
		for n in "$@"; do
			IFS='=' read -r id port prio <<<"$n"
			printf '[node "%s"]\naddress = 127.0.0.1\nredis = 127.0.0.1:%s\n' "$id" "$port"
			[ -z "$prio" ] || printf 'priority = %s\n' "$prio"
			ids="$ids $id"
		done
		printf '[shard "s"]\nnodes =%s\n' "$ids"
	} >"$out"
	chmod 600 "$out" # it holds the secrets
}


# ---------------------------------------------------------------------------

test_info_parsed_from_valkey() {
	need_valkey
	local p1 p2 ctl replid r pid
	p1=$(free_port); vstart "$p1"
	p2=$(free_port); vstart "$p2" --replicaof 127.0.0.1 "$p1"
	wait_linked "$p2" "$p1" || fail "replica did not sync"
	# What the agent parses is Valkey's, not Redis's (the test would pass on either otherwise).
	expect_eq server_name "$(info_field "$p1" server_name server)" valkey
	expect_eq valkey_version "$(info_field "$p1" valkey_version server)" 8.0.1
	expect_eq "redis_version Valkey claims" "$(info_field "$p1" redis_version server)" 7.2.4
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "vi1=$p1" "vi2=$p2"
	start_agent vi1 -c "$T/c.conf"
	start_agent vi2 -c "$T/c.conf"
	LOG2=$LOG
	vcli "$p1" set k v >/dev/null
	replid=$(info_field "$p1" master_replid)
	[ -n "$replid" ] || fail "no master_replid from the primary"
	# valkey_version wins over redis_version:7.2.4; role, replid and offset as on Redis.
	r=$(wait_report ".args.role == \"master\" and .args.server == \"valkey\" and .args.master_replid == \"$replid\" and (.args.repl_offset | tonumber) > 0") ||
		fail "no report of the Valkey primary: $(tail -n 1 "$REC")"
	expect_eq "primary's version" "$(jq -r .args.version <<<"$r")" 8.0.1
	expect_eq "primary's replicas" "$(jq -r .args.connected_slaves <<<"$r")" 1
	expect_eq "primary's run_id" "$(jq -r .args.run_id <<<"$r")" "$(info_field "$p1" run_id server)"
	r=$(wait_report ".args.role == \"slave\" and .args.server == \"valkey\" and .args.master_port == \"$p1\" and .args.master_link_status == \"up\" and (.args.repl_offset | tonumber) > 0") ||
		fail "no report of the Valkey replica: $(tail -n 1 "$REC")"
	expect_eq "replica's pid (INFO process_id)" "$(jq -r .args.pid <<<"$r")" "$(info_field "$p2" process_id server)"
	expect_eq "replica's proc" "$(jq -r .args.proc <<<"$r")" up
	# The kernel names the process valkey-server; the agent follows it by pid.
	pid=$(jq -r .args.pid <<<"$r")
	kill -KILL "$pid"
	ev=$(wait_event "$LOG2" ".kind == \"proc_exit\" and .pid == $pid") || fail "no proc_exit for $pid"
	expect_eq comm "$(jq -r .comm <<<"$ev")" valkey-server
	expect_eq signal "$(jq -r .signal <<<"$ev")" SIGKILL
	wait_report '.args.proc == "down" and .args.exit == "SIGKILL"' >/dev/null || fail "no down report"
}

test_busy_script_alive() {
	need_valkey
	local p1 ctl reply
	p1=$(free_port); vstart "$p1" --busy-reply-threshold 100
	ctl=$(free_port); start_recpeer "$ctl"
	cluster_file "$T/c.conf" "$ctl" "vb1=$p1"
	start_agent vb1 -c "$T/c.conf"
	wait_report '.args.proc == "up"' >/dev/null || fail "no proc up report"
	vcli "$p1" eval 'while true do end' 0 >/dev/null 2>&1 &
	on_exit "kill $!"
	sleep 0.5
	reply=$(vcli "$p1" ping 2>&1)
	[[ $reply == "BUSY Valkey is busy running a script."* ]] || fail "not Valkey's -BUSY: '$reply'"
	sleep 1.5
	vcli "$p1" script kill >/dev/null || fail "SCRIPT KILL"
	wait_event "$LOG" '.kind == "proc_busy"' >/dev/null || fail "no proc_busy during the script"
	wait_report '.args.proc == "busy"' >/dev/null || fail "no report with proc busy"
	wait_event "$LOG" '.kind == "proc_up" and .was == "busy"' >/dev/null || fail "no proc_up after the script"
	expect_eq "proc_hung during a 2 s script" "$(count_events "$LOG" '.kind == "proc_hung"')" 0
}

test_wrong_password_reported_once() {
	need_valkey
	local p1 ctl n
	# The default user needs a password too: otherwise a failed AUTH leaves the link
	# logged in as "default", which answers everything, and nothing is wrong to report.
	p1=$(free_port); vstart "$p1" --requirepass not-ours
	ctl=$(free_port); start_recpeer "$ctl"
	PASSWORD=wrong cluster_file "$T/c.conf" "$ctl" "vw1=$p1"
	start_agent vw1 -c "$T/c.conf"
	r=$(wait_report '.args.auth_error != null') || fail "no auth_error in the report"
	[[ $(jq -r .args.auth_error <<<"$r") =~ ^(WRONGPASS|NOAUTH) ]] || fail "auth_error: $r"
	sleep 1.5
	n=$(grep -c "failed to authenticate" "$T/agent-vw1.err")
	expect_eq "authentication errors logged in 1.5 s" "$n" 1
	wait_report '.args.proc == "up"' >/dev/null || fail "a server refusing our password is still alive"
}

# A controller, three servers with the ACL user (vc3 never promoted, so vc2 is the one),
# three agents. Sets P1 P2 P3 CTL CONF CLOG PID_1.
setup_cluster() {
	local n
	P1=$(free_port) P2=$(free_port) P3=$(free_port) CTL=$(free_port)
	while [ "$(printf '%s\n' "$P1" "$P2" "$P3" "$CTL" | sort -u | wc -l)" != 4 ]; do
		P2=$(free_port) P3=$(free_port) CTL=$(free_port)
	done
	CONF=$T/c.conf CLOG=$T/controller.jsonl
	cluster_file "$CONF" "$CTL" "vc1=$P1" "vc2=$P2" "vc3=$P3=0"
	vstart "$P1"
	PID_1=$REDIS_PID
	vstart "$P2" --replicaof 127.0.0.1 "$P1"
	vstart "$P3" --replicaof 127.0.0.1 "$P1"
	wait_linked "$P2" "$P1" || fail "vc2 did not sync"
	wait_linked "$P3" "$P1" || fail "vc3 did not sync"
	"$FL" controller --allow-root -c "$CONF" -v >>"$T/controller.err" 2>&1 &
	on_exit "kill -TERM $!; wait $!"
	wait_event "$CLOG" '.kind == "controller_ready"' >/dev/null ||
		fail "controller did not start: $(cat "$T/controller.err")"
	for n in vc1 vc2 vc3; do
		"$FL" agent -c "$CONF" --node "$n" --event-log "$T/events-$n.jsonl" 2>"$T/agent-$n.err" &
		on_exit "kill -TERM $!; wait $!"
	done
	wait_nodes_healthy "$CONF" 3
}
primary() { vcli "$CTL" sentinel get-master-addr-by-name s | tail -n 1; }
has_event() { [ -n "$(jq -c "select($1)" "$CLOG" 2>/dev/null)" ]; }
victims() { vcli "$1" client list | grep -c 'name=victim-'; }
# victim PORT normal|pubsub: a client of the server named victim-KIND, idle or subscribed,
# that exits when the server closes its connection.
victim() {
	$PY - "$@" >"$T/victim-$2.out" 2>&1 <<-'EOF' &
		import sys, time, redis
		r = redis.Redis(port=int(sys.argv[1]), client_name="victim-" + sys.argv[2])
		if sys.argv[2] == "pubsub":
		    p = r.pubsub()
		    p.subscribe("news")
		    while True:
		        p.get_message(timeout=1.0)
		r.ping()
		time.sleep(120)
	EOF
	on_exit "kill $!"
}

test_acl_failover_promote_repoint_demote() {
	need_valkey
	setup_cluster
	local ev
	seq 1 100 | sed 's/.*/RPUSH w &/' | vcli "$P1" >/dev/null
	# Clients of vc2 that the promotion must disconnect (CLIENT KILL TYPE normal, pubsub).
	victim "$P2" normal
	victim "$P2" pubsub
	local end=$((SECONDS + FL_WAIT_S))
	until [ "$(victims "$P2")" = 2 ]; do
		[ $SECONDS -le $end ] ||
			fail "no victim clients: $(cat "$T"/victim-*.out; vcli "$P2" client list 2>&1)"
		sleep 0.05
	done
	kill -KILL "$PID_1"
	ev=$(wait_event "$CLOG" '.kind == "failover_end"') || fail "no failover: $(tail -n 5 "$CLOG")"
	has_event '.kind == "promoted" and .instance == "vc2"' || fail "vc2 not promoted: $(jq -c . "$CLOG" | tail -n 8)"
	# The whole transaction ran as the ACL user: no fallback to a plain REPLICAOF NO ONE.
	! grep -q "promotion transaction refused" "$T/controller.err" ||
		fail "MULTI refused: $(grep "transaction refused" "$T/controller.err")"
	expect_eq "vc2's role" "$(info_field "$P2" role)" master
	grep -q "PRIMARY MODE enabled" "$T/redis-$P2.log" || fail "no 'PRIMARY MODE enabled' in vc2's log"
	expect_eq "Sentinel API" "$(primary)" "$P2"
	expect_eq "victim clients left on vc2" "$(victims "$P2")" 0
	# CONFIG REWRITE without a config file: Valkey's error is recognised as that.
	ev=$(jq -c 'select(.kind == "config_rewrite_failed")' "$CLOG" | head -n 1)
	[ -n "$ev" ] || fail "no config_rewrite_failed (the servers run without a config file)"
	expect_eq "no_config_file" "$(jq -r .no_config_file <<<"$ev")" true
	wait_linked "$P3" "$P2" || fail "vc3 does not follow vc2 (REPLICAOF as the ACL user)"
	expect_eq "list on vc2" "$(vcli "$P2" llen w)" 100
	# The old primary back, empty, as a master: demoted with REPLICAOF HOST PORT.
	vstart "$P1"
	wait_event "$CLOG" '.kind == "old_primary_demoted" and .instance == "vc1"' >/dev/null ||
		fail "vc1 not demoted: $(jq -c . "$CLOG" | tail -n 5)"
	wait_linked "$P1" "$P2" || fail "vc1 does not follow vc2"
	local end2=$((SECONDS + FL_WAIT_S))
	until [ "$(vcli "$P1" llen w)" = 100 ]; do
		[ $SECONDS -le $end2 ] || fail "vc1 has $(vcli "$P1" llen w) values, want 100"
		sleep 0.05
	done
	! grep -q NOPERM "$T/controller.err" "$T"/agent-vc*.err || fail "NOPERM: $(grep -h NOPERM "$T/controller.err" "$T"/agent-vc*.err | head -n 3)"
}

# acked_reach N: the writer's record ($T/acked) has N lines, within FL_WAIT_S.
acked_reach() {
	local end=$((SECONDS + FL_WAIT_S))
	until [ "$(wc -l <"$T/acked" 2>/dev/null || echo 0)" -ge "$1" ]; do
		[ $SECONDS -le $end ] || return 1
		sleep 0.05
	done
}

test_planned_switchover_client_pause() {
	need_valkey
	BLOCK_MS=30000 setup_cluster
	local wpid lost got
	$PY tests/lib/flwriter.py --sentinel "$CTL" --service s --key w --rate 1000 \
		--out "$T/acked" >"$T/writer.out" 2>"$T/writer.err" &
	wpid=$!
	on_exit "kill $wpid"
	# 600 writes acknowledged before the switchover and 600 after it, however fast
	# the writer goes on a loaded machine (two fixed seconds gave 1789 here, ~690/s,
	# against the floor of 1000 below).
	acked_reach 600 || fail "writer before the switchover: $(wc -l <"$T/acked") acknowledged in $FL_WAIT_S s: $(tail -n 3 "$T/writer.err")"
	"$FL" failover s --to vc2 -c "$CONF" >"$T/failover.out" 2>&1 || fail "failover: $(cat "$T/failover.out")"
	grep -q "writes paused on vc1" "$T/failover.out" || fail "no pause: $(cat "$T/failover.out")"
	expect_eq primary "$(primary)" "$P2"
	wait_linked "$P1" "$P2" || fail "old primary does not follow vc2"
	wait_linked "$P3" "$P2" || fail "vc3 does not follow vc2"
	acked_reach $(($(wc -l <"$T/acked") + 600)) ||
		fail "writer after the switchover: $(wc -l <"$T/acked") acknowledged in all: $(tail -n 3 "$T/writer.err")"
	kill -TERM "$wpid"
	wait "$wpid"
	[ "$(jq .acked "$T/writer.out")" -gt 1000 ] || fail "writer: $(cat "$T/writer.out" "$T/writer.err")"
	vcli "$P2" wait 2 2000 >/dev/null
	got=$T/got
	vcli "$P2" lrange w 0 -1 | sort -n >"$got"
	lost=$(sort -n "$T/acked" | comm -23 - "$got" | wc -l)
	expect_eq "acknowledged writes lost ($(wc -l <"$T/acked") acked)" "$lost" 0
	vcli "$P2" rpush w x >/dev/null || fail "vc2 refuses a write"
	echo "    $(jq -c . "$T/writer.out")" >&2
}

TESTS=(test_info_parsed_from_valkey test_busy_script_alive test_wrong_password_reported_once
	test_acl_failover_promote_repoint_demote test_planned_switchover_client_pause)
run_tests
