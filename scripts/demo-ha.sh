#!/usr/bin/env bash
# make demo-ha: the demo's three data hosts plus three etcd members and three
# controllers (tests/lib/cluster_ha.sh), one leading. A DNS-following writer runs; the
# leading controller is SIGKILLed, another takes over; then the primary is SIGKILLed and
# the new leader fails it over. Prints both as timelines; tears everything down.
#
# env: DEMO_DIR (work directory, default a fresh /tmp/flatline-demo-ha.XXXXXX), FL.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "demo-ha: run as root (namespaces, BPF)" >&2; exit 1; }
export FL_HA=1
# shellcheck source=tests/lib/cluster.sh
. tests/lib/cluster.sh
[ -x "$FL" ] || make -s all
export FL_NODE_PREFIX=dha$$-n
dir=${DEMO_DIR:-$(mktemp -d /tmp/flatline-demo-ha.XXXXXX)}
cl_init "$dir" "fldha$$"
trap 'echo "== tearing down"; cl_down' EXIT
trap 'exit 130' INT TERM

say() { printf '\n== %s\n' "$*"; }
ms_since() { echo $((($(date -u -d "$2" +%s%N) - $1) / 1000000)); }

say "bringing up three data hosts, three etcd members and three controllers ($CL_NAME-c1..3 on $CL_NET.11-13)"
cl_up
lead=$(cl_ha_leader)
cl_ctl "$FL" status -c "$CL_CONF" | sed -n '1,6p' | sed 's/^/   /'

say "a writer that knows only the name $CL_DNS_NAME: 1,000 RPUSH a second"
cl_writer_start --rate 1000
sleep 1

say "kill -KILL the leading controller c$lead"
t0=$(cl_now_ns)
kill -KILL "$(cl_pid "controller-c$lead")"
cl_until 10 bash -c ". tests/lib/cluster.sh; cl_init $dir; l=\$(cl_ha_leader) && [ \$l != $lead ]" ||
	echo "   (no other controller leads after 10 s)"
nl=$(cl_ha_leader)
ts=$(jq -r 'select(.kind == "leader_elected") | .ts' "$(cl_ha_log "$nl")" | tail -n 1)
echo "   c$nl leads $(ms_since "$t0" "$ts") ms later (lease ${FL_HA_LEASE_MS:-1000} ms); writes meanwhile: $(grep -c '^A ' "$CL_DIR/writer.out") acknowledged, no error needed"
CL_CLOG=$(cl_ha_log "$nl")

say "kill -KILL the primary's redis-server ($(cl_node 1))"
t1=$(cl_now_ns)
kill -KILL "$(cl_pid "redis-$(cl_node 1)")"
cl_until 10 cl_has_event "$CL_CLOG" '.kind == "failover_end"' || echo "   (no failover_end within 10 s)"
sleep 1
new=$(cl_idx_of_ip "$(cl_api_primary)")
cl_writer_stop
CL_CLI_TIMEOUT=5 cl_redis "$new" wait 1 2000 >/dev/null || true
CL_CLI_TIMEOUT=10 cl_redis "$new" lrange w 0 -1 >"$CL_DIR/final"
agents=()
for i in 1 2 3; do agents+=(--agent "$CL_DIR/events-$(cl_node "$i").jsonl"); done
"$CL_PY" tests/lib/cltimeline.py --fault-ns "$t1" --fault "primary $(cl_node 1) killed (SIGKILL), c$nl leading" \
	--old "$(cl_ip 1)" --controller "$CL_CLOG" "${agents[@]}" --writer "$CL_DIR/writer.out" \
	--final "$CL_DIR/final" --dns-name "$CL_DNS_NAME" | sed 's/^/   /'

say "flatline status"
cl_ctl "$FL" status -c "$CL_CONF" | sed "s/^/   /"
