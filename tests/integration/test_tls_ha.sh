#!/usr/bin/env bash
# TLS in HA mode: a real etcd on loopback, three
# controllers ([controller "cN"] tls_listen only, no plain socket, the certificate
# files shared in [controller]), two real redis-servers on their tls-port only, an
# agent per server reporting to every controller over TLS (each controller's
# certificate verified against the address it is dialled at). kill -9 of the primary
# failed over; the leader controller killed, a follower leads and fails the next
# primary over; redis-py's Sentinel over TLS, given all three controllers, finds the
# master after the leader dies; followers' SENTINEL SENTINELS and NOTLEADER name the
# TLS addresses. The agents run in the root namespace: lease_ms = 0.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/tls.sh
. tests/lib/tls.sh
PY=/usr/bin/python3

# etcd_start: one etcd member on loopback (client $EP, peer $PP), healthy.
etcd_start() {
	EP=$(free_port) PP=$(free_port)
	etcd --name e1 --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$EP" \
		--advertise-client-urls "http://127.0.0.1:$EP" --listen-peer-urls "http://127.0.0.1:$PP" \
		--initial-advertise-peer-urls "http://127.0.0.1:$PP" --initial-cluster "e1=http://127.0.0.1:$PP" \
		--initial-cluster-state new --heartbeat-interval 50 --election-timeout 500 \
		>"$T/etcd.log" 2>&1 &
	local pid=$!
	on_exit "kill -KILL $pid; wait $pid"
	until_s "$FL_WAIT_S" env ETCDCTL_API=3 etcdctl --endpoints "http://127.0.0.1:$EP" \
		--command-timeout=1s endpoint health >/dev/null 2>&1 ||
		{ tail -n 5 "$T/etcd.log" >&2; fail "etcd did not come up"; }
}

# conf FILE: three TLS-only controllers on loopback, TLS to the servers.
conf() {
	cat >"$1" <<-EOF
	[cluster]
	name = tha$$
	secret = s3cret-s3cret-s3cret
	[agent]
	ping_interval_ms = 50
	hung_after = 4
	heartbeat_ms = 100
	lease_ms = 0
	tls_cert = $C/agent.crt
	tls_key = $C/agent.key
	[controller]
	tls_cert = $C/ctl.crt
	tls_key = $C/ctl.key
	tls_ca = $C/ca.crt
	node_down_after_ms = 1000
	failover_block_ms = 1000
	[etcd]
	endpoints = http://127.0.0.1:$EP
	lease_ms = 1000
	timeout_ms = 300
	[controller "c1"]
	tls_listen = 127.0.0.1:${CP[1]}
	[controller "c2"]
	tls_listen = 127.0.0.1:${CP[2]}
	[controller "c3"]
	tls_listen = 127.0.0.1:${CP[3]}
	[redis]
	tls = yes
	tls_ca = $C/ca.crt
	tls_cert = $C/client.crt
	tls_key = $C/client.key
	[node "t1-$$"]
	address = 127.0.0.21
	redis = 127.0.0.1:$P1
	[node "t2-$$"]
	address = 127.0.0.22
	redis = 127.0.0.1:$P2
	[shard "s"]
	nodes = t1-$$ t2-$$
	EOF
	chmod 600 "$1"
}

clog() { echo "$T/controller-c$1.jsonl"; }

# ctl_start I: controller cI, its pid in CPID[I].
ctl_start() {
	"$FL" controller --allow-root -c "$CONF" --id "c$1" --event-log "$(clog "$1")" \
		>>"$T/controller-c$1.err" 2>&1 &
	CPID[$1]=$!
	on_exit "kill -TERM ${CPID[$1]}; wait ${CPID[$1]}"
}

# ha_role I: cI's role (leader, follower) from FLATLINE STATUS over TLS.
ha_role() {
	rcli_t 2 "${CP[$1]}" --raw flatline status json 2>/dev/null | jq -r '.controller.ha.role' 2>/dev/null
}

# leader [EXCEPT]: the index of the controller that leads (not EXCEPT), with its
# INFO round done (controller_ready in its log); 1 if none.
leader() {
	local i
	for i in 1 2 3; do
		if [ "$i" = "${1:-}" ] || ! kill -0 "${CPID[$i]}" 2>/dev/null; then continue; fi
		if [ "$(ha_role "$i")" = leader ] && [ "$(count_events "$(clog "$i")" '.kind == "controller_ready"')" -gt 0 ]; then
			echo "$i"
			return 0
		fi
	done
	return 1
}

# agent NAME: an agent for node NAME-$$.
agent() {
	"$FL" agent -c "$CONF" --node "$1-$$" --event-log "$T/events-$1.jsonl" 2>"$T/agent-$1.err" &
	on_exit "kill -TERM $!; wait $!"
}

# setup: certificates, etcd, t1 primary and t2 replica on their TLS ports, three
# controllers on TLS only, an agent per server connected to each of them; LEAD.
setup() {
	need_tls
	need_cmd etcd etcdctl
	certs
	P1=$(free_port) P2=$(free_port)
	CP=("" "$(free_port)" "$(free_port)" "$(free_port)")
	CPID=("" "" "" "")
	etcd_start
	CONF=$T/cluster.conf
	conf "$CONF"
	tls_redis "$P1"; PID_1=$REDIS_PID
	tls_redis "$P2" --replicaof 127.0.0.1 "$P1"; PID_2=$REDIS_PID
	until_s "$FL_WAIT_S" link_up "$P2" || fail "t2 never replicated from t1 over TLS"
	local i n
	for i in 1 2 3; do ctl_start "$i"; done
	agent t1
	agent t2
	until_s "$FL_WAIT_S" eval 'LEAD=$(leader)' ||
		{ tail -n 5 "$T"/controller-c*.err >&2; fail "no controller leads"; }
	# Every controller has both agents, over TLS.
	for i in 1 2 3; do
		for n in t1 t2; do
			wait_event "$(clog "$i")" ".kind == \"agent_connected\" and .instance == \"$n-$$\"" >/dev/null ||
				{ tail -n 5 "$T/agent-$n.err" "$T/controller-c$i.err" >&2; fail "agent $n did not connect to c$i over TLS"; }
		done
	done
	# TLS only: no plain socket on the controllers' ports.
	! timeout 2 redis-cli -h 127.0.0.1 -p "${CP[1]}" ping 2>/dev/null | grep -q PONG ||
		fail "c1's TLS port answered plain text"
}

# wait_failover I N WHAT: cI logs more than N failover_end events within 15 s.
wait_failover() {
	local end=$((SECONDS + 15))
	until [ "$(count_events "$(clog "$1")" '.kind == "failover_end"')" -gt "$2" ]; do
		[ $SECONDS -le $end ] || { tail -n 20 "$(clog "$1")" >&2; fail "$3: not failed over by c$1"; }
		sleep 0.05
	done
}

# The CLI against the HA TLS cluster (status; a switchover through the followers'
# NOTLEADER), then kill -9 of the primary failed over by the leader over TLS.
test_tls_ha_failover() {
	setup
	local st n
	st=$(timeout 10 "$FL" status -c "$CONF" --json) || fail "flatline status over TLS (HA) failed: $st"
	grep -q "t1-$$" <<<"$st" || fail "flatline status over TLS (HA): no node t1: $st"
	timeout 30 "$FL" failover s --to "t2-$$" -c "$CONF" >"$T/failover.out" 2>&1 ||
		fail "flatline failover over TLS (HA) failed: $(tail -n 5 "$T/failover.out")"
	[ "$(role "$P2")" = master ] || fail "t2 not promoted by the switchover"
	until_s "$FL_WAIT_S" link_up "$P1" || fail "t1 does not replicate from t2 over TLS"
	n=$(count_events "$(clog "$LEAD")" '.kind == "failover_end"')
	kill -KILL "$PID_2"
	wait_failover "$LEAD" "$n" "kill -9 of the primary"
	[ "$(role "$P1")" = master ] || fail "t1 not promoted"
	[ "$(rcli "$P1" set k v)" = OK ] || fail "the new primary is not writable over TLS"
	! grep -q "TLS handshake failed" "$T/agent-t1.err" "$T/agent-t2.err" ||
		fail "an agent's handshake failed: $(grep -h "TLS handshake failed" "$T"/agent-*.err | head -n 3)"
}

# The leader controller SIGKILLed: a follower leads (the agents were already
# reporting to it over TLS) and fails a later kill -9 of the primary over.
test_tls_ha_leader_killed() {
	setup
	local old=$LEAD nl n
	kill -KILL "${CPID[$old]}"
	until_s 30 eval 'nl=$(leader "$old")' || fail "no follower took over from c$old"
	echo "    c$nl leads after c$old was killed" >&2
	n=$(count_events "$(clog "$nl")" '.kind == "failover_end"')
	kill -KILL "$PID_1"
	wait_failover "$nl" "$n" "kill -9 of the primary after the leader died"
	[ "$(role "$P2")" = master ] || fail "t2 not promoted by the new leader"
	[ "$(rcli "$P2" set k v)" = OK ] || fail "the new primary is not writable over TLS"
}

# redis-py's Sentinel over TLS given all three controllers: the master before and
# after the leader dies, and after the primary then dies. A follower's SENTINEL
# SENTINELS lists the other controllers at their TLS ports; its NOTLEADER names
# the leader's TLS address.
test_tls_ha_sentinel_client() {
	setup
	"$PY" -c 'import redis.sentinel' 2>/dev/null || skip "no python3-redis"
	local f=1 out others
	[ "$f" != "$LEAD" ] || f=2
	others=$(rcli "${CP[$f]}" --raw sentinel sentinels s | awk 'prev == "port" { print } { prev = $0 }' | sort | tr '\n' ' ')
	local want i
	want=$(for i in 1 2 3; do [ "$i" = "$f" ] || echo "${CP[$i]}"; done | sort | tr '\n' ' ')
	[ "$others" = "$want" ] || fail "c$f's SENTINEL SENTINELS over TLS: ports '$others', want the TLS ports '$want'"
	out=$(rcli "${CP[$f]}" -a s3cret-s3cret-s3cret --no-auth-warning sentinel failover s 2>&1)
	grep -q "NOTLEADER .*the leader is c$LEAD at 127.0.0.1:${CP[$LEAD]}" <<<"$out" ||
		fail "c$f's NOTLEADER does not name the leader's TLS address: $out"
	discover() {
		"$PY" - "$C" "${CP[1]}" "${CP[2]}" "${CP[3]}" <<-'EOF' 2>&1
		import sys, time
		from redis.sentinel import Sentinel
		c, ports = sys.argv[1], [int(p) for p in sys.argv[2:]]
		tls = dict(ssl=True, ssl_ca_certs=c + "/ca.crt", ssl_certfile=c + "/client.crt",
		           ssl_keyfile=c + "/client.key", ssl_cert_reqs="required")
		s = Sentinel([("127.0.0.1", p) for p in ports], sentinel_kwargs=dict(tls, socket_timeout=1),
		             socket_timeout=2, **tls)
		print("master", "%s:%d" % s.discover_master("s"))
		m = s.master_for("s", socket_timeout=2)
		m.set("py", "ok")
		print("get", m.get("py").decode())
		EOF
	}
	out=$(discover) || fail "redis-py over TLS (HA): $out"
	grep -q "^master 127.0.0.1:$P1$" <<<"$out" || fail "redis-py: wrong master: $out"
	kill -KILL "${CPID[$LEAD]}"
	out=$(discover) || fail "redis-py over TLS after the leader died: $out"
	grep -q "^master 127.0.0.1:$P1$" <<<"$out" || fail "redis-py after the leader died: wrong master: $out"
	grep -q "^get ok$" <<<"$out" || fail "redis-py after the leader died: no write: $out"
	local nl
	until_s 30 eval 'nl=$(leader "$LEAD")' || { tail -n 4 "$T"/controller-c*.err >&2; fail "no follower took over from c$LEAD"; }
	kill -KILL "$PID_1"
	until_s 15 eval '[ "$(role "$P2")" = master ]' || fail "t2 not promoted after the leader and the primary died"
	out=$(discover) || fail "redis-py over TLS after the failover: $out"
	grep -q "^master 127.0.0.1:$P2$" <<<"$out" || fail "redis-py after the failover: wrong master: $out"
	grep -q "^get ok$" <<<"$out" || fail "redis-py after the failover: no write: $out"
	echo "    redis-py after the leader (c$LEAD) and the primary died: $(tr '\n' ' ' <<<"$out")" >&2
}

TESTS=(test_tls_ha_failover test_tls_ha_leader_killed test_tls_ha_sentinel_client)
run_tests
