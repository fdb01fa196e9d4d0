#!/usr/bin/env bash
# Detection benchmark: kill() of a watched process -> the agent has the
# event in userspace, idle and during an exit storm; cost of the exit program.
# Then with a real redis-server and the agent reporting to a recording peer:
# SIGKILL -> the report reaches the peer, and SIGSTOP -> proc_hung.
# The agent's cluster file has the shipped defaults (write lease on, lease_ms 200);
# -L MS sets [agent] lease_ms (0: no lease), and the tables say so. Its lease program sits
# at egress of this machine's interfaces and is removed with its pins at the end.
# usage: bench/detect.sh [-n KILLS] [-r REDIS_KILLS] [-s STOPS] [-L LEASE_MS]
#        (root; prints tables)
set -euo pipefail
cd "$(dirname "$0")/.."
N=1000 RN=200 SN=20 LEASE=
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=$2; shift 2 ;;
	-r) RN=$2; shift 2 ;;
	-s) SN=$2; shift 2 ;;
	-L) LEASE=$2; shift 2 ;;
	*) echo "usage: $0 [-n KILLS] [-r REDIS_KILLS] [-s STOPS] [-L LEASE_MS]" >&2; exit 2 ;;
	esac
done
[ -z "$LEASE" ] || [[ $LEASE =~ ^[0-9]+$ ]] || { echo "bench-detect: -L takes ms" >&2; exit 2; }
SETTINGS="settings: the defaults (write lease 200 ms)"
[ -z "$LEASE" ] || [ "$LEASE" = 200 ] ||
	SETTINGS="settings that differ from the defaults: lease_ms = $LEASE"
# Node ids of this run only: their pins and locks are removed at the end.
NODE_A=bench$$ NODE_B=b$$
[ "$(id -u)" -eq 0 ] || { echo "bench-detect: run as root" >&2; exit 1; }
[ -n "${FL:-}" ] || make -s all tools
FL=${FL:-$PWD/build/flatline}
PY=/usr/bin/python3
dir=$(mktemp -d /tmp/flatline-bench.XXXXXX)
cgroot=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cgroot" ] || { echo "bench-detect: no cgroup v2 hierarchy mounted" >&2; exit 1; }
cg=$cgroot/flatline-bench-$$
stats_old=$(sysctl -n kernel.bpf_stats_enabled)
agent=
cleanup() {
	set +e # every step runs, whatever failed before
	[ -z "$agent" ] || { kill -TERM "$agent"; wait "$agent"; } 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$stats_old"
	rmdir "$cg" 2>/dev/null
	rm -rf "$dir"
	rm -rf "/sys/fs/bpf/flatline/$NODE_A" "/sys/fs/bpf/flatline/$NODE_B" \
		"/run/flatline/agent-$NODE_A.lock" "/run/flatline/agent-$NODE_B.lock"
}
trap cleanup EXIT
mkdir "$cg"

# Our program is the fl_proc_exit that appears with our agent (others may run).
exit_ids() { { bpftool prog show name fl_proc_exit --json 2>/dev/null || echo '[]'; } | jq -r 'if type == "array" then .[].id else .id end' | sort; }
ids_before=$(exit_ids)
"$FL" agent --node "$NODE_A" --watch-cgroup "$cg" --event-log "$dir/events.jsonl" 2>"$dir/agent.err" &
agent=$!
for _ in $(seq 500); do grep -q agent_start "$dir/events.jsonl" 2>/dev/null && break; sleep 0.01; done
grep -q agent_start "$dir/events.jsonl" || { cat "$dir/agent.err"; exit 1; }
sysctl -qw kernel.bpf_stats_enabled=1

prog_id=$(comm -13 <(echo "$ids_before") <(exit_ids) | head -n 1)
[ -n "$prog_id" ] || { echo "bench-detect: cannot find the agent's fl_proc_exit" >&2; exit 1; }
prog_stats() { bpftool prog show id "$prog_id" --json | jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"'; }
read -r t0 c0 < <(prog_stats)
build/tools/killbench --cgroup "$cg" -n "$N" > "$dir/idle.txt"
read -r t1 c1 < <(prog_stats)
build/tools/killbench --cgroup "$cg" -n "$N" --storm > "$dir/storm.txt" 2>"$dir/storm.err"
read -r t2 c2 < <(prog_stats)
# Unwatched exits alone: a 2 s storm around a single victim.
build/tools/killbench --cgroup "$cg" -n 1 --gap-us 2000000 --storm > "$dir/quiet.txt" 2>>"$dir/storm.err"
read -r t3 c3 < <(prog_stats)
sleep 0.2
drops=$(bpftool map dump pinned "/sys/fs/bpf/flatline/$NODE_A/fl_drops" --json |
	jq '[.[].formatted.values[].value] | add // 0')

"$PY" - "$dir" "$N" "$drops" "$t0" "$c0" "$t1" "$c1" "$t2" "$c2" "$t3" "$c3" <<'PYEOF'
import json, sys, datetime
d, n, drops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0, c0, t1, c1, t2, c2, t3, c3 = map(int, sys.argv[4:12])
def ts_ns(s):
    dt = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(dt.timestamp()) * 10**9 + dt.microsecond * 1000
ev = {}
other = 0
for line in open(f"{d}/events.jsonl"):
    e = json.loads(line)
    if e["kind"] == "proc_exit":
        ev[e["pid"]] = (ts_ns(e["ts"]), e["delay_us"])
    elif e["kind"] not in ("agent_start", "agent_stop"):
        other += 1
def load(name):
    return [tuple(map(int, l.split())) for l in open(f"{d}/{name}.txt")]
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
runs = {k: load(k) for k in ("idle", "storm")}
mine = {pid for r in list(runs.values()) + [load("quiet")] for pid, _ in r}
stray = sum(1 for pid in ev if pid not in mine) + other
storm_n = open(f"{d}/storm.err").read().strip().split("\n")[0]
print("agent without a cluster file (--watch-cgroup: no server, no controller, no lease)")
print(f"kill() of a watched process -> event handled by the agent ({n} kills each)")
print(f"{'run':<8} {'seen':>6} {'p50 us':>8} {'p99 us':>8} {'max us':>8} {'kernel->agent p50/p99 us':>26}")
for k, r in runs.items():
    lat = [(ev[p][0] - t) / 1000 for p, t in r if p in ev]
    dl = [ev[p][1] for p, _ in r if p in ev]
    print(f"{k:<8} {len(lat):>6} {pct(lat,50):>8.0f} {pct(lat,99):>8.0f} {max(lat):>8.0f} {pct(dl,50):>12.0f} / {pct(dl,99):<8.0f}")
print(f"storm: {storm_n}; events not from the victims: {stray}; ring buffer drops: {drops}")
ci, cq = c1 - c0, c3 - c2
print(f"fl_proc_exit per call (bpf_stats): an unwatched exit {((t3-t2)/cq if cq else 0):.0f} ns "
      f"(2 s storm, {cq} calls); a watched death, event and ring buffer wake-up included, "
      f"{((t1-t0)/ci if ci else 0):.0f} ns ({ci} calls)")
PYEOF

# --- a real redis-server, the agent with a cluster file -------------------
kill -TERM "$agent"; wait "$agent" 2>/dev/null; agent=
rport=$((21000 + RANDOM % 4000)) cport=$((25000 + RANDOM % 4000))
cat >"$dir/c.conf" <<EOC
[cluster]
secret = bench-secret-bench-secret
[agent]
${LEASE:+lease_ms = $LEASE}
event_log = $dir/agent.jsonl
[controller]
listen = 127.0.0.1:$cport
[node "$NODE_B"]
address = 127.0.0.1
redis = 127.0.0.1:$rport
EOC
chmod 600 "$dir/c.conf"
# The cluster's secret (the peer proves the node key) and this node named primary.
"$PY" tests/lib/recpeer.py "$cport" "$dir/rec.jsonl" --secret bench-secret-bench-secret --primary "$NODE_B" &
peer=$!
trap 'set +e; kill $peer 2>/dev/null; redis-cli -p $rport shutdown nosave >/dev/null 2>&1; cleanup' EXIT
sleep 0.3
"$FL" agent -c "$dir/c.conf" --node "$NODE_B" 2>"$dir/agent2.err" &
agent=$!
"$PY" - "$dir" "$rport" "$RN" "$SN" "$SETTINGS" <<'PYEOF'
import json, os, signal, statistics, subprocess, sys, time
d, port, rn, sn, settings = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def start():
    p = subprocess.Popen(["redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", d, "--logfile", f"{d}/r.log"])
    return p
class Tail:
    def __init__(self, path):
        self.path, self.pos = path, 0
    def wait(self, pred, limit=10.0):
        end = time.time() + limit
        while time.time() < end:
            try:
                with open(self.path) as f:
                    f.seek(self.pos)
                    for line in f:
                        if not line.endswith("\n"):
                            break
                        self.pos += len(line)
                        r = json.loads(line)
                        if pred(r):
                            return r
            except FileNotFoundError:
                pass
            time.sleep(0.002)
        raise SystemExit("bench: timed out waiting")
rec, log = Tail(f"{d}/rec.jsonl"), Tail(f"{d}/agent.jsonl")
def ts(r):
    import datetime
    return datetime.datetime.strptime(r["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
lat = []
for i in range(rn):
    p = start()
    pid = str(p.pid)
    rec.wait(lambda r: r["cmd"] == "REPORT" and r["args"].get("proc") == "up" and r["args"].get("pid") == pid)
    time.sleep(0.02)
    t0 = time.time()
    os.kill(p.pid, signal.SIGKILL)
    r = rec.wait(lambda r: r["cmd"] == "REPORT" and r["args"].get("proc") == "down")
    lat.append((r["t"] - t0) * 1000)
    p.wait()
def pct(v, q):
    v = sorted(v); return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]
print()
print(f"agent with a cluster file; {settings}")
print(f"SIGKILL of redis-server -> its REPORT received by the controller peer ({rn} kills)")
print(f"{'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
print(f"{pct(lat,50):>8.2f} {pct(lat,99):>8.2f} {max(lat):>8.2f}")
p = start()
rec.wait(lambda r: r["cmd"] == "REPORT" and r["args"].get("proc") == "up" and r["args"].get("pid") == str(p.pid))
hung = []
for i in range(sn):
    time.sleep(0.3)
    t0 = time.time()
    os.kill(p.pid, signal.SIGSTOP)
    r = log.wait(lambda r: r["kind"] == "proc_hung")
    hung.append((ts(r) - t0) * 1000)
    os.kill(p.pid, signal.SIGCONT)
    log.wait(lambda r: r["kind"] == "proc_up")
p.kill(); p.wait()
print()
print(f"SIGSTOP -> proc_hung (cause stopped) at stop_grace_ms 50 ({sn} stops)")
print(f"{'mean ms':>8} {'stdev ms':>9} {'min ms':>8} {'max ms':>8}")
print(f"{statistics.mean(hung):>8.0f} {statistics.stdev(hung):>9.0f} {min(hung):>8.0f} {max(hung):>8.0f}")
PYEOF
