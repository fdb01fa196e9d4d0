#!/usr/bin/env bash
# `flatline import` (docs/sentinel.md, "Migrating from Sentinel: import") against three
# real redis-sentinel watching three real redis-server, one of each per host namespace
# (tests/lib/cluster.sh cl_up_servers, tests/lib/sentinels.sh start_sentinels):
#
# test_import_from_sentinels: the sentinel.conf files the running Sentinels rewrote
#   (known-replica, known-sentinel, epochs, myid) and one live Sentinel (SENTINEL
#   MASTERS/REPLICAS/SENTINELS) each give a cluster file that `flatline check` accepts,
#   mode 0600, the same shard and nodes (ids, addresses, servers), the Sentinels'
#   down-after-milliseconds as node_down_after_ms, each its own fresh secret; an existing
#   -o FILE is never replaced. Then what must fail, fails, with a clear message, in
#   bounded time: a corrupt sentinel.conf (file:line), a --sentinel with nothing on its
#   port, at an address nobody has, on a plain redis-server, one answering garbage and
#   one that accepts and never answers.
# test_import_full: Sentinels with announce-ip/announce-port, auth-user/auth-pass (an ACL
#   user on servers with requirepass), failover-timeout, parallel-syncs, replicas that
#   announce another address with replica-priority 10 and 0: the import of their files
#   and one live Sentinel passes `flatline check` and has [redis] user and password,
#   failover_block_ms, the priorities, the announced addresses of replicas and
#   Sentinels, parallel-syncs listed with its reason.
# test_import_decisions (no servers): a master with its own auth-user/auth-pass gets
#   them as its [shard] user and password (`flatline check` says which a node uses);
#   per-master timings: the common values and the SENTINEL SET lines for the others; a
#   master without a password beside ones with it and a renamed command: exit 1 and
#   nothing written without --force, with it the file passes `flatline check`; two views of one master (files in either order): the newer
#   config-epoch names the primary, the older view's primary is a replica.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/sentinels.sh
. tests/lib/sentinels.sh

# conf_rewritten FILE: Sentinel wrote back what it discovered.
conf_rewritten() {
	[ "$(grep -c '^sentinel known-replica ' "$1")" = 2 ] &&
		[ "$(grep -c '^sentinel known-sentinel ' "$1")" = 2 ]
}

# topology FILE: the lines that say which servers are which nodes of which shard.
topology() { grep -E '^(\[node |\[shard |address =|redis =|nodes =)' "$1"; }

# timed_import WANT_MS_MAX ARGS...: runs import from the controller's namespace; sets
# RC, ERR (its stderr) and MS (how long it took).
timed_import() {
	local max=$1 t0
	shift
	t0=$(date +%s%N)
	RC=0
	cl_ctl timeout 30 "$FL" import "$@" >"$T/out" 2>"$T/err" || RC=$?
	MS=$((($(date +%s%N) - t0) / 1000000))
	ERR=$(cat "$T/err")
	[ "$MS" -le "$max" ] || fail "import $* took $MS ms (bound $max): $ERR"
}

# want_err WHAT PATTERN: the last timed_import exited 1 with PATTERN on stderr.
want_err() {
	[ "$RC" = 1 ] || fail "$1: rc $RC: $ERR"
	grep -q -- "$2" <<<"$ERR" || fail "$1: $ERR"
}

test_import_from_sentinels() {
	local i f files=() a
	need_root
	need_cmd ip nsenter redis-server redis-cli redis-sentinel setsid "$CL_PY"
	export FL_NODE_PREFIX=i${BASHPID}n
	cl_init "$T/cl" "fli$BASHPID"
	on_exit cl_down
	cl_up_servers || fail "servers did not come up"
	start_sentinels 2000 || fail "sentinels did not converge"
	for i in 1 2 3; do
		f=$CL_DIR/sentinel-$i/sentinel.conf
		cl_until 20 conf_rewritten "$f" || fail "sentinel $i did not rewrite its file: $(cat "$f")"
		files+=("$f")
	done
	grep -q '^sentinel myid ' "${files[0]}" || fail "no myid in the rewritten file"

	# From the files the Sentinels rewrote.
	"$FL" import "${files[@]}" -o "$T/files.conf" 2>"$T/err" || fail "import of the files: $(cat "$T/err")"
	# From one live Sentinel.
	timed_import 5000 --sentinel "$(cl_ip 2):26379" -o "$T/live.conf"
	[ "$RC" = 0 ] || fail "import from the live Sentinel: $ERR"
	for f in files live; do
		"$FL" check -q -c "$T/$f.conf" || fail "flatline check refuses the $f import: $(cat "$T/$f.conf")"
		expect_eq "mode of the $f import" "$(stat -c %a "$T/$f.conf")" 600
		expect_eq "$f: node_down_after_ms" "$(sed -n 's/^node_down_after_ms = //p' "$T/$f.conf")" 2000
		expect_eq "$f: shard" "$(sed -n 's/^\[shard "\(.*\)"\]$/\1/p' "$T/$f.conf")" "$CL_SHARD"
		expect_eq "$f: nodes" "$(sed -n 's/^nodes = //p' "$T/$f.conf")" "$CL_SHARD-1 $CL_SHARD-2 $CL_SHARD-3"
		for i in 1 2 3; do
			a=$(sed -n "/^\[node \"$CL_SHARD-$i\"\]/,/^\$/p" "$T/$f.conf")
			grep -qx "address = $(cl_ip "$i")" <<<"$a" || fail "$f: node $CL_SHARD-$i: $a"
			grep -qx "redis = $(cl_ip "$i"):6379" <<<"$a" || fail "$f: node $CL_SHARD-$i: $a"
		done
		grep -q '^; - quorum 2 of '"$CL_SHARD"': flatline' "$T/$f.conf" || fail "$f: quorum not listed"
		for i in 1 2 3; do
			grep -q "$(cl_ip "$i"):26379" <(grep -A3 '^; The Sentinels' "$T/$f.conf") ||
				fail "$f: Sentinel $(cl_ip "$i") not listed: $(grep -A3 '^; The Sentinels' "$T/$f.conf")"
		done
	done
	diff <(topology "$T/files.conf") <(topology "$T/live.conf") >&2 || fail "the two imports differ"
	grep -q '^; - sentinel myid (' "$T/files.conf" || fail "files: myid not listed"
	grep -q 'known-replica lines carry no replica-priority' "$T/files.conf" || fail "files: no priority note"
	expect_eq "live: replicas' priority" "$(grep -c '^priority = 100$' "$T/live.conf")" 2
	[ "$(grep '^secret' "$T/files.conf")" != "$(grep '^secret' "$T/live.conf")" ] || fail "the same secret twice"
	[ "$(sed -n 's/^secret = //p' "$T/live.conf" | wc -c)" -ge 33 ] || fail "secret shorter than 32 characters"

	# Never replaces a file.
	cp "$T/live.conf" "$T/before"
	timed_import 5000 --sentinel "$(cl_ip 2):26379" -o "$T/live.conf"
	[ "$RC" = 1 ] || fail "import over an existing file: rc $RC"
	grep -q 'exists' <<<"$ERR" || fail "no reason: $ERR"
	cmp -s "$T/before" "$T/live.conf" || fail "the existing file changed"

	# A corrupt sentinel.conf: file:line, non-zero, nothing written.
	cp "${files[0]}" "$T/bad.conf"
	echo 'sentinel monitor broken 10.0.0.1 6379' >>"$T/bad.conf"
	i=$(wc -l <"$T/bad.conf")
	RC=0
	"$FL" import "${files[1]}" "$T/bad.conf" -o "$T/none.conf" 2>"$T/err" || RC=$?
	[ "$RC" = 1 ] || fail "corrupt file: rc $RC"
	grep -q "$T/bad.conf:$i: sentinel monitor: wrong number of arguments" "$T/err" || fail "corrupt file: $(cat "$T/err")"
	[ ! -e "$T/none.conf" ] || fail "a file was written"

	# Live Sentinels that are not there or not Sentinels: a clear error, in bounded time.
	timed_import 3000 --timeout 1000 --sentinel "$(cl_ip 1):26999"
	want_err "nothing on the port" "failed to import from $(cl_ip 1):26999: failed to connect"
	timed_import 5000 --timeout 1000 --sentinel "$CL_NET.77:26379"
	want_err "nobody at the address" "failed to import from $CL_NET.77:26379: failed to connect"
	timed_import 3000 --timeout 1000 --sentinel "$(cl_ip 1):6379"
	want_err "a redis-server" "SENTINEL MASTERS: error .*(is it a Sentinel?)"
	# One answers garbage to anything, one accepts and never answers.
	cl_spawn fake "$CL_NS_CTL" "$CL_PY" -c '
import socket, sys, threading
def serve(port, reply):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], port)); s.listen(8)
    while True:
        c, _ = s.accept(); c.recv(4096)
        if reply: c.sendall(reply)
        threading.Thread(target=lambda c=c: c.recv(4096), daemon=True).start()
threading.Thread(target=serve, args=(26901, b"HTTP/1.0 400 Bad Request\r\n\r\n"), daemon=True).start()
serve(26902, None)' "$CL_CTL_IP"
	cl_until 5 cl_ctl "$CL_PY" -c "import socket,sys; socket.create_connection((sys.argv[1], 26902), 1)" "$CL_CTL_IP" ||
		fail "the fake servers did not start"
	timed_import 3000 --timeout 1000 --sentinel "$CL_CTL_IP:26901"
	want_err "garbage" "failed to import from $CL_CTL_IP:26901: SENTINEL MASTERS: "
	timed_import 3000 --timeout 1000 --sentinel "$CL_CTL_IP:26902"
	want_err "silent" "failed to import from $CL_CTL_IP:26902: SENTINEL MASTERS: no answer in time"
	echo "    imports: files and live agree on $(topology "$T/live.conf" | grep -c '^\[node') nodes; a silent Sentinel: error after $MS ms (--timeout 1000)" >&2
}

# A fuller sentinel.conf: what start_sentinels writes, and each Sentinel announcing
# another address and port (HOST's second address, port 26479 redirected to 26379),
# the servers' ACL user and password, failover-timeout, parallel-syncs.
full_conf() {
	cat <<-EOF
		bind $(cl_ip "$1") $CL_NET.10$1
		sentinel announce-ip $CL_NET.10$1
		sentinel announce-port 26479
		sentinel auth-user $CL_SHARD flsent
		sentinel auth-pass $CL_SHARD $PW
		sentinel failover-timeout $CL_SHARD 60000
		sentinel parallel-syncs $CL_SHARD 2
	EOF
}

# replicas_seen IDX: sentinel IDX lists both replicas at their announced addresses,
# with the priorities they were given.
replicas_seen() {
	local r
	r=$(timeout 1 nsenter --net="/run/netns/$CL_NS_CTL" "$CL_CLI" -h "$(cl_ip "$1")" -p 26379 \
		sentinel replicas "$CL_SHARD" 2>/dev/null | tr '\n' ' ')
	[[ $r == *"name $CL_NET.102:6379 "* && $r == *"name $CL_NET.103:6379 "* ]] &&
		[ "$(grep -o 'slave-priority [0-9]*' <<<"$r" | sort | tr '\n' ' ')" = "slave-priority 0 slave-priority 10 " ]
}

# node_of_redis FILE HOST:PORT: the [node] section whose redis is HOST:PORT.
node_of_redis() { awk -v RS= -v r="redis = $2" 'index("\n" $0 "\n", "\n" r "\n")' "$1"; }

# linked_authed IDX: cl_linked IDX 1 on servers that want the password.
linked_authed() { REDISCLI_AUTH=$PW cl_linked "$1" 1; }

test_import_full() {
	local i f files=() a
	need_root
	need_cmd ip nsenter nft redis-server redis-cli redis-sentinel setsid "$CL_PY"
	export FL_NODE_PREFIX=f${BASHPID}n
	PW=imp-pw-$BASHPID
	cl_init "$T/cl" "flf$BASHPID"
	on_exit cl_down
	cl_up_servers || fail "servers did not come up"
	for i in 1 2 3; do
		# A second address per host: the replicas announce it, the Sentinels too (at
		# port 26479, redirected to their 26379).
		ip -n "$(cl_ns "$i")" addr add "$CL_NET.10$i/24" dev eth0 || fail "address"
		cl_in "$i" nft -f - <<-EOF || fail "nft"
			table ip flredir {
				chain pre { type nat hook prerouting priority -100; tcp dport 26479 redirect to :26379; }
			}
		EOF
		cl_redis "$i" config set bind "$(cl_ip "$i") $CL_NET.10$i 127.0.0.1" >/dev/null || fail "bind"
	done
	# Replicas announcing their second address, priorities 10 and 0 (never promoted),
	# an ACL user for the Sentinels and a password for the default user.
	for i in 2 3; do
		cl_redis "$i" config set replica-announce-ip "$CL_NET.10$i" >/dev/null || fail "announce"
		cl_redis "$i" config set masterauth "$PW" >/dev/null || fail "masterauth"
	done
	cl_redis 2 config set replica-priority 10 >/dev/null || fail "priority"
	cl_redis 3 config set replica-priority 0 >/dev/null || fail "priority"
	for i in 1 2 3; do
		cl_redis "$i" acl setuser flsent on ">$PW" '~*' '&*' +@all >/dev/null || fail "acl"
		cl_redis "$i" config set requirepass "$PW" >/dev/null || fail "requirepass"
	done
	REDISCLI_AUTH=$PW cl_redis 1 client kill type replica >/dev/null || fail "client kill"
	for i in 2 3; do
		cl_until 10 linked_authed "$i" || fail "replica $i did not come back"
	done
	SENTINEL_CONF_FN=full_conf
	start_sentinels 2000 || fail "sentinels did not converge: $(tail -n 5 "$CL_DIR/sentinel-1/sentinel.log")"
	for i in 1 2 3; do
		cl_until 20 replicas_seen "$i" || fail "sentinel $i: $(cl_ctl "$CL_CLI" -h "$(cl_ip "$i")" -p 26379 sentinel replicas "$CL_SHARD" | tr '\n' ' ')"
		f=$CL_DIR/sentinel-$i/sentinel.conf
		cl_until 20 conf_rewritten "$f" || fail "sentinel $i did not rewrite its file: $(cat "$f")"
		files+=("$f")
	done

	# The files the Sentinels rewrote (credentials, timings) and one live Sentinel
	# (priorities), together.
	timed_import 5000 "${files[@]}" --sentinel "$(cl_ip 2):26379" -o "$T/full.conf"
	[ "$RC" = 0 ] || fail "import: $ERR"
	"$FL" check -q -c "$T/full.conf" || fail "flatline check refuses it: $(cat "$T/full.conf")"
	expect_eq "[redis]" "$(sed -n '/^\[redis\]/,/^$/{/^;/d;p}' "$T/full.conf" | tr '\n' '|')" \
		"[redis]|user = flsent|password = $PW||"
	expect_eq "failover_block_ms" "$(sed -n 's/^failover_block_ms = //p' "$T/full.conf")" 60000
	grep -q '^; failover-timeout 60000 (' "$T/full.conf" || fail "failover-timeout not said"
	grep -q "^; - parallel-syncs 2 of $CL_SHARD: no cluster-file key; the controller repoints every" "$T/full.conf" ||
		fail "parallel-syncs not listed: $(grep -A2 parallel "$T/full.conf")"
	a=$(node_of_redis "$T/full.conf" "$(cl_ip 1):6379")
	grep -qx "address = $(cl_ip 1)" <<<"$a" || fail "the primary: $a"
	for i in 2 3; do
		a=$(node_of_redis "$T/full.conf" "$CL_NET.10$i:6379")
		grep -qx "address = $CL_NET.10$i" <<<"$a" || fail "replica $i not at its announced address: $(cat "$T/full.conf")"
		grep -qx "priority = $([ "$i" = 2 ] && echo 10 || echo 0)" <<<"$a" || fail "replica $i's priority: $a"
	done
	grep -A4 '^; The Sentinels' "$T/full.conf" | tr '\n' ' ' >"$T/sentinels"
	for i in 1 2 3; do
		grep -q "$CL_NET.10$i:26479" "$T/sentinels" || fail "Sentinel $i's announced address not listed: $(cat "$T/sentinels")"
	done
	"$FL" check -c "$T/full.conf" >"$T/check" || fail "check"
	grep -q '^  shard .*, priority 0 (never promoted)$' "$T/check" || fail "check: no never-promoted replica: $(cat "$T/check")"
	expect_eq "nodes authenticating as flsent" "$(grep -c '^  authenticates to its server as flsent with \[redis\] password$' "$T/check")" 3
	# The credentials work: the user and password in the file open every server.
	for i in 1 2 3; do
		expect_eq "AUTH flsent on host $i" "$(cl_redis "$i" --user flsent --pass "$PW" --no-auth-warning ping)" PONG
	done
	echo "    full import: [redis] user flsent, failover_block_ms 60000, priorities 10 and 0, announced $CL_NET.102/103, Sentinels at :26479" >&2
}

test_import_decisions() {
	cat >"$T/a.conf" <<-'EOF'
		port 26379
		sentinel monitor alpha 10.1.0.1 6379 2
		sentinel monitor beta 10.1.1.1 6379 2
		sentinel monitor gamma 10.1.2.1 6379 2
		sentinel auth-pass alpha "pw one"
		sentinel auth-pass beta "pw one"
		sentinel auth-pass gamma other
		sentinel auth-user gamma guser
		sentinel down-after-milliseconds alpha 3000
		sentinel down-after-milliseconds beta 3000
		sentinel failover-timeout gamma 20000
		sentinel parallel-syncs beta 2
		sentinel known-replica alpha 10.1.0.2 6379
		sentinel known-slave beta 10.1.1.2 6379
	EOF
	# Other credentials of one master: its [shard] user and password, no decision.
	"$FL" import "$T/a.conf" -o "$T/a.out" 2>"$T/err" || fail "per-master credentials: $(cat "$T/err")"
	"$FL" check -q -c "$T/a.out" || fail "check refuses it: $(cat "$T/a.out")"
	grep -q 'NEEDS A DECISION' "$T/a.out" && fail "a decision: $(grep -A2 'NEEDS A DECISION' "$T/a.out")"
	expect_eq "[redis]" "$(sed -n '/^\[redis\]/,/^$/{/^;/d;p}' "$T/a.out" | tr '\n' '|')" "[redis]|password = pw one||"
	expect_eq "gamma's [shard]" "$(sed -n '/^\[shard "gamma"\]/,/^$/{/^;/d;/^nodes/d;p}' "$T/a.out" | tr '\n' '|')" \
		'[shard "gamma"]|user = guser|password = other||'
	grep -q '^\(user\|password\) = ' <(sed -n '/^\[shard "alpha"\]/,/^$/p;/^\[shard "beta"\]/,/^$/p' "$T/a.out") &&
		fail "alpha or beta has credentials of its own"
	"$FL" check -c "$T/a.out" >"$T/check" || fail "check"
	grep -q "^agent on node gamma-1 " -A8 "$T/check" || fail "check: no gamma-1: $(cat "$T/check")"
	grep -A8 "^agent on node gamma-1 " "$T/check" | grep -qx "  authenticates to its server as guser with shard gamma's password" ||
		fail "check: gamma-1's credentials: $(grep -A8 '^agent on node gamma-1 ' "$T/check")"
	grep -A8 "^agent on node alpha-1 " "$T/check" | grep -qx "  authenticates to its server as the default user with \[redis\] password" ||
		fail "check: alpha-1's credentials: $(grep -A8 '^agent on node alpha-1 ' "$T/check")"
	grep -qx 'node_down_after_ms = 3000' "$T/a.out" || fail "down-after not mapped"
	grep -q 'SENTINEL SET gamma down-after-milliseconds 30000' "$T/a.out" || fail "gamma's down-after not listed"
	grep -q 'SENTINEL SET gamma failover-timeout 20000' "$T/a.out" || fail "gamma's failover-timeout not listed"
	grep -q 'parallel-syncs 2 of beta' "$T/a.out" || fail "parallel-syncs not listed"
	expect_eq "shards" "$(grep -c '^\[shard ' "$T/a.out")" 3
	expect_eq "beta's nodes" "$(sed -n '/^\[shard "beta"\]/,/^$/s/^nodes = //p' "$T/a.out")" "beta-1 beta-2"
	# A master without a password where [redis] has one cannot say so in its [shard]:
	# exit 1 and nothing written without --force; with it, named in the file.
	printf 'sentinel monitor delta 10.1.3.1 6379 2\n' >>"$T/a.conf"
	RC=0
	"$FL" import "$T/a.conf" -o "$T/b.out" 2>"$T/err" || RC=$?
	[ "$RC" = 1 ] || fail "a master without a password: rc $RC"
	grep -q 'needs a decision' "$T/err" || fail "no clear message: $(cat "$T/err")"
	grep -q 'delta' "$T/err" || fail "delta not named: $(cat "$T/err")"
	[ ! -e "$T/b.out" ] || fail "written without --force"
	"$FL" import --force "$T/a.conf" -o "$T/b.out" 2>"$T/err" || fail "--force: $(cat "$T/err")"
	"$FL" check -q -c "$T/b.out" || fail "check refuses it: $(cat "$T/b.out")"
	grep -qx 'password = pw one' "$T/b.out" || fail "the common password is not there"
	grep -A3 'NEEDS A DECISION' "$T/b.out" | tr '\n' ' ' | grep -q 'delta' || fail "delta not named: $(cat "$T/b.out")"
	# Two views of one master: the newer config-epoch names the primary, whatever the
	# order of the files; the older view's primary is a replica.
	printf 'sentinel monitor m 10.3.0.1 6379 2\nsentinel config-epoch m 1\nsentinel known-replica m 10.3.0.2 6379\nsentinel known-replica m 10.3.0.3 6379\n' >"$T/old.conf"
	printf 'sentinel monitor m 10.3.0.2 6379 2\nsentinel config-epoch m 2\nsentinel known-replica m 10.3.0.3 6379\n' >"$T/new.conf"
	"$FL" import "$T/old.conf" "$T/new.conf" >"$T/m1" 2>"$T/err" || fail "two views: $(cat "$T/err")"
	"$FL" import "$T/new.conf" "$T/old.conf" >"$T/m2" 2>"$T/err" || fail "two views: $(cat "$T/err")"
	diff <(topology "$T/m1") <(topology "$T/m2") >&2 || fail "the order of the files matters"
	expect_eq "primary of the newer view" "$(sed -n '/^\[node "m-1"\]/,/^$/s/^redis = //p' "$T/m1")" 10.3.0.2:6379
	expect_eq "servers" "$(grep '^redis = ' "$T/m1" | tr '\n' ' ')" "redis = 10.3.0.2:6379 redis = 10.3.0.1:6379 redis = 10.3.0.3:6379 "
	# A host name (resolve-hostnames yes): resolved for the probes, kept for the server.
	printf 'sentinel resolve-hostnames yes\nsentinel monitor m localhost 6379 1\n' >"$T/h.conf"
	"$FL" import "$T/h.conf" >"$T/h.out" 2>"$T/err" || fail "host name: $(cat "$T/err")"
	grep -qxE 'address = (127\.0\.0\.1|::1)' "$T/h.out" || fail "host name: $(grep '^address' "$T/h.out")"
	grep -qx 'redis = localhost:6379' "$T/h.out" || fail "host name: $(grep '^redis' "$T/h.out")"
	printf 'sentinel monitor m localhost 6379 1\n' >"$T/h.conf"
	RC=0
	"$FL" import "$T/h.conf" >/dev/null 2>"$T/err" || RC=$?
	[ "$RC" = 1 ] || fail "host name without resolve-hostnames: rc $RC"
	grep -q "$T/h.conf:1: sentinel monitor: 'localhost' is not an IP address" "$T/err" || fail "no reason: $(cat "$T/err")"
	# A renamed command needs a decision too.
	printf 'sentinel monitor m 10.2.0.1 6379 1\nsentinel rename-command m CONFIG XC\n' >"$T/r.conf"
	RC=0
	"$FL" import "$T/r.conf" >/dev/null 2>"$T/err" || RC=$?
	[ "$RC" = 1 ] || fail "rename-command: rc $RC"
	grep -q 'rename-command' "$T/err" || fail "rename-command: $(cat "$T/err")"
}

TESTS=(test_import_from_sentinels test_import_full test_import_decisions)
run_tests
