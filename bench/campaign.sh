#!/usr/bin/env bash
# A random-fault campaign with a history checker (Jepsen's shape): three namespace hosts
# (tests/lib/cluster.sh) at the shipped defaults, clients that follow the primary
# through the Sentinel API plus one client on every host's own server
# (tests/lib/histclient.py: RPUSH on several lists, each acknowledgement carrying its
# index, LLEN reads, ROLE samples), and a nemesis that picks faults at random from a
# seed. At the end every fault is healed, the cluster converges, and
# tests/lib/checker.py judges the whole history: a table per fault kind, then one JSON
# line (seed, faults, fault_kinds, acked, lost, lost_after_promotion, two_primaries,
# stale_reads, false_failovers, anomalies, ...). The history stays in DIR.
#
# usage: bench/campaign.sh [--minutes M] [--faults N] [--seed S] [--flavour redis|valkey]
#            [--ha] [--system flatline|sentinel] [--set SECTION.KEY=VALUE]...
#            [--kinds K1,K2,...] [--target primary|any] [--dir DIR]
#   --minutes M   stop starting faults after M minutes (default 5)
#   --faults N    ... or after N faults, whichever comes first (default: no limit)
#   --seed S      the schedule's seed (default: random; printed, and it replays the run)
#   --system sentinel   the same schedule against three Redis Sentinels (down-after 1 s)
#                 instead of flatline (agent and controller faults become sentinel faults)
#   --set agent.lease_ms=0   a cluster-file key for [agent], [controller] or [dns]
#   --kinds       only these fault kinds (default: all; see KINDS below)
#   --target      primary: every fault aims at the primary (default: 70 % of them)
# Exit status: 0 when the checker found no anomaly, 1 when it did, 2 on a harness error.
# (root; the faults: KINDS below; quiet periods of 1-3 s between them)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
MINUTES=5 FAULTS=0 SEED=$((RANDOM * 32768 + RANDOM)) FLAVOUR=redis HA='' SYSTEM=flatline
KINDS_ARG='' TARGET=mixed DIR='' SETS=()
KINDS=(server_kill server_stop server_restart agent_kill agent_stop ctl_kill ctl_stop
	host_kill cut_full cut_in cut_out cut_ctl cut_peers split loss delay switchover)
usage() { sed -n '13,25p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--minutes) MINUTES=$2; shift 2 ;;
	--faults) FAULTS=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--flavour) FLAVOUR=$2; shift 2 ;;
	--ha) HA=1; shift ;;
	--system) SYSTEM=$2; shift 2 ;;
	--set) SETS+=("$2"); shift 2 ;;
	--kinds) KINDS_ARG=$2; shift 2 ;;
	--target) TARGET=$2; shift 2 ;;
	--dir) DIR=$2; shift 2 ;;
	*) usage ;;
	esac
done
[[ $SEED =~ ^[0-9]+$ ]] || { echo "campaign: --seed wants a number, not '$SEED'" >&2; exit 2; }
[[ $MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "campaign: --minutes wants a number" >&2; exit 2; }
[[ $FAULTS =~ ^[0-9]+$ ]] || { echo "campaign: --faults wants a number" >&2; exit 2; }
case $SYSTEM in flatline | sentinel) ;; *) echo "campaign: --system flatline|sentinel" >&2; exit 2 ;; esac
case $TARGET in primary | mixed | any) ;; *) echo "campaign: --target primary|any" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "campaign: run as root (namespaces, BPF)" >&2; exit 2; }
if [ -n "$KINDS_ARG" ]; then
	IFS=, read -r -a want <<<"$KINDS_ARG"
	for k in "${want[@]}"; do
		[[ " ${KINDS[*]} " == *" $k "* ]] || { echo "campaign: unknown fault kind '$k' (${KINDS[*]})" >&2; exit 2; }
	done
	KINDS=("${want[@]}")
fi
for kv in "${SETS[@]}"; do
	[[ $kv =~ ^(agent|controller|dns)\.([a-z_]+)=(.*)$ ]] ||
		{ echo "campaign: --set SECTION.KEY=VALUE ([agent], [controller] or [dns]), not '$kv'" >&2; exit 2; }
	case ${BASH_REMATCH[1]} in
	agent) FL_AGENT_CONF+=$'\n'"${BASH_REMATCH[2]} = ${BASH_REMATCH[3]}" ;;
	controller) FL_CTL_CONF+=$'\n'"${BASH_REMATCH[2]} = ${BASH_REMATCH[3]}" ;;
	dns) FL_DNS_CONF+=$'\n'"${BASH_REMATCH[2]} = ${BASH_REMATCH[3]}" ;;
	esac
done
export FL_AGENT_CONF FL_CTL_CONF FL_DNS_CONF
LEASE_MS=500
for kv in "${SETS[@]}"; do [[ $kv == agent.lease_ms=* ]] && LEASE_MS=${kv#agent.lease_ms=}; done

export FL_FLAVOUR=$FLAVOUR FL_HA=$HA FL_NODE_PREFIX=cp${BASHPID}n
DIR=${DIR:-/tmp/flatline-campaign-$SEED-$SYSTEM}
rm -rf "$DIR"
mkdir -p "$DIR"
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
# shellcheck source=tests/lib/partition.sh
. tests/lib/partition.sh
# shellcheck source=tests/lib/sentinels.sh
. tests/lib/sentinels.sh
CL_KEEP=1 # the servers' and daemons' logs stay in DIR/cl
cl_init "$DIR/cl" "flk$BASHPID"
HIST=$DIR/history
NEM=$DIR/nemesis.jsonl
mkdir -p "$HIST"
: >"$NEM"
say() { printf 'campaign: %s\n' "$*" >&2; }
cleanup() {
	local f
	for f in "$CL_DIR"/pids/*.pid; do # CONT everything we may have stopped
		[ -e "$f" ] && kill -CONT "$(cat "$f")" 2>/dev/null
	done
	cl_down
}
trap cleanup EXIT
trap 'exit 2' INT TERM

# ---------------------------------------------------------------------------
# The cluster and the clients

up() {
	if [ "$SYSTEM" = sentinel ]; then
		cl_up_servers || return 1
		start_sentinels 1000 || return 1
	else
		cl_up || return 1
		[ -n "$HA" ] || cl_until 10 cl_has_event "$CL_DIR/events-$(cl_node 1).jsonl" \
			'.kind == "lease_regained"' || [ "$LEASE_MS" = 0 ] ||
			{ cl_log "h1 never took the lease"; return 1; }
	fi
}
api_list() {
	local ip l=''
	if [ "$SYSTEM" = sentinel ]; then
		for i in 1 2 3; do l+=${l:+,}$(cl_ip "$i"):26379; done
	else
		for ip in $(cl_api_ips); do l+=${l:+,}$ip:$CL_CTL_PORT; done
	fi
	echo "$l"
}
client() { # NAME NS ARGS...: one histclient
	local name=$1 ns=$2
	shift 2
	cl_spawn "$name" "$ns" "$CL_PY" "$ROOT/tests/lib/histclient.py" --id "$name" --seed "$SEED" \
		--out "$HIST/$name.jsonl" "$@"
}
clients_start() {
	local i
	client app1 "$CL_NS_CTL" --sentinel "$(api_list)" --rate 150
	client app2 "$CL_NS_CTL" --sentinel "$(api_list)" --rate 150
	for i in 1 2 3; do
		client "colo$i" "$(cl_ns "$i")" --addr "$(cl_ip "$i"):6379" --rate 100 --read-every 0
	done
	cl_until 10 grep -q '"ok":1' "$HIST/app1.jsonl" 2>/dev/null ||
		{ cl_log "client app1 acknowledged nothing: $(tail -n 3 "$CL_DIR/log/app1.out")"; return 1; }
}
clients_stop() { local n; for n in app1 app2 colo1 colo2 colo3; do cl_stop "$n"; done; }

# ---------------------------------------------------------------------------
# What is where now

primary_idx() { # the host whose server the API names, else the one saying master
	local a i
	a=$(primary_addr) && { cl_idx_of_ip "${a%:*}"; return 0; }
	i=$(cl_masters | head -n 1)
	[ -n "$i" ] && echo "$i"
}
primary_addr() {
	local ip a
	if [ "$SYSTEM" = sentinel ]; then
		for ip in 1 2 3; do
			a=$(timeout 2 nsenter --net="/run/netns/$CL_NS_CTL" "$CL_CLI" -h "$(cl_ip "$ip")" -p 26379 \
				sentinel get-master-addr-by-name "$CL_SHARD" 2>/dev/null | head -n 1)
			[ -n "$a" ] && { echo "$a:6379"; return 0; }
		done
		return 1
	fi
	cl_api_primary
}
ctl_names() { # the controller processes (HA: the leader first)
	local l
	if [ -z "$HA" ]; then echo controller; return; fi
	l=$(cl_ha_leader) && echo "controller-c$l"
	for i in 1 2 3; do [ "$i" = "${l:-}" ] || echo "controller-c$i"; done
}
ctl_restart() { # NAME
	if [ "$1" = controller ]; then cl_controller_start; else cl_ha_controller_start "${1#controller-c}"; fi
}

# converged: every server up, one master that the API names, the others linked to it,
# and (flatline) every node healthy.
converged() {
	local p i
	p=$(primary_idx) || return 1
	[ "$(cl_role "$p")" = master ] || return 1
	for i in 1 2 3; do
		[ "$i" = "$p" ] && continue
		cl_linked "$i" "$p" || return 1
	done
	[ "$SYSTEM" = sentinel ] || cl_healthy
}

# ---------------------------------------------------------------------------
# The nemesis: fault_begin KIND IDX, then fault_end KIND IDX after the fault's time

fault_begin() {
	local k=$1 i=$2 node
	node=$(cl_node "$i")
	case $k in
	server_kill) cl_stop "redis-$node" KILL ;;
	server_stop) kill -STOP "$(cl_pid "redis-$node")" ;;
	server_restart) cl_stop "redis-$node" TERM ;;
	agent_kill)
		if [ "$SYSTEM" = sentinel ]; then cl_stop "sentinel-$i" KILL; else cl_stop "agent-$node" KILL; fi ;;
	agent_stop)
		if [ "$SYSTEM" = sentinel ]; then kill -STOP "$(cl_pid "sentinel-$i")"
		else kill -STOP "$(cl_pid "agent-$node")"; fi ;;
	ctl_kill) FAULT_CTL=$(ctl_names | head -n 1); cl_stop "$FAULT_CTL" KILL ;;
	ctl_stop) FAULT_CTL=$(ctl_names | head -n 1); kill -STOP "$(cl_pid "$FAULT_CTL")" ;;
	host_kill)
		cl_link_down "$i"
		cl_stop "redis-$node" KILL
		[ "$SYSTEM" = sentinel ] && cl_stop "sentinel-$i" KILL || cl_stop "agent-$node" KILL ;;
	cut_full) pt_cut full "$i" ;;
	cut_in) pt_cut in "$i" ;;
	cut_out) pt_cut out "$i" ;;
	cut_ctl) pt_cut ctl "$i" ;;
	cut_peers) pt_cut peers "$i" ;;
	split) # host i and one other host on one side; the third host and the controller(s) on the other
		FAULT_MATE=$(( i % 3 + 1 ))
		split_cut "$i" "$FAULT_MATE" ;;
	loss) cl_loss 20 ;;
	delay) # the host's links slow by 50-400 ms (from the fault's length: the seed replays it), +-20 %
		FAULT_DELAY=$((50 + FAULT_MS % 351))
		cl_delay "$FAULT_DELAY" $((FAULT_DELAY / 5)) "$i" ;;
	switchover) # refused (a failover ended less than failover_block_ms ago) is recorded as such
		FAULT_OK=false
		if [ "$SYSTEM" = sentinel ]; then
			cl_ctl "$CL_CLI" -h "$(cl_ip 1)" -p 26379 sentinel failover "$CL_SHARD"
		else
			cl_ctl "$FL" failover "$CL_SHARD" -c "$CL_CONF"
		fi >>"$CL_DIR/log/switchover.out" 2>&1 && FAULT_OK=true ;;
	esac
}
fault_end() {
	local k=$1 i=$2 node m
	node=$(cl_node "$i")
	case $k in
	server_kill | server_restart) server_back "$i" ;;
	server_stop) kill -CONT "$(cl_pid "redis-$node")" ;;
	agent_kill)
		if [ "$SYSTEM" = sentinel ]; then sentinel_back "$i"; else cl_agent_start "$i"; fi ;;
	agent_stop)
		if [ "$SYSTEM" = sentinel ]; then kill -CONT "$(cl_pid "sentinel-$i")"
		else kill -CONT "$(cl_pid "agent-$node")"; fi ;;
	ctl_kill) ctl_restart "$FAULT_CTL" ;;
	ctl_stop) kill -CONT "$(cl_pid "$FAULT_CTL")" ;;
	host_kill)
		cl_link_up "$i"
		server_back "$i"
		if [ "$SYSTEM" = sentinel ]; then sentinel_back "$i"; else cl_agent_start "$i"; fi ;;
	cut_full | cut_in | cut_out | cut_ctl | cut_peers) pt_heal "$i" ;;
	split) pt_heal "$i"; pt_heal "$FAULT_MATE"; split_heal_third "$i" "$FAULT_MATE" ;;
	loss) cl_loss_off ;;
	delay) cl_delay_off ;;
	switchover) ;;
	esac
	return 0
}
# A server comes back as its operator starts it: empty, with no replicaof (flatline, or
# Sentinel, must make it a replica); Sentinel's deployments start it as a replica of
# the primary Sentinel names, as sentinel.conf's known-replica rewrites do.
server_back() {
	local m
	if [ "$SYSTEM" = sentinel ]; then
		m=$(primary_idx)
		[ "${m:-$1}" = "$1" ] && m=''
		cl_redis_start "$1" ${m:+"$m"}
	else
		cl_redis_start "$1"
	fi
}
sentinel_back() {
	cl_spawn "sentinel-$1" "$(cl_ns "$1")" "$CL_SENTINEL" "$CL_DIR/sentinel-$1/sentinel.conf"
}
split_third() { local j; for j in 1 2 3; do [ "$j" != "$1" ] && [ "$j" != "$2" ] && echo "$j"; done; }
split_cut() { # A B: A and B keep each other; both lose the third host and the controller side
	local a=$1 b=$2 t far j
	t=$(split_third "$a" "$b")
	far="$(cl_ip "$t"), $CL_CTL_IP"
	[ -z "$HA" ] || for j in 1 2 3; do far+=", $(cl_ha_ip "$j")"; done
	for j in "$a" "$b"; do
		pt_nft "$j" <<-EOF
			table inet flisolate {
				chain in { type filter hook input priority -10; policy accept; ip saddr { $far } drop; }
				chain out { type filter hook output priority -10; policy accept; ip daddr { $far } drop; }
			}
		EOF
	done
}
split_heal_third() { :; } # the cut lives on the two hosts' side only

# ---------------------------------------------------------------------------
# The schedule: from the seed alone (kinds in bags, so every kind comes round; target,
# duration and quiet time from the same generator). Each line: KIND TARGET MS QUIET_MS

schedule() {
	/usr/bin/python3 - "$SEED" "$TARGET" "${KINDS[@]}" <<-'EOF'
		import random, sys
		seed, target, kinds = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
		r = random.Random(seed)
		long_ms = {"server_stop": (1000, 4000), "agent_stop": (500, 2000), "ctl_stop": (500, 2000),
		           "loss": (3000, 8000), "delay": (2000, 6000), "switchover": (0, 0)}
		for _ in range(1000):
		    bag = list(kinds)
		    r.shuffle(bag)
		    for k in bag:
		        t = "primary" if target == "primary" or (target == "mixed" and r.random() < 0.7) else "replica%d" % r.randrange(2)
		        if target == "any":
		            t = r.choice(["primary", "replica0", "replica1"])
		        lo, hi = long_ms.get(k, (1000, 5000))
		        try:
		            print(k, t, r.randint(lo, hi), r.randint(1000, 3000), flush=True)
		        except BrokenPipeError:  # the campaign has had enough
		            sys.exit(0)
	EOF
}
resolve() { # TARGET -> IDX (primary, or the n-th other host)
	local p=$1 t=$2 others=() j
	for j in 1 2 3; do [ "$j" = "$p" ] || others+=("$j"); done
	case $t in
	primary) echo "$p" ;;
	replica0) echo "${others[0]}" ;;
	replica1) echo "${others[1]}" ;;
	esac
}
now_ns() { date +%s%N; }

# ---------------------------------------------------------------------------

say "seed $SEED, $SYSTEM on $FLAVOUR${HA:+, HA}, ${MINUTES} min${FAULTS:+ / $FAULTS faults}, kinds ${KINDS[*]}, lease_ms $LEASE_MS, in $DIR"
up || { say "the cluster did not come up"; exit 2; }
clients_start || exit 2
sleep 2
deadline=$(( $(date +%s) + ${MINUTES%.*} * 60 ))
[[ $MINUTES == *.* ]] && deadline=$(( deadline + ${MINUTES#*.} * 6 ))
n=0
while read -r kind tsel ms quiet; do
	[ "$(date +%s)" -lt "$deadline" ] || break
	[ "$FAULTS" -eq 0 ] || [ "$n" -lt "$FAULTS" ] || break
	if [ "$SYSTEM" = sentinel ] && [[ $kind == ctl_* ]]; then continue; fi
	p=$(primary_idx) || { say "no primary known before fault $((n + 1))"; p=1; }
	i=$(resolve "$p" "$tsel")
	t0=$(now_ns)
	FAULT_OK=true FAULT_MS=$ms
	fault_begin "$kind" "$i"
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	fault_end "$kind" "$i"
	t1=$(now_ns)
	n=$((n + 1))
	printf '{"n":%d,"kind":"%s","node":"%s","primary":%s,"t0":%s,"t1":%s,"ms":%d,"done":%s}\n' "$n" \
		"$kind" "$(cl_node "$i")" "$([ "$i" = "$p" ] && echo true || echo false)" "$t0" "$t1" "$ms" \
		"$FAULT_OK" >>"$NEM"
	say "fault $n: $kind on $(cl_node "$i")$([ "$i" = "$p" ] && echo ' (primary)') for ${ms} ms"
	cl_until 30 converged || say "not converged 30 s after fault $n ($kind): $(cl_masters | tr '\n' ' ')"
	sleep "$(printf '%d.%03d' $((quiet / 1000)) $((quiet % 1000)))"
done < <(schedule)

say "$n faults; healing and converging"
for i in 1 2 3; do pt_heal "$i"; done
cl_loss_off
cl_delay_off
cl_until 60 converged || say "did not converge: masters $(cl_masters | tr '\n' ' ')"
sleep 3
clients_stop
p=$(primary_idx) || p=$(cl_masters | head -n 1)
{
	printf '{"primary":"%s","lists":{' "$(cl_node "$p")"
	for k in 0 1 2 3; do
		[ "$k" = 0 ] || printf ','
		printf '"k%d":' "$k"
		cl_redis "$p" --raw lrange "k$k" 0 -1 2>/dev/null | jq -R . | jq -s -c .
	done
	printf '}}\n'
} >"$DIR/final.json"
nodes=""
for i in 1 2 3; do nodes+=${nodes:+,}$(cl_node "$i")=$(cl_ip "$i"):6379; done
logs=()
if [ "$SYSTEM" = sentinel ]; then
	for i in 1 2 3; do logs+=("$CL_DIR/sentinel-$i/sentinel.log"); done
	check_src=(--sentinel-log "${logs[@]}")
else
	for f in "$CL_DIR"/controller*.jsonl; do [ -e "$f" ] && logs+=("$f"); done
	check_src=(--events "${logs[@]}")
fi
/usr/bin/python3 tests/lib/checker.py --history "$HIST"/*.jsonl --nemesis "$NEM" "${check_src[@]}" \
	--nodes "$nodes" --final "$DIR/final.json" --lease-ms "$LEASE_MS" --seed "$SEED" \
	--anomalies-out "$DIR/anomalies.jsonl" | tee "$DIR/result.txt"
say "history kept in $DIR (replay: $0 --seed $SEED${HA:+ --ha} --flavour $FLAVOUR --system $SYSTEM)"
anomalies=$(tail -n 1 "$DIR/result.txt" | jq -r .anomalies 2>/dev/null)
[ -n "$anomalies" ] || exit 2
[ "$anomalies" = 0 ]
