#!/usr/bin/env bash
# From Sentinel to flatline and back without a client error (docs/sentinel.md,
# "Cutover"). A whole cluster (tests/lib/cluster.sh) in shadow mode beside three real
# redis-sentinel (tests/lib/sentinels.sh), and four applications on libraries nobody
# here wrote, with their defaults (tests/node/app.js on ioredis, tests/lib/clientapp.py
# on redis-py: a writer and a reader of the replicas each), given the Sentinels'
# addresses and the controller's after them, as the runbook says.
#   test_cutover:      `flatline cutover` says not safe while an agent is missing, or
#                      against a Sentinel that names another primary, and safe when
#                      all is well (also against the Sentinels); the Sentinels
#                      stop, the clients go on through the controller; a reload of
#                      [controller] mode = active switches it: no failover (the primary
#                      and the epoch unchanged, no server ran REPLICAOF, MULTI or
#                      CONFIG — INFO commandstats), the agents open and take their write
#                      lease at once, closing no connection; a kill -9 of the primary is
#                      failed over by flatline; the way back (FLATLINE MODE shadow: the
#                      leases given up; the Sentinels started again on the current
#                      primary) leaves flatline and Sentinel naming the same primary. The
#                      writers lost no acknowledged write; no error reached any
#                      application but at most one lost connection per redis-py
#                      application and ioredis reader in the kill -9's window. Then
#                      Sentinel fails over again (SENTINEL FAILOVER) with flatline
#                      following and the ioredis and redis-py writers running, held to
#                      Sentinel's own bound (sentinel_bound: lost only writes the old
#                      primary took after the failover began, errors only lost
#                      connections or READONLY until they write to the new primary).
#   test_shadow_flag:  `flatline controller --shadow` with mode = active in the file:
#                      the agents hear it in the answers to their reports and hold no
#                      lease (disarmed in the kernel: a stopped agent leaves the server
#                      answering); FLATLINE MODE active refused (NOTSAFE) while an
#                      agent is silent; then the leases held at once (a
#                      stopped agent's server stops answering); FLATLINE MODE shadow:
#                      given up again.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/sentinels.sh
. tests/lib/sentinels.sh

PY=/usr/bin/python3
NODE_DIR=$PWD/tests/node
RATE=200
APPS=(ioredis redispy ioredis_r redispy_r)
# The commands that reconfigure a server, as INFO commandstats names them.
CHANGES='^cmdstat_(replicaof|slaveof|multi|exec|config\|[a-z]*|failover|client\|(kill|pause|unpause)):'

cluster() { # EXTRA-CONTROLLER-LINES
	need_root
	need_cmd ip nsenter nft named tsig-keygen dig jq setsid bpftool
	export FL_NODE_PREFIX=u${BASHPID}n
	export FL_CTL_CONF=$1
	CL_KEEP=1
	cl_init "$T/cl" "flu$BASHPID"
	[ -z "$CL_FLAVOUR_WHY" ] || skip "$CL_FLAVOUR_WHY"
	on_exit cl_down
	cl_up || fail "cluster did not come up"
}

ctl_ev() { cl_has_event "$CL_CLOG" "$1"; }
wait_ctl() { cl_until "${2:-10}" ctl_ev "$1" || fail "no controller event ($1) within ${2:-10} s: $(tail -n 5 "$CL_CLOG")"; }
agent_ev() { cl_has_event "$CL_DIR/events-$(cl_node "$1").jsonl" "$2"; }
lease_of() { cl_status_json | jq -r ".shards[0].nodes[] | select(.id == \"$(cl_node "$1")\") | .lease"; }
leases() { cl_status_json | jq -r '[.shards[0].nodes[] | .lease] | join(" ")'; }
no_lease() { [ "$(leases)" = "- - -" ]; }
all_held() { [ "$(leases)" = "held held held" ]; }
lease_held() { [ "$(lease_of "$1")" = held ]; }
# The pinned lease map's port (0: disarmed, every reply flows).
lease_port() {
	bpftool map dump pinned "/sys/fs/bpf/flatline/$(cl_node "$1")/lease/fl_lease" -j 2>/dev/null |
		jq '.[0].formatted.value.port'
}
admin() { cl_ctl "$CL_CLI" --no-auth-warning -a "$CL_SECRET" -h "$CL_CTL_IP" -p "$CL_CTL_PORT" "$@"; }
cutover() { cl_ctl "$FL" cutover -c "$CL_CONF" "$@"; }
safe() { cutover "$@" >/dev/null 2>&1; }
# names_agent IDX: cutover says not safe (exit 1), naming that node's agent.
names_agent() {
	local rc=0
	cutover --sentinel "$(cl_ip 1):26379" >"$T/cutover1.out" 2>&1 || rc=$?
	[ "$rc" = 1 ] && grep -q "^not safe: $CL_SHARD $(cl_node "$1"): its agent" "$T/cutover1.out"
}
epoch() { cl_status_json | jq -r .shards[0].epoch; }
# A write answered within 1 s by the server of IDX (a lapsed lease drops the reply).
answers() { CL_CLI_TIMEOUT=1 cl_redis "$1" set cutover-probe x 2>/dev/null | grep -q OK; }
changes() { # the reconfiguring commands each server ran so far
	local i
	for i in 1 2 3; do
		echo "$(cl_node "$i"): $(cl_redis "$i" info commandstats | tr -d '\r' | grep -E "$CHANGES" | cut -d, -f1 | tr '\n' ' ')"
	done
}

count_lines() { awk -v k="$1" '$1 == k { n++ } END { print n + 0 }' "$2" 2>/dev/null || echo 0; }
acked_over() { [ "$(count_lines A "$CL_DIR/$1.out")" -gt "$2" ]; }
# going APP: 100 more commands answered from now.
going() {
	local n
	n=$(count_lines A "$CL_DIR/$1.out")
	cl_until 15 acked_over "$1" $((n + 100)) || fail "$1 stopped: $(tail -n 3 "$CL_DIR/$1.out" "$CL_DIR/log/$1.out")"
}
all_going() { local a; for a in "${APPS[@]}"; do going "$a"; done; }
last_addr() { grep '^A ' "$CL_DIR/$1.out" | tail -n 1 | awk '{ print $4 }'; }
moved_from() { local m; m=$(cl_masters); [ "$(grep -c . <<<"$m")" = 1 ] && [ "$m" != "$1" ]; } # IDX
writes_at() { [ "$(last_addr "$1")" = "$2" ]; } # APP HOST:PORT
ts_ms() { # FILE JQ-FILTER: the first matching event's time, ms since the epoch
	jq -r "select($2) | .ts" "$1" | head -n 1 | python3 -c \
		'import sys, datetime; s = sys.stdin.read().strip(); print(int(datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp() * 1000))'
}
ev_ns() { date -d "$(jq -r "select(.kind == \"$1\") | .ts" "$CL_CLOG" | tail -n 1)" +%s%N; }

start_apps() { # SENTINELS
	local s=$1 a
	cl_spawn ioredis "$CL_NS_CTL" node "$NODE_DIR/app.js" "$s" "$CL_SHARD" wio "$RATE" "$CL_DIR/ioredis.out"
	cl_spawn redispy "$CL_NS_CTL" "$PY" "$PWD/tests/lib/clientapp.py" "$s" "$CL_SHARD" wpy "$RATE" "$CL_DIR/redispy.out"
	cl_spawn ioredis_r "$CL_NS_CTL" node "$NODE_DIR/app.js" "$s" "$CL_SHARD" wio "$RATE" "$CL_DIR/ioredis_r.out" replica
	cl_spawn redispy_r "$CL_NS_CTL" "$PY" "$PWD/tests/lib/clientapp.py" "$s" "$CL_SHARD" wpy "$RATE" "$CL_DIR/redispy_r.out" replica
	for a in "${APPS[@]}"; do
		cl_until 15 acked_over "$a" 100 || fail "$a did nothing: $(tail -n 3 "$CL_DIR/log/$a.out" "$CL_DIR/$a.out")"
	done
}

# errors_ok: no error reached any application, but (not the ioredis writer, which
# resends) one lost connection at most per application issued in the kill -9's window
# (T_KILL_NS to flatline's failover_end + 50 ms).
errors_ok() {
	local a errs bad
	for a in "${APPS[@]}"; do
		errs=$(count_lines E "$CL_DIR/$a.out")
		echo "    $a: $(count_lines A "$CL_DIR/$a.out") commands answered, $errs errors" >&2
		[ "$a" != ioredis ] || [ "$errs" = 0 ] || fail "$errs errors reached the ioredis writer: $(grep '^E ' "$CL_DIR/$a.out" | head -n 3)"
		[ "$errs" -le 1 ] || fail "$errs errors reached $a: $(grep '^E ' "$CL_DIR/$a.out" | head -n 5)"
		bad=$(awk -v from="$T_KILL_NS" -v end="$T_END_NS" '$1 == "E" && ($3 < from || $3 > end + 50000000 ||
			$0 !~ /ConnectionError|Connection closed|Error while reading|Connection reset|max retries/)' "$CL_DIR/$a.out")
		[ -z "$bad" ] || fail "an error reached $a outside the kill -9's window or not a lost connection: $(head -n 3 <<<"$bad")"
	done
}

# lost FILE KEY IDX: every value the writer's FILE says was acknowledged is in KEY on
# IDX's server (FILE read before KEY: a writer still running adds to both).
lost() {
	local acked=$T/acked.$$
	cp "$1" "$acked"
	"$PY" - "$acked" <(CL_CLI_TIMEOUT=5 cl_redis "$3" lrange "$2" 0 -1) <<-'EOF'
		import sys
		acked = {l.split()[1] for l in open(sys.argv[1]) if l.startswith("A ")}
		have = {l.strip() for l in open(sys.argv[2])}
		lost = sorted(acked - have, key=int)
		print(len(acked), len(lost), " ".join(lost[:10]))
	EOF
}

# sentinel_bound FILE KEY IDX FROM_NS OLD NEW: after a Sentinel-led failover (begun at
# FROM_NS) from OLD to NEW (host:port), the writer's FILE and KEY on IDX's server hold
# Sentinel's own bound: a lost acknowledged write only one OLD acknowledged after
# FROM_NS (Sentinel lets the old primary take writes until it reconfigures it); an
# error only after FROM_NS and before the writer's first write acknowledged by NEW
# (+100 ms), and only a lost connection or READONLY (redis-py: "The previous master is
# now a slave", 6 in a measured run, when the old primary became a replica). Prints "acknowledged,
# lost (all by OLD after the failover began), errors, ms from FROM_NS to the first write
# on NEW"; exit 1 with the reason past the bound.
sentinel_bound() {
	"$PY" - "$1" <(CL_CLI_TIMEOUT=5 cl_redis "$3" lrange "$2" 0 -1) "$4" "$5" "$6" <<-'EOF'
		import re, sys
		lines = [l.split(None, 4) for l in open(sys.argv[1])]
		have = {l.strip() for l in open(sys.argv[2])}
		since, old, new = int(sys.argv[3]), sys.argv[4], sys.argv[5]
		acked = [l for l in lines if l[0] == "A"]
		lost = [l for l in acked if l[1] not in have]
		moved = min([int(l[2]) for l in acked if l[3] == new and int(l[2]) >= since] or [0])
		errs = [l for l in lines if l[0] == "E" and int(l[2]) >= since]
		print(len(acked), len(lost), len(errs), (moved - since) // 1000000 if moved else "-")
		bad = [l for l in lost if l[3] != old or int(l[2]) < since]
		if bad:
		    sys.exit("lost writes Sentinel did not lose: %s" % bad[:3])
		if not moved:
		    sys.exit("no write acknowledged by %s" % new)
		pat = re.compile(r"ConnectionError|Connection closed|Error while reading|Connection reset|READONLY|now a slave|max retries")
		bad = [l for l in errs if int(l[2]) > moved + 100000000 or not pat.search(l[4])]
		if bad:
		    sys.exit("errors outside the failover or not a lost connection: %s" % bad[:3])
	EOF
}

test_cutover() {
	local s out new newid new2 e0 before after stats
	need_cmd node "$PY"
	[ -d "$NODE_DIR/node_modules/ioredis" ] || skip "ioredis not installed in $NODE_DIR (scripts/install-deps.sh)"
	"$PY" -c 'import redis.sentinel' 2>/dev/null || skip "no python3-redis"
	cluster "mode = shadow"
	start_sentinels 1000 || fail "the sentinels did not start"
	# The clients know the Sentinels, and the controller after them (runbook step 2).
	s="$(cl_ip 1):26379,$(cl_ip 2):26379,$(cl_ip 3):26379,$CL_CTL_IP:$CL_CTL_PORT"
	start_apps "$s"
	cl_until "$CL_WAIT_S" cl_healthy || fail "not healthy: $(cl_status_json)"
	no_lease || fail "a lease in shadow mode: $(leases)"

	# The check: not safe with an agent missing, safe when all is well.
	cl_stop "agent-$(cl_node 3)"
	cl_until 5 names_agent 3 || fail "cutover does not name the missing agent: $(cat "$T/cutover1.out")"
	cat "$T/cutover1.out"
	cl_agent_start 3
	cl_until "$CL_WAIT_S" cl_healthy || fail "not healthy again: $(cl_status_json)"
	cl_until 5 cutover --sentinel "$(cl_ip 1):26379" --sentinel "$(cl_ip 2):26379" >"$T/cutover2.out" 2>&1 ||
		fail "cutover not safe with everything well: $(cat "$T/cutover2.out")"
	cat "$T/cutover2.out"
	grep -q "^safe: " "$T/cutover2.out" || fail "cutover did not say safe"
	grep -q "^mode: shadow" "$T/cutover2.out" || fail "cutover did not say the mode"
	# A Sentinel that names another primary (it monitors h2's server as the shard's):
	# not safe, saying which and what each names. Run for a moment only, and never
	# long enough to judge anything (down-after 60 s).
	mkdir -p "$CL_DIR/sentinel-x"
	printf 'port 26390\nbind %s\ndaemonize no\ndir %s\nlogfile %s/sentinel.log\nsentinel monitor %s %s 6379 1\nsentinel down-after-milliseconds %s 60000\n' \
		"$CL_CTL_IP" "$CL_DIR/sentinel-x" "$CL_DIR/sentinel-x" "$CL_SHARD" "$(cl_ip 2)" "$CL_SHARD" >"$CL_DIR/sentinel-x/sentinel.conf"
	cl_spawn sentinel-x "$CL_NS_CTL" "$CL_SENTINEL" "$CL_DIR/sentinel-x/sentinel.conf"
	rc=0
	cl_until 10 cl_ctl "$CL_CLI" -h "$CL_CTL_IP" -p 26390 ping >/dev/null 2>&1 || fail "the other Sentinel did not start"
	cutover --sentinel "$CL_CTL_IP:26390" >"$T/cutover-x.out" 2>&1 || rc=$?
	cl_stop sentinel-x
	expect_eq "cutover's exit with a Sentinel naming h2" "$rc" 1
	grep -qF "not safe: $CL_SHARD: Sentinel $CL_CTL_IP:26390 names the primary $(cl_ip 2):6379, flatline $(cl_ip 1):6379" "$T/cutover-x.out" ||
		fail "cutover does not say that Sentinel names another primary: $(cat "$T/cutover-x.out")"
	all_going

	# Sentinel stops; the clients go on through the controller.
	for i in 1 2 3; do cl_stop "sentinel-$i"; done
	all_going
	cutover >"$T/cutover3.out" 2>&1 || fail "cutover not safe after Sentinel stopped: $(cat "$T/cutover3.out")"

	# The switch: a reload of mode = active. No failover, nothing sent, leases taken.
	e0=$(epoch)
	before=$(changes)
	sed -i 's/^mode = shadow$/mode = active/' "$CL_CONF"
	kill -HUP "$(cl_pid controller)"
	wait_ctl '.kind == "mode_changed" and .mode == "active" and .by == "reload"' 5
	ctl_ev '.kind == "config_reloaded" and (.applied | test("mode"))' || fail "the reload did not apply mode: $(grep config_reloaded "$CL_CLOG")"
	cl_until 3 lease_held 1 || fail "the primary's agent did not take its lease: $(leases)"
	cl_until 3 all_held ||
		fail "not every agent holds its lease: $(leases)"
	agent_ev 1 '.kind == "mode_changed" and .mode == "active" and .by == "controller"' || fail "the agent did not log the mode"
	echo "$(cl_node 1): heard active +$(($(ts_ms "$CL_DIR/events-$(cl_node 1).jsonl" '.kind == "mode_changed"') - $(ts_ms "$CL_CLOG" '.kind == "mode_changed"'))) ms after the reload, lease held +$(($(ts_ms "$CL_DIR/events-$(cl_node 1).jsonl" '.kind == "lease_regained"') - $(ts_ms "$CL_CLOG" '.kind == "mode_changed"'))) ms (its program loaded then: it started in shadow mode)"
	agent_ev 1 '.kind == "lease_regained" and .connections_closed == 0' || fail "the agent closed connections taking its lease"
	[ "$(lease_port 1)" = 6379 ] || fail "the lease is not armed: port $(lease_port 1)"
	all_going
	sleep 1
	after=$(changes)
	[ "$before" = "$after" ] || fail "a server was reconfigured at the switch: before: $before; after: $after"
	! ctl_ev '.kind == "failover_start" or .kind == "promoted" or .kind == "replicas_repointed" or .kind == "old_primary_demoted"' ||
		fail "the switch failed over: $(grep -E 'failover_start|promoted' "$CL_CLOG")"
	[ "$(cl_masters)" = 1 ] || fail "the primary changed at the switch: $(cl_masters)"
	[ "$(epoch)" = "$e0" ] || fail "the epoch changed at the switch: $e0 -> $(epoch)"
	cutover >"$T/cutover4.out" 2>&1 || fail "cutover not safe once active: $(cat "$T/cutover4.out")"
	grep -q "^mode: active" "$T/cutover4.out" || fail "cutover does not say active"

	# Active: a kill -9 of the primary is failed over by flatline.
	T_KILL_NS=$(cl_now_ns)
	kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
	wait_ctl '.kind == "failover_end"' 10
	T_END_NS=$(ev_ns failover_end)
	new=$(cl_masters)
	[ "$(grep -c . <<<"$new")" = 1 ] && [ "$new" != 1 ] || fail "primaries now: $(tr '\n' ' ' <<<"$new")"
	newid=$(cl_node "$new")
	echo "flatline failed over to $newid in $(((T_END_NS - T_KILL_NS) / 1000000)) ms"
	all_going
	for a in ioredis redispy; do
		[ "$(last_addr "$a")" = "$(cl_ip "$new"):6379" ] || fail "$a writes to $(last_addr "$a"), not $newid"
	done
	cl_redis_start 1
	cl_until 15 cl_linked 1 "$new" || fail "the old primary did not come back as a replica"
	cl_until "$CL_WAIT_S" cl_healthy || fail "not healthy after the failover: $(cl_status_json)"

	# The way back: shadow (the leases given up), then Sentinel on the current primary.
	admin flatline mode shadow | grep -q OK || fail "FLATLINE MODE shadow refused"
	wait_ctl '.kind == "mode_changed" and .mode == "shadow" and (.by | startswith("FLATLINE MODE"))' 5
	cl_until 3 no_lease || fail "leases still held in shadow mode: $(leases)"
	[ "$(lease_port "$new")" = 0 ] || fail "the lease of $newid is still armed"
	agent_ev "$new" '.kind == "lease_lost" and .reason == "shadow mode"' || fail "the agent did not log giving up its lease"
	SENTINEL_PRIMARY=$new start_sentinels 1000 || fail "the sentinels did not start again"
	cl_until 5 cutover --sentinel "$(cl_ip 1):26379" --sentinel "$(cl_ip 2):26379" --sentinel "$(cl_ip 3):26379" \
		>"$T/cutover5.out" 2>&1 || fail "flatline and Sentinel disagree after the way back: $(cat "$T/cutover5.out")"
	all_going

	# Every acknowledged write so far is there; no error but in the kill -9's window.
	# The readers stop; the writers go on through Sentinel's failover below.
	for a in ioredis_r redispy_r; do cl_stop "$a"; done
	for w in "ioredis wio" "redispy wpy"; do
		# shellcheck disable=SC2086 # two words
		out=$(lost "$CL_DIR/${w% *}.out" ${w#* } "$new")
		echo "    ${w% *}: $out (acknowledged, lost, the first lost)" >&2
		[ "$(awk '{ print $2 }' <<<"$out")" = 0 ] || fail "${w% *} lost acknowledged writes: $out"
		[ "$(awk '{ print $1 }' <<<"$out")" -gt 1000 ] || fail "${w% *}: too few writes to judge: $out"
	done
	errors_ok

	# Sentinel is in charge again: it fails over with the writers running, flatline
	# (shadow) follows; the writers are held to Sentinel's own bound.
	stats=$(changes)
	T_SF_NS=$(cl_now_ns)
	timeout 2 nsenter --net="/run/netns/$CL_NS_CTL" "$CL_CLI" -h "$(cl_ip 1)" -p 26379 sentinel failover "$CL_SHARD" | grep -q OK ||
		fail "SENTINEL FAILOVER refused"
	wait_ctl '.kind == "primary_followed" and .from == "'"$newid"'"' 30
	# Sentinel makes the old primary a replica some seconds after the promotion.
	cl_until 30 moved_from "$new" || fail "Sentinel did not move the primary: $(cl_masters | tr '\n' ' ')"
	new2=$(cl_masters)
	[ "$(changes)" != "$stats" ] || fail "the capture saw no reconfiguration (Sentinel's)"
	for a in ioredis redispy; do
		cl_until 20 writes_at "$a" "$(cl_ip "$new2"):6379" || fail "$a does not write to $(cl_node "$new2"): $(last_addr "$a")"
		going "$a"
	done
	for a in ioredis redispy; do cl_stop "$a"; done
	for w in "ioredis wio" "redispy wpy"; do
		# shellcheck disable=SC2086 # two words
		out=$(sentinel_bound "$CL_DIR/${w% *}.out" ${w#* } "$new2" "$T_SF_NS" "$(cl_ip "$new"):6379" "$(cl_ip "$new2"):6379") ||
			fail "${w% *} through Sentinel's failover: $out"
		echo "    ${w% *} through SENTINEL FAILOVER: $out (acknowledged, lost by the old primary, errors, ms to the new primary)" >&2
	done
}

test_shadow_flag() {
	local out
	cluster ""
	cl_until 5 lease_held 1 || fail "no lease held in active mode: $(leases)"
	cl_stop controller
	cl_controller_start --shadow || fail "the controller did not start with --shadow"
	ctl_ev '.kind == "controller_start" and .mode == "shadow"' || fail "controller_start does not say shadow"
	cl_until 10 no_lease || fail "the agents hold a lease under --shadow: $(leases)"
	for i in 1 2 3; do
		cl_until 5 agent_ev "$i" '.kind == "mode_changed" and .mode == "shadow" and .by == "controller"' ||
			fail "$(cl_node "$i")'s agent did not hear shadow mode"
	done
	[ "$(lease_port 1)" = 0 ] || fail "the primary's lease is still armed: port $(lease_port 1)"
	# No lease: the primary's agent stopped past lease_ms, its server still answers.
	kill -STOP "$(cl_pid "agent-$(cl_node 1)")"
	sleep 1
	answers 1 || { kill -CONT "$(cl_pid "agent-$(cl_node 1)")"; fail "a stopped agent's server stopped answering in shadow mode"; }
	kill -CONT "$(cl_pid "agent-$(cl_node 1)")"
	# Active: the leases are taken at once, and enforced.
	[ "$(admin flatline mode)" = shadow ] || fail "FLATLINE MODE does not say shadow"
	cl_ctl "$CL_CLI" -h "$CL_CTL_IP" -p "$CL_CTL_PORT" flatline mode active 2>&1 | grep -q NOAUTH ||
		fail "FLATLINE MODE active without AUTH was not refused"
	# Not while it is unsafe (an agent silent past node_down_after_ms), unless forced.
	kill -STOP "$(cl_pid "agent-$(cl_node 3)")"
	sleep 1.5
	out=$(admin flatline mode active 2>&1)
	kill -CONT "$(cl_pid "agent-$(cl_node 3)")"
	grep -q "NOTSAFE not safe: $CL_SHARD $(cl_node 3): its agent" <<<"$out" || fail "FLATLINE MODE active not refused with an agent silent: $out"
	[ "$(admin flatline mode)" = shadow ] || fail "the refused switch switched"
	cl_until 5 safe || fail "cutover not safe once the agent runs again"
	admin flatline mode active | grep -q OK || fail "FLATLINE MODE active refused"
	cl_until 2 lease_held 1 || fail "the primary's agent did not take its lease: $(leases)"
	[ "$(lease_port 1)" = 6379 ] || fail "the lease is not armed"
	! ctl_ev '.kind == "failover_start"' || fail "going active failed over"
	kill -STOP "$(cl_pid "agent-$(cl_node 1)")"
	sleep 1
	if answers 1; then
		kill -CONT "$(cl_pid "agent-$(cl_node 1)")"
		fail "a stopped agent's server still answers in active mode: the lease is not enforced"
	fi
	kill -CONT "$(cl_pid "agent-$(cl_node 1)")"
	cl_until 5 answers 1 || fail "the server did not answer again once its agent ran"
	admin flatline mode shadow | grep -q OK || fail "FLATLINE MODE shadow refused"
	cl_until 3 no_lease || fail "leases held after FLATLINE MODE shadow: $(leases)"
	cl_until 3 answers 1 || fail "the server does not answer in shadow mode"
}

TESTS=(test_shadow_flag test_cutover)
run_tests
