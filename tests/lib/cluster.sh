#!/usr/bin/env bash
# A three-host flatline cluster on one machine, from ONE generated cluster file:
#
#   namespace <name>-ctl   bridge br0 10.77.0.254: flatline controller (Sentinel API on
#                          :26379), BIND9 named (:53, zone ha.test., TSIG key, update
#                          policy), and the clients (writer, redis-cli, dig)
#   namespace <name>-h1..3 eth0 10.77.0.1..3, veth to the bridge: redis-server or
#                          valkey-server (FL_FLAVOUR; h1 the primary, h2 h3
#                          replicas) and one `flatline agent` each,
#                          started with nsenter --net (not `ip netns exec`, which
#                          remounts /sys and would hide bpffs from the agent)
#
# Addresses exist only inside these namespaces; no packet leaves them. Every process
# is recorded in the work directory; `down` stops them all and removes the namespaces,
# the agents' pins and lock files, the memory cgroups and the work directory. `down`
# works after a half-failed `up`, and `up` tears down on failure.
#
# usage: scripts/cluster.sh [-d DIR] [-n NAME] [--keep] up|down|status
#   -d DIR    work directory (env FL_CLUSTER_DIR, default /tmp/flatline-cluster)
#   -n NAME   namespace prefix (env FL_CLUSTER_NAME, default flc); up only, later
#             commands read it from DIR
#   --keep    down: keep DIR (logs) instead of removing it
# env: FL_FLAVOUR (redis or valkey: the server, its CLI and its Sentinel, see
#      tests/lib/flavour.sh; default redis; kept in DIR),
#      FL_NODE_PREFIX (node ids PREFIX1..3, default n), FL_NET (default 10.77.0),
#      FL_FAMILY=6 (an IPv6 cluster on FL_NET6, default the ULA prefix fd00:77::: hosts
#      ::1..3, controller ::fe listening on [::], DNS AAAA records),
#      FL_SPARES=N (N more hosts h4.. with an empty server and an agent each, the
#      shard's [shard] spares: standbys attached when it lacks a replica; default 0),
#      FL_SHARD (cache), FL_ZONE (ha.test), FL_AGENT_CONF / FL_CTL_CONF / FL_DNS_CONF (extra
#      lines for the [agent] / [controller] / [dns] sections), FL_SHARD_CONF (lines after
#      the [shard] section's: its keys, then more sections), FL (the binary).
#
# This file is the library: sourced (`. tests/lib/cluster.sh`), it only defines the cl_*
# functions, for scripts/cluster.sh (the command), the demo, the tests and the benchmarks
# that drive faults into a cluster it started.

CL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib/flavour.sh
. "$CL_ROOT/tests/lib/flavour.sh"
FL=${FL:-$CL_ROOT/build/flatline}
FL_NFQDELAY=${FL_NFQDELAY:-$CL_ROOT/build/tools/nfqdelay}
CL_PY=/usr/bin/python3 # Debian's python3 with python3-redis (not a pyenv on PATH)
CL_WAIT_S=${CL_WAIT_S:-15}

# cl_init [DIR] [NAME]: settings; an existing DIR's cluster.env wins (down/status).
cl_init() {
	CL_DIR=${1:-${FL_CLUSTER_DIR:-/tmp/flatline-cluster}}
	CL_NAME=${2:-${FL_CLUSTER_NAME:-flc}}
	CL_NODE_PREFIX=${FL_NODE_PREFIX:-n}
	CL_NET=${FL_NET:-10.77.0}
	CL_FAMILY=${FL_FAMILY:-4}
	CL_NET6=${FL_NET6:-fd00:77::}
	CL_SHARD=${FL_SHARD:-cache}
	CL_ZONE=${FL_ZONE:-ha.test}
	CL_FLAVOUR=${FL_FLAVOUR:-redis}
	CL_CG_KIND=
	CL_HAVE_ENV=
	CL_HA=${FL_HA:-} # non-empty: three etcd members and three controllers (cluster_ha.sh)
	CL_SPARES=${FL_SPARES:-0} # hosts 4..3+N: the shard's spares
	if [ -f "$CL_DIR/cluster.env" ]; then
		# shellcheck disable=SC1091
		. "$CL_DIR/cluster.env"
		CL_HAVE_ENV=1
	fi
	# The server flavour: CL_SERVER, CL_CLI, CL_SENTINEL (paths); CL_FLAVOUR_WHY when
	# its binaries are missing (cl_up_servers then refuses with it).
	CL_FLAVOUR_WHY=
	if fl_flavour_set "$CL_FLAVOUR"; then
		CL_SERVER=$FL_SERVER CL_CLI=$FL_CLI CL_SENTINEL=$FL_SENTINEL
	else
		CL_FLAVOUR_WHY=$FL_FLAVOUR_WHY CL_SERVER=false CL_CLI=false CL_SENTINEL=false
	fi
	CL_CTL_IP=$(cl_ip fe)
	CL_PLEN=24 CL_RR=A
	[ "$CL_FAMILY" = 6 ] && CL_PLEN=64 CL_RR=AAAA
	CL_CTL_PORT=26379
	CL_DNS_NAME=$CL_SHARD.$CL_ZONE.
	CL_CONF=$CL_DIR/cluster.conf
	CL_CLOG=$CL_DIR/controller.jsonl
	[ -z "$CL_HA" ] || CL_CLOG=$CL_DIR/controller-c1.jsonl
	CL_NS_CTL=$CL_NAME-ctl
	CL_NODES=("${CL_NODE_PREFIX}1" "${CL_NODE_PREFIX}2" "${CL_NODE_PREFIX}3")
}
# cl_hosts: the host indexes, the spares' (4..) after the shard's three.
cl_hosts() { seq 1 $((3 + CL_SPARES)); }
cl_spare_ids() { local i; for ((i = 4; i <= 3 + CL_SPARES; i++)); do cl_node "$i"; done; }

cl_log() { echo "cluster: $*" >&2; }
cl_die() { cl_log "$*"; return 1; }

cl_ns() { echo "$CL_NAME-h$1"; }                     # IDX -> namespace
cl_ip() { # IDX -> address (fe: the controller's)
	if [ "$CL_FAMILY" = 6 ]; then echo "$CL_NET6$1"
	elif [ "$1" = fe ]; then echo "$CL_NET.254"
	else echo "$CL_NET.$1"; fi
}
cl_hp() { if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi; } # HOST PORT -> host:port
cl_node() { echo "${CL_NODE_PREFIX}$1"; }            # IDX -> node id
cl_idx() { echo "${1#"$CL_NODE_PREFIX"}"; }          # node id -> IDX
cl_idx_of_ip() { echo "${1##*[.:]}"; }               # address -> IDX
cl_in() { local i=$1; shift; nsenter --net="/run/netns/$(cl_ns "$i")" "$@"; }
cl_ctl() { nsenter --net="/run/netns/$CL_NS_CTL" "$@"; }
cl_now_ns() { date +%s%N; }

# cl_cg IDX: the node's memory cgroup (v2 when the memory controller is there, else v1).
cl_cg_kind() {
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		echo v2
	elif [ -d /sys/fs/cgroup/memory ]; then
		echo v1
	fi
}
cl_cg() {
	case $CL_CG_KIND in
	v2) echo "/sys/fs/cgroup/$CL_NAME-h$1" ;;
	v1) echo "/sys/fs/cgroup/memory/$CL_NAME-h$1" ;;
	esac
}
# cl_cg_limit IDX BYTES: the node's memory limit (max = none).
cl_cg_limit() {
	local cg
	cg=$(cl_cg "$1")
	[ -n "$cg" ] || return 1
	case $CL_CG_KIND in
	v2) echo "$2" >"$cg/memory.max" ;;
	v1) [ "$2" = max ] && set -- "$1" -1; echo "$2" >"$cg/memory.limit_in_bytes" ;;
	esac
}
cl_cg_usage() {
	case $CL_CG_KIND in
	v2) cat "$(cl_cg "$1")/memory.current" ;;
	v1) cat "$(cl_cg "$1")/memory.usage_in_bytes" ;;
	esac
}

# cl_spawn NAME NETNS CMD...: a daemon in the namespace, in its own session, recorded
# in DIR/pids/NAME.pid, output in DIR/log/NAME.out. Sets CL_PID.
cl_spawn() {
	local name=$1 ns=$2
	shift 2
	setsid nsenter --net="/run/netns/$ns" "$@" </dev/null >>"$CL_DIR/log/$name.out" 2>&1 &
	CL_PID=$!
	disown "$CL_PID" # no "Killed" job notice when a test kills it
	echo "$CL_PID" >"$CL_DIR/pids/$name.pid"
}

cl_pid() { cat "$CL_DIR/pids/$1.pid" 2>/dev/null; }
# cl_running PID: exists and is not a zombie (a daemon's parent may be gone or busy).
cl_running() { [ -n "$1" ] && [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2>/dev/null; }
cl_alive() { cl_running "$(cl_pid "$1")"; }

# cl_stop NAME [SIGNAL]: stops a recorded daemon (SIGTERM by default, SIGKILL after 3 s)
# and forgets it.
cl_stop() {
	local name=$1 sig=${2:-TERM} p
	p=$(cl_pid "$name") || return 0
	rm -f "$CL_DIR/pids/$name.pid"
	cl_running "$p" && cl_owned "$p" || return 0
	kill -CONT "$p" 2>/dev/null
	kill -"$sig" "$p" 2>/dev/null
	for _ in $(seq 150); do cl_running "$p" || return 0; sleep 0.02; done
	kill -KILL "$p" 2>/dev/null
	for _ in $(seq 50); do cl_running "$p" || return 0; sleep 0.02; done
	return 0
}

# cl_owned PID: the process lives in one of this cluster's namespaces (a recorded pid
# may have been reused by now: only ours are signalled).
cl_owned() {
	local ino ns
	ino=$(stat -L -c %i "/proc/$1/ns/net" 2>/dev/null) || return 1
	for ns in $(cl_netns_list); do
		[ "$(stat -L -c %i "/run/netns/$ns" 2>/dev/null)" = "$ino" ] && return 0
	done
	return 1
}

# cl_until SECONDS CMD...: until CMD succeeds (polling every 20 ms); 1 on timeout.
cl_until() {
	local end=$((SECONDS + $1))
	shift
	while [ $SECONDS -le $end ]; do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}

# ---------------------------------------------------------------------------
# Network

cl_net_up() {
	local i ns
	ip netns add "$CL_NS_CTL"
	# A switch runs no netfilter: keep br_netfilter (when loaded) out of the bridge.
	for k in iptables ip6tables arptables; do
		cl_ctl sysctl -qw "net.bridge.bridge-nf-call-$k=0" 2>/dev/null || true
	done
	ip -n "$CL_NS_CTL" link set lo up
	ip -n "$CL_NS_CTL" link add br0 type bridge
	ip -n "$CL_NS_CTL" addr add "$CL_CTL_IP/$CL_PLEN" dev br0 $([ "$CL_FAMILY" = 6 ] && echo nodad)
	ip -n "$CL_NS_CTL" link set br0 up
	for i in $(cl_hosts); do cl_netns_attach "$(cl_ns "$i")" "veth$i" "$(cl_ip "$i")"; done
	[ -z "$CL_HA" ] || cl_ha_net_up
}

# cl_netns_attach NS VETH IP: a new namespace NS whose eth0 (IP/24, or /64 in an IPv6
# cluster) is on the bridge through VETH.
cl_netns_attach() {
	ip netns add "$1"
	ip -n "$CL_NS_CTL" link add "$2" type veth peer name eth0 netns "$1"
	ip -n "$CL_NS_CTL" link set "$2" master br0 up
	ip -n "$1" link set lo up
	ip -n "$1" addr add "$3/$CL_PLEN" dev eth0 $([ "$CL_FAMILY" = 6 ] && echo nodad)
	# IPv6 addresses would be flushed by a link down (a host failure and back).
	[ "$CL_FAMILY" != 6 ] || nsenter --net="/run/netns/$1" sysctl -qw net.ipv6.conf.eth0.keep_addr_on_down=1
	ip -n "$1" link set eth0 up
}

# Link cut (the host's cable pulled at the switch) and back.
cl_link_down() { ip -n "$CL_NS_CTL" link set "veth$1" down; }
cl_link_up() { ip -n "$CL_NS_CTL" link set "veth$1" up; }

# cl_isolate IDX: nftables in the host's namespace drops everything on eth0 (loopback
# lives on); cl_heal IDX removes it.
cl_isolate() {
	cl_in "$1" nft -f - <<-EOF
		table inet flisolate {
			chain in { type filter hook input priority -10; policy accept; iifname "eth0" drop; }
			chain out { type filter hook output priority -10; policy accept; oifname "eth0" drop; }
		}
	EOF
}
cl_heal() { cl_in "$1" nft delete table inet flisolate; }

# cl_loss PERCENT: random loss on every packet a namespace receives from the bridge
# (hosts: eth0; controller: br0), so each packet between two namespaces is dropped
# with that probability once. cl_loss_off removes it.
cl_loss() {
	local i
	for i in 1 2 3 ctl; do
		local dev=eth0 run=(cl_in "$i")
		[ "$i" = ctl ] && dev=br0 run=(cl_ctl)
		"${run[@]}" nft -f - <<-EOF
			table inet flloss {
				chain in { type filter hook input priority -20; policy accept;
					iifname "$dev" numgen random mod 100 < $1 counter drop; }
			}
		EOF
	done
}
cl_loss_off() {
	local i
	for i in 1 2 3; do cl_in "$i" nft delete table inet flloss 2>/dev/null; done
	cl_ctl nft delete table inet flloss 2>/dev/null
	return 0
}
# cl_delay MS JITTER IDX...: every packet into or out of those hosts' namespaces (IDX
# or ctl) held MS ms (± JITTER, uniform) by an NFQUEUE holder (tests/lib/nfqdelay.c;
# the kernel has no netem, and nftables' own queue statement is not built: the
# iptables NFQUEUE target, through nftables' xtables compatibility). The rule bypasses
# a holder that is gone: a delay never becomes a cut.
cl_delay_rules() { # -I|-D DEV: the rules in or out of this namespace
	local op=$1 dev=$2 t
	for t in iptables ip6tables; do
		"$t" -w "$op" INPUT -i "$dev" -j NFQUEUE --queue-num 7 --queue-bypass || return 1
		"$t" -w "$op" OUTPUT -o "$dev" -j NFQUEUE --queue-num 7 --queue-bypass || return 1
	done
}
cl_delay() {
	local ms=$1 jit=$2 i dev ns run; shift 2
	for i in "$@"; do
		dev=eth0 ns=$(cl_ns "$i") run=(cl_in "$i")
		[ "$i" = ctl ] && dev=br0 ns=$CL_NS_CTL run=(cl_ctl)
		cl_stop "nfqdelay-$i"
		: >"$CL_DIR/log/nfqdelay-$i.out"
		cl_spawn "nfqdelay-$i" "$ns" "$FL_NFQDELAY" -q 7 -d "$ms" -j "$jit" -s "$RANDOM"
		cl_until 5 grep -qs '^nfqdelay: queue' "$CL_DIR/log/nfqdelay-$i.out" ||
			{ cl_log "nfqdelay on $i did not start: $(tail -n 2 "$CL_DIR/log/nfqdelay-$i.out")"; return 1; }
		[ -f "$CL_DIR/delay-$i" ] && continue # the rules are there (a new holder, a new delay)
		"${run[@]}" bash -c "$(declare -f cl_delay_rules); cl_delay_rules -I $dev" ||
			{ cl_log "the NFQUEUE rules on $i failed"; return 1; }
		echo "$dev" >"$CL_DIR/delay-$i"
	done
}
cl_delay_off() {
	local i dev
	for i in 1 2 3 ctl; do
		[ -f "$CL_DIR/delay-$i" ] || continue
		dev=$(cat "$CL_DIR/delay-$i")
		if [ "$i" = ctl ]; then cl_ctl bash -c "$(declare -f cl_delay_rules); cl_delay_rules -D $dev"
		else cl_in "$i" bash -c "$(declare -f cl_delay_rules); cl_delay_rules -D $dev"; fi
		rm -f "$CL_DIR/delay-$i"
		cl_stop "nfqdelay-$i"
	done
	return 0
}
cl_loss_counts() { # packets dropped so far, all namespaces
	local i n=0 c
	for i in 1 2 3 ctl; do
		if [ "$i" = ctl ]; then c=$(cl_ctl nft list table inet flloss 2>/dev/null)
		else c=$(cl_in "$i" nft list table inet flloss 2>/dev/null); fi
		c=$(sed -n 's/.*counter packets \([0-9]*\).*/\1/p' <<<"$c" | head -n 1)
		n=$((n + ${c:-0}))
	done
	echo "$n"
}

# ---------------------------------------------------------------------------
# The cluster file, DNS

cl_write_conf() {
	local i
	cat >"$CL_CONF" <<-EOF
		; generated by tests/lib/cluster.sh: the one file every process of this cluster reads
		[cluster]
		name = $CL_NAME
		secret = $CL_SECRET

		[agent]
		ping_interval_ms = 100
		hung_after = 5
		heartbeat_ms = 100
		event_log = $CL_DIR/events.jsonl
		${FL_AGENT_CONF:-}

		[controller]
		listen = $([ "$CL_FAMILY" = 6 ] && echo "[::]:$CL_CTL_PORT" || cl_hp "$CL_CTL_IP" "$CL_CTL_PORT")
		address = $(cl_hp "$CL_CTL_IP" "$CL_CTL_PORT")
		state_file = $CL_DIR/state
		event_log = $CL_CLOG
		${FL_CTL_CONF:-}

		[dns]
		server = $(cl_hp "$CL_CTL_IP" 53)
		zone = $CL_ZONE.
		tsig_name = flatline
		tsig_algorithm = hmac-sha256
		tsig_secret = $CL_TSIG
		ttl = 1
		${FL_DNS_CONF:-}

	EOF
	for i in $(cl_hosts); do
		cat >>"$CL_CONF" <<-EOF
			[node "$(cl_node "$i")"]
			address = $(cl_ip "$i")
			redis = $(cl_hp "$(cl_ip "$i")" 6379)
			pidfile = $CL_DIR/$(cl_node "$i")/redis.pid

		EOF
	done
	cat >>"$CL_CONF" <<-EOF
		[shard "$CL_SHARD"]
		nodes = ${CL_NODES[*]}
		dns_name = $CL_DNS_NAME
		$([ "$CL_SPARES" = 0 ] || echo "spares = $(cl_spare_ids | paste -sd ' ')")
		${FL_SHARD_CONF:-}
	EOF
	[ -z "$CL_HA" ] || cl_ha_conf
	chmod 600 "$CL_CONF" # it holds the secrets
}

cl_named_start() {
	local d=$CL_DIR/named
	mkdir -p "$d"
	tsig-keygen -a hmac-sha256 flatline >"$d/keys.conf"
	CL_TSIG=$(awk '$1 == "secret" { gsub(/[";]/, "", $2); print $2; exit }' "$d/keys.conf")
	cat >"$d/$CL_ZONE.db" <<-EOF
		\$TTL 60
		@	IN SOA	ns.$CL_ZONE. admin.$CL_ZONE. 1 60 60 600 60
		@	IN NS	ns.$CL_ZONE.
		ns	IN $CL_RR	$CL_CTL_IP
		$CL_SHARD	1 IN $CL_RR	$(cl_ip 1)
	EOF
	cat >"$d/named.conf" <<-EOF
		include "$d/keys.conf";
		options {
			directory "$d";
			pid-file "$d/named.pid";
			session-keyfile "$d/session.key";
			managed-keys-directory "$d";
			listen-on port 53 { $([ "$CL_FAMILY" = 6 ] && echo none || echo "$CL_CTL_IP"); };
			listen-on-v6 port 53 { $([ "$CL_FAMILY" = 6 ] && echo "$CL_CTL_IP" || echo none); };
			recursion no;
			dnssec-validation no;
			notify no;
		};
		controls { };
		zone "$CL_ZONE" {
			type primary;
			file "$d/$CL_ZONE.db";
			update-policy { grant flatline name $CL_DNS_NAME $CL_RR; };
		};
	EOF
	cl_spawn named "$CL_NS_CTL" named -g -c "$d/named.conf"
	cl_until "$CL_WAIT_S" cl_dig_ok || cl_die "named did not answer (see $CL_DIR/log/named.out)"
}

cl_dig_ok() { [ -n "$(cl_dns)" ]; }
# cl_dns: the address named gives for the shard's name (empty if none).
cl_dns() {
	cl_ctl dig +short +time=1 +tries=1 @"$CL_CTL_IP" "$CL_DNS_NAME" "$CL_RR" 2>/dev/null | grep -v '^;' | head -n 1
}

# ---------------------------------------------------------------------------
# Servers, agents, controller

# cl_redis_start IDX [MASTER_IDX]: the flavour's server (CL_SERVER) in host IDX, empty (no
# persistence), a replica of MASTER_IDX if given, inside the node's memory cgroup.
cl_redis_start() {
	local i=$1 m=${2:-} node d cg args logged
	node=$(cl_node "$i")
	d=$CL_DIR/$node
	mkdir -p "$d"
	rm -f "$d/redis.pid"
	args=(--port 6379 --bind "$(cl_ip "$i") 127.0.0.1" --protected-mode no
		--save '' --appendonly no --dir "$d" --pidfile "$d/redis.pid"
		--logfile "$d/redis.log" --repl-diskless-sync-delay 0
		--enable-debug-command local)
	[ -n "$m" ] && args+=(--replicaof "$(cl_ip "$m")" 6379)
	# CL_REDIS_EXTRA: more arguments for every server (words; a test's tls-port, say).
	# shellcheck disable=SC2206
	args+=(${CL_REDIS_EXTRA:-})
	logged=$( (wc -l <"$d/redis.log") 2>/dev/null || echo 0)
	cg=$(cl_cg "$i")
	if [ -n "$cg" ]; then
		# shellcheck disable=SC2016 # expanded by that sh
		cl_spawn "redis-$node" "$(cl_ns "$i")" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' \
			"$cg" "$CL_SERVER" "${args[@]}"
	else
		cl_spawn "redis-$node" "$(cl_ns "$i")" "$CL_SERVER" "${args[@]}"
	fi
	cl_until "$CL_WAIT_S" cl_redis_up "$i" "$logged" ||
		cl_die "$(basename "$CL_SERVER") on $node did not start within $CL_WAIT_S s: $(cl_redis_why "$i")"
}
cl_redis_ping() { cl_redis "$1" ping 2>/dev/null | grep -q PONG; }
# cl_redis_up IDX [LINES]: it answers PING, or its log says it is ready after line LINES
# (a server that comes back on a host whose write lease is not held answers nobody but
# the agent, the replicas and the controller until the controller makes it a replica).
cl_redis_up() {
	cl_redis_ping "$1" || tail -n +"$((${2:-0} + 1))" "$CL_DIR/$(cl_node "$1")/redis.log" 2>/dev/null |
		grep -q 'Ready to accept connections'
}
# cl_redis_why IDX: why a server does not answer: its process, its command line, the
# tail of its log and output, what a PING gets, its agent's last lease event.
cl_redis_why() {
	local node d p out
	node=$(cl_node "$1")
	d=$CL_DIR/$node
	p=$(cl_pid "redis-$node")
	if cl_running "$p"; then echo "pid $p running;"; else echo "pid ${p:-?} not running;"; fi
	echo "command: $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline");"
	echo "log: $(tail -n 5 "$d/redis.log" 2>/dev/null | tr '\n' '|') output: $(tail -n 3 "$CL_DIR/log/redis-$node.out" 2>/dev/null | tr '\n' '|');"
	out=$(cl_redis "$1" ping 2>&1)
	echo "PING: '${out:0:80}' (exit $?: 124 = no answer within ${CL_CLI_TIMEOUT:-1} s);"
	echo "agent: $(jq -c 'select(.kind | test("lease")) | [.ts, .kind, .reason]' "$CL_DIR/events-$node.jsonl" 2>/dev/null | tail -n 2 | tr '\n' ' ')"
}

# cl_redis IDX ARGS...: the flavour's CLI against the server of host IDX (from the ctl
# namespace).
# Bounded (CL_CLI_TIMEOUT, 1 s): a stopped or cut-off server must not hang the caller.
cl_redis() {
	local i=$1
	shift
	timeout "${CL_CLI_TIMEOUT:-1}" nsenter --net="/run/netns/$CL_NS_CTL" \
		"$CL_CLI" -h "$(cl_ip "$i")" -p 6379 "$@"
}
cl_info() { cl_redis "$1" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }
cl_role() { cl_info "$1" role; }

# cl_linked IDX MASTER_IDX: a replica of it with the link up.
cl_linked() {
	[ "$(cl_info "$1" master_host)" = "$(cl_ip "$2")" ] &&
		[ "$(cl_info "$1" master_link_status)" = up ]
}

cl_controller_start() { # [OPTION...]: more options of `flatline controller`
	local since
	since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	cl_spawn controller "$CL_NS_CTL" "$FL" controller --allow-root -c "$CL_CONF" -v "$@"
	cl_until "$CL_WAIT_S" cl_has_event "$CL_CLOG" \
		".kind == \"controller_ready\" and .ts >= \"$since\"" ||
		cl_die "controller did not start: $(tail -n 5 "$CL_DIR/log/controller.out")"
}

cl_agent_start() {
	local i=$1 node
	node=$(cl_node "$i")
	# CL_AGENT_ARGS: more options for every agent (words split on spaces).
	# shellcheck disable=SC2086
	cl_spawn "agent-$node" "$(cl_ns "$i")" "$FL" agent -c "$CL_CONF" --node "$node" \
		--event-log "$CL_DIR/events-$node.jsonl" ${CL_AGENT_ARGS:-}
}

# cl_has_event LOG JQ-FILTER: a matching line is there.
cl_has_event() { [ -s "$1" ] && [ -n "$(jq -c "select($2)" "$1" 2>/dev/null | head -n 1)" ]; }

cl_status_json() { timeout 5 nsenter --net="/run/netns/$CL_NS_CTL" "$FL" status -c "$CL_CONF" --json 2>/dev/null; }
cl_healthy() {
	[ "$(cl_status_json | jq '[.shards[0].nodes[] | select(.health == "ok")] | length' 2>/dev/null)" = 3 ]
}
# cl_api_primary: the primary's address as the controller's Sentinel API gives it.
cl_api_primary() {
	local ip a
	for ip in $(cl_api_ips); do
		a=$(timeout 2 nsenter --net="/run/netns/$CL_NS_CTL" "$CL_CLI" -h "$ip" -p "$CL_CTL_PORT" \
			sentinel get-master-addr-by-name "$CL_SHARD" 2>/dev/null | head -n 1)
		[ -n "$a" ] && { echo "$a"; return 0; }
	done
	return 1
}
# cl_api_ips: where the Sentinel API answers (HA: every controller).
cl_api_ips() { if [ -n "$CL_HA" ]; then cl_ha_ips; else echo "$CL_CTL_IP"; fi; }

# cl_writer_start [ARGS...]: the writer (tests/lib/clwriter.py) in the ctl namespace,
# following the shard's DNS name (or, with --sentinel ..., the Sentinel API), writing to
# key w; its record in DIR/writer.out. cl_writer_stop: SIGTERM; its summary (JSON) in
# DIR/writer.json.
cl_writer_start() {
	rm -f "$CL_DIR/writer.out" "$CL_DIR/log/writer.out"
	if [[ " $* " == *" --sentinel "* ]]; then
		cl_spawn writer "$CL_NS_CTL" "$CL_PY" "$CL_ROOT/tests/lib/clwriter.py" \
			--out "$CL_DIR/writer.out" "$@"
	else
		cl_spawn writer "$CL_NS_CTL" "$CL_PY" "$CL_ROOT/tests/lib/clwriter.py" \
			--dns "$CL_DNS_NAME" --dns-server "$(cl_hp "$CL_CTL_IP" 53)" --dns-type "$CL_RR" \
			--out "$CL_DIR/writer.out" "$@"
	fi
	cl_until "$CL_WAIT_S" grep -q '^A ' "$CL_DIR/writer.out" 2>/dev/null ||
		cl_die "the writer wrote nothing: $(tail -n 5 "$CL_DIR/log/writer.out")"
}
cl_writer_stop() {
	cl_stop writer
	grep '^{' "$CL_DIR/log/writer.out" | tail -n 1 >"$CL_DIR/writer.json"
}

# cl_masters: the hosts whose server says role:master, one per line.
cl_masters() {
	local i
	for i in 1 2 3; do [ "$(cl_role "$i")" = master ] && echo "$i"; done
	return 0
}

# ---------------------------------------------------------------------------
# up / down / status

cl_save_env() {
	cat >"$CL_DIR/cluster.env" <<-EOF
		CL_NAME=$CL_NAME
		CL_NODE_PREFIX=$CL_NODE_PREFIX
		CL_NET=$CL_NET
		CL_FAMILY=$CL_FAMILY
		CL_NET6=$CL_NET6
		CL_SHARD=$CL_SHARD
		CL_ZONE=$CL_ZONE
		CL_CG_KIND=$CL_CG_KIND
		CL_HA=$CL_HA
		CL_FLAVOUR=$CL_FLAVOUR
		CL_SPARES=$CL_SPARES
	EOF
}

# cl_up_servers: the namespaces, the memory cgroups and the three servers (h1 the
# primary), nothing of flatline (bench/compare.sh runs Redis Sentinel on them).
cl_up_servers() {
	local i
	[ -z "$CL_FLAVOUR_WHY" ] || { cl_die "$CL_FLAVOUR_WHY"; return 1; }
	mkdir -p "$CL_DIR/pids" "$CL_DIR/log"
	CL_CG_KIND=$(cl_cg_kind)
	CL_SECRET=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
	cl_save_env
	CL_HAVE_ENV=1
	( set -e; cl_net_up ) || { cl_die "failed to create the namespaces"; return 1; }
	for i in $(cl_hosts); do
		[ -z "$CL_CG_KIND" ] || mkdir -p "$(cl_cg "$i")" || return 1
	done
	cl_redis_start 1 || return 1
	cl_redis_start 2 1 || return 1
	cl_redis_start 3 1 || return 1
	for ((i = 4; i <= 3 + CL_SPARES; i++)); do cl_redis_start "$i" || return 1; done # empty
	if ! cl_until "$CL_WAIT_S" cl_linked 2 1 || ! cl_until "$CL_WAIT_S" cl_linked 3 1; then
		cl_die "replicas did not sync"
		return 1
	fi
}

cl_up() {
	local i node
	[ "$(id -u)" -eq 0 ] || cl_die "run as root (namespaces, BPF)" || return 1
	[ -z "$CL_FLAVOUR_WHY" ] || { cl_die "$CL_FLAVOUR_WHY"; return 1; }
	for c in ip nsenter nft named tsig-keygen dig jq setsid; do
		command -v "$c" >/dev/null || { cl_die "needs $c (scripts/install-deps.sh)"; return 1; }
	done
	[ -x "$FL" ] || { cl_die "$FL not built (make)"; return 1; }
	if [ -f "$CL_DIR/cluster.env" ] || ip netns list | grep -q "^$CL_NS_CTL\b"; then
		if cl_alive controller && cl_healthy; then
			cl_log "already up in $CL_DIR"
			CL_ALREADY=1
			return 0
		fi
		cl_log "leftovers of an earlier run: tearing them down first"
		cl_down
	fi
	cl_up_servers || return 1
	cl_named_start || return 1
	cl_write_conf
	if [ -n "$CL_HA" ]; then
		cl_ha_start || return 1
	else
		cl_controller_start || return 1
	fi
	for i in $(cl_hosts); do cl_agent_start "$i"; done
	for i in $(cl_hosts); do
		node=$(cl_node "$i")
		cl_until "$CL_WAIT_S" cl_has_event "$CL_CLOG" \
			".kind == \"agent_connected\" and .instance == \"$node\"" ||
			{ cl_die "agent $node did not connect: $(tail -n 3 "$CL_DIR/log/agent-$node.out")"; return 1; }
	done
	cl_until "$CL_WAIT_S" cl_healthy || { cl_die "nodes not healthy: $(cl_status_json)"; return 1; }
}

# Namespaces of this cluster that exist now.
cl_netns_list() { ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E "^$CL_NAME-(ctl|h[0-9]+|c[0-9]+)$"; }

cl_down() {
	local f name ns p i node cg
	if [ -d "$CL_DIR/pids" ]; then
		for f in "$CL_DIR"/pids/*.pid; do
			[ -e "$f" ] || continue
			name=$(basename "$f" .pid)
			cl_stop "$name" &
		done
		wait
	fi
	# Anything else still running in our namespaces (writers, sentinels, strays).
	for ns in $(cl_netns_list); do
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			kill -CONT "$p" 2>/dev/null
			kill -KILL "$p" 2>/dev/null
		done
	done
	for ns in $(cl_netns_list); do
		for _ in $(seq 100); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.02; done
		ip netns del "$ns" 2>/dev/null || cl_log "failed to delete namespace $ns"
	done
	for i in $(cl_hosts); do
		node=$(cl_node "$i")
		# Pins and lock of our agents only: node ids known from DIR, lock not held.
		if [ -n "$CL_HAVE_ENV" ] && { [ ! -e "/run/flatline/agent-$node.lock" ] ||
			flock -n "/run/flatline/agent-$node.lock" true; }; then
			rm -rf "/sys/fs/bpf/flatline/$node" "/run/flatline/agent-$node.lock"
		fi
		cg=$(cl_cg "$i")
		if [ -n "$cg" ] && [ -d "$cg" ]; then
			while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$cg/cgroup.procs"
			for _ in $(seq 100); do rmdir "$cg" 2>/dev/null && break; sleep 0.02; done
		fi
	done
	if [ -d "$CL_DIR" ]; then
		if [ "${CL_KEEP:-0}" = 1 ]; then
			rm -rf "$CL_DIR/pids" "$CL_DIR/cluster.env"
		else
			rm -rf "$CL_DIR"
		fi
	fi
	return 0
}

cl_status() {
	local i node st
	if [ ! -f "$CL_DIR/cluster.env" ]; then
		echo "no cluster in $CL_DIR"
		return 1
	fi
	echo "cluster $CL_NAME in $CL_DIR (cluster file $CL_CONF), $FL_SERVER_NAME ($CL_SERVER)"
	for f in "$CL_DIR"/pids/*.pid; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .pid)
		if cl_alive "$name"; then st="running (pid $(cl_pid "$name"))"; else st="DEAD"; fi
		printf '  %-16s %s\n' "$name" "$st"
	done
	for i in $(cl_hosts); do
		node=$(cl_node "$i")
		printf '  %-3s %-12s %-10s role=%s\n' "$node" "$(cl_ip "$i")" "$(cl_ns "$i")" \
			"$(cl_role "$i" || echo '?')"
	done
	echo "  Sentinel API ($CL_CTL_IP:$CL_CTL_PORT) primary: $(cl_api_primary)"
	echo "  DNS $CL_DNS_NAME -> $(cl_dns)"
	echo
	cl_ctl "$FL" status -c "$CL_CONF" || true
	echo
	echo "  a shell on a host:   nsenter --net=/run/netns/$(cl_ns 1) bash"
	echo "  clients:             nsenter --net=/run/netns/$CL_NS_CTL $CL_CLI -h $CL_CTL_IP -p $CL_CTL_PORT sentinel masters"
	echo "  events:              $FL events --log $CL_CLOG"
}

# shellcheck source=tests/lib/cluster_ha.sh
. "$CL_ROOT/tests/lib/cluster_ha.sh"
cl_init
