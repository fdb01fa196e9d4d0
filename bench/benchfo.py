#!/usr/bin/python3
"""Driver of bench/failover.sh, which starts three redis-server on loopback, the
controller and the agents, then runs this with the fault to measure first:

kill CTL_PORT PORTS DIR RUNS RATE. Per run: a writer follows the primary
  through the controller's Sentinel API at RATE writes/s (tests/lib/flwriter.py);
  the primary is killed with SIGKILL; an independent client tries a write on every
  replica in a tight loop until one accepts it: that is the failover time. Then the
  writer's acknowledged values are looked up on the new primary: the ones missing
  are lost. The old primary is restarted (empty) and must come back as a replica.

stop CTL_PORT PORTS DIR STOPS SLOW_RUNS SECS (bench/hung.sh). Three measures:
  1. SIGSTOP of the primary: from the kill() to the agent's proc_hung line (its ts)
     and to the first write a replica accepts (the same independent client):
     promoted. SIGCONT afterwards; the controller demotes the old primary before
     the next run.
  2. Slow commands: Lua loops of 0.5, 1, 2 and 4 s on the primary; a failover they
     caused is a change of primary or a failover_start in the controller log.
  3. bpf_stats of the fl_sched_* programs over SECS seconds while two processes
     ping-pong a byte over pipes (a context switch each way), with the host's switch
     rate from /proc/stat."""
import atexit
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

import redis

fault = sys.argv[1]
ctl_port = int(sys.argv[2])
ports = [int(p) for p in sys.argv[3].split(",")]
workdir = sys.argv[4]
service = "s"
here = os.path.dirname(os.path.abspath(__file__))
me = {"kill": "bench-failover", "stop": "bench-hung"}.get(fault, "bench-failover")
ctl = redis.Redis(port=ctl_port, socket_timeout=2)
node_prefix = os.environ.get("BENCH_NODE", "n")
# The settings that differ from the shipped defaults (bench/failover.sh): in every table.
settings = os.environ.get("BENCH_SETTINGS", "settings: unknown (run by bench/failover.sh)")


def primary_port():
    a = ctl.sentinel_get_master_addr_by_name(service)
    return int(a[1]) if a else None


def info(port):
    try:
        return redis.Redis(port=port, socket_timeout=0.5).info("replication")
    except redis.exceptions.RedisError:
        return None


def wait(cond, limit=30.0, what="condition"):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.01)
    raise SystemExit("%s: timed out waiting for %s" % (me, what))


def healthy():
    p = primary_port()
    if not p:
        return False
    for q in ports:
        if q == p:
            continue
        i = info(q)
        if not i or i.get("master_port") != p or i.get("master_link_status") != "up":
            return False
    st = json.loads(ctl.execute_command("FLATLINE", "STATUS", "JSON"))
    sh = st["shards"][0]
    return sh["failover"] == "none" and all(n["health"] == "ok" for n in sh["nodes"])


def pct(v, p):
    s = sorted(v)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def replicas(old):
    """The other servers' ports, and a connected client on each."""
    others = [p for p in ports if p != old]
    probes = [redis.Redis(port=p, socket_timeout=1) for p in others]
    for c in probes:
        c.ping()
    return others, probes


def server_pid(port):
    return int(redis.Redis(port=port).info("server")["process_id"])


def write_accepted(others, probes, run, t0, on_timeout):
    """The independent client: a write tried on every replica in a tight loop until
    one accepts it. Returns when (monotonic ns) and which port; on_timeout() after 10 s."""
    while True:
        for p, c in zip(others, probes):
            try:
                c.set("probe", run)
                return time.monotonic_ns(), p
            except (redis.exceptions.ResponseError, redis.exceptions.ConnectionError,
                    redis.exceptions.TimeoutError):
                pass  # READONLY until promoted; the promotion kills normal clients
        if time.monotonic_ns() - t0 > 10e9:
            on_timeout()


# ---- kill -9 ----

def start_redis(port):
    subprocess.run(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--repl-diskless-sync-delay", "0",
                    "--dir", workdir, "--dbfilename", "dump-%d.rdb" % port,
                    "--pidfile", "%s/redis-%d.pid" % (workdir, port),
                    "--logfile", "%s/redis-%d.log" % (workdir, port), "--daemonize", "yes"],
                   check=True)


writers = []


@atexit.register
def stop_writers():
    for w in writers:
        if w.poll() is None:
            w.kill()


def no_write_after_kill():
    raise SystemExit("bench-failover: no replica accepted a write within 10 s")


def bench_kill(runs, rate):
    times, lost, acked_n, gaps = [], [], [], []
    for run in range(runs):
        wait(healthy, what="a healthy shard before run %d" % run)
        old = primary_port()
        key = "bench:%d" % run
        acked_file = "%s/acked-%d" % (workdir, run)
        w = subprocess.Popen([sys.executable, os.path.join(here, "..", "tests", "lib", "flwriter.py"),
                              "--sentinel", str(ctl_port), "--service", service, "--key", key,
                              "--rate", str(rate), "--out", acked_file], stdout=subprocess.PIPE)
        writers.append(w)
        time.sleep(0.5)
        others, probes = replicas(old)
        pid = server_pid(old)
        t0 = time.monotonic_ns()
        os.kill(pid, signal.SIGKILL)
        done, new = write_accepted(others, probes, run, t0, no_write_after_kill)
        times.append((done - t0) / 1e6)
        wait(lambda: primary_port() == new, what="the Sentinel API to name the new primary")
        time.sleep(0.5)  # the writer follows and keeps writing
        w.send_signal(signal.SIGTERM)
        out, _ = w.communicate()
        summary = json.loads(out)
        gaps.append(summary["max_gap_ms"])
        rc = redis.Redis(port=new)
        present = set(int(x) for x in rc.lrange(key, 0, -1))
        acked = [int(x) for x in open(acked_file)]
        lost.append(sum(1 for v in acked if v not in present))
        acked_n.append(len(acked))
        start_redis(old)
        wait(lambda: (info(old) or {}).get("role") == "slave" and
             (info(old) or {}).get("master_port") == new, what="the old primary demoted")
        print("run %2d: %s -> %s  write accepted after %7.2f ms  acked %5d  lost %d  "
              "writer's longest gap %.1f ms" % (run + 1, old, new, times[-1], len(acked), lost[-1],
                                                gaps[-1]), file=sys.stderr)

    print()
    print(settings)
    print("kill -9 of the primary -> a replica accepts a write (independent client), %d runs" % runs)
    print("  %-8s %-8s %-8s %-8s %-8s" % ("min", "p50", "p99", "max", "mean"))
    print("  %-8.2f %-8.2f %-8.2f %-8.2f %-8.2f  ms" % (min(times), pct(times, 50), pct(times, 99),
                                                      max(times), statistics.mean(times)))
    print()
    print("acknowledged writes lost per failover, writer at %d writes/s through the Sentinel API" %
          rate)
    print("  %-8s %-8s %-8s %-8s %-10s" % ("min", "p50", "max", "mean", "acked/run"))
    print("  %-8d %-8d %-8d %-8.2f %-10d" % (min(lost), pct(lost, 50), max(lost),
                                             statistics.mean(lost), statistics.mean(acked_n)))
    print()
    print("the writer's longest time without an acknowledged write (Sentinel client, ms)")
    print("  %-8s %-8s %-8s %-8s" % ("min", "p50", "p99", "max"))
    print("  %-8.1f %-8.1f %-8.1f %-8.1f" % (min(gaps), pct(gaps, 50), pct(gaps, 99), max(gaps)))
    print(json.dumps({"settings": settings, "runs": runs, "writer_gap_ms": {"p50": pct(gaps, 50), "max": max(gaps)},
                      "failover_ms": {"p50": pct(times, 50), "p99": pct(times, 99),
                                      "max": max(times)},
                      "lost_per_failover": {"mean": statistics.mean(lost), "max": max(lost)}}))


# ---- SIGSTOP, slow commands, sched cost ----

LOOP = """local s=redis.call("TIME") local t0=s[1]*1000000+s[2]
repeat local t=redis.call("TIME") until t[1]*1000000+t[2]-t0 >= tonumber(ARGV[1])*1000
return 1"""


def node_of(port):
    return "%s%d" % (node_prefix, ports.index(port) + 1)


def events(path, kind):
    out = []
    try:
        with open(path) as f:
            for line in f:
                e = json.loads(line)
                if e.get("kind") == kind:
                    out.append(e)
    except FileNotFoundError:
        pass
    return out


def ts_s(e):
    # "2026-12-01T01:47:08.830252Z" -> unix seconds
    return datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=timezone.utc).timestamp()


def prog_stats():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], check=True, capture_output=True,
                         text=True).stdout
    st = {}
    for p in json.loads(out):
        if p.get("name", "").startswith("fl_sched_"):
            a = st.setdefault(p["name"], [0, 0, 0])
            a[0] += p.get("run_time_ns", 0)
            a[1] += p.get("run_cnt", 0)
            a[2] += 1
    return st


def ctxt():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])


def bench_stop(stops, slow_runs, secs):
    # 1. SIGSTOP -> proc_hung, -> promoted
    hung_ms, promo_ms, causes = [], [], []
    for run in range(stops):
        wait(healthy, what="a healthy shard before stop %d" % run)
        time.sleep(0.3)  # past failover_block_ms (100) since the last failover
        old = primary_port()
        others, probes = replicas(old)
        log = "%s/events-%s.jsonl" % (workdir, node_of(old))
        seen = len(events(log, "proc_hung"))
        pid = server_pid(old)

        def no_write_after_stop():
            os.kill(pid, signal.SIGCONT)
            raise SystemExit("bench-hung: no replica accepted a write within 10 s of SIGSTOP")

        t0_wall, t0 = time.time(), time.monotonic_ns()
        os.kill(pid, signal.SIGSTOP)
        done, _ = write_accepted(others, probes, run, t0, no_write_after_stop)
        promo_ms.append((done - t0) / 1e6)
        wait(lambda: len(events(log, "proc_hung")) > seen, 5, "proc_hung")
        e = events(log, "proc_hung")[seen]
        hung_ms.append((ts_s(e) - t0_wall) * 1000)
        causes.append(e.get("cause"))
        os.kill(pid, signal.SIGCONT)
        wait(lambda: (info(old) or {}).get("role") == "slave", what="the old primary demoted")
        print("stop %2d: proc_hung after %6.1f ms (cause %s), write accepted after %6.1f ms" %
              (run + 1, hung_ms[-1], causes[-1], promo_ms[-1]), file=sys.stderr)

    # 2. Slow commands on the primary
    slow = {}
    for secs_cmd in (0.5, 1, 2, 4):
        fails = busy = hung = 0
        for run in range(slow_runs):
            wait(healthy, what="a healthy shard before a slow command")
            old = primary_port()
            log = "%s/events-%s.jsonl" % (workdir, node_of(old))
            nb, nh = len(events(log, "proc_busy")), len(events(log, "proc_hung"))
            nf = len(events("%s/controller.jsonl" % workdir, "failover_start"))
            redis.Redis(port=old, socket_timeout=30).eval(LOOP, 0, int(secs_cmd * 1000))
            time.sleep(0.5)  # anything the silence set off has been decided
            busy += len(events(log, "proc_busy")) > nb
            hung += len(events(log, "proc_hung")) > nh
            fails += (primary_port() != old or
                      len(events("%s/controller.jsonl" % workdir, "failover_start")) > nf)
        slow[secs_cmd] = (fails, busy, hung)

    # 3. Cost of the scheduler programs
    pp = subprocess.Popen([sys.executable, "-c", """
import os, sys, time
r1, w1 = os.pipe(); r2, w2 = os.pipe()
if os.fork() == 0:
    os.close(w1)
    while os.read(r1, 1):  # until the parent is gone
        os.write(w2, b"x")
    os._exit(0)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    os.write(w1, b"x"); os.read(r2, 1)
""", str(secs + 1)])
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
    time.sleep(0.5)
    s0, c0, t0 = prog_stats(), ctxt(), time.monotonic()
    time.sleep(secs)
    s1, c1, t1 = prog_stats(), ctxt(), time.monotonic()
    pp.wait()
    rate = (c1 - c0) / (t1 - t0)

    print()
    print(settings)
    print("SIGSTOP of the primary, %d stops (stop_grace_ms 50; ping 100 ms x hung_after 5)" % stops)
    print("  %-30s %-8s %-8s %-8s %-8s" % ("", "min", "p50", "p99", "max"))
    for name, v in (("kill -> proc_hung (agent)", hung_ms), ("kill -> write accepted", promo_ms)):
        print("  %-30s %-8.1f %-8.1f %-8.1f %-8.1f ms" % (name, min(v), pct(v, 50), pct(v, 99),
                                                         max(v)))
    print("  causes: %s" % ", ".join(sorted(set(str(c) for c in causes))))
    print()
    print("slow commands on the primary (Lua loop), %d runs each (busy_max_ms 5000; %s)" %
          (slow_runs, settings))
    print("  %-10s %-10s %-10s %-10s" % ("command", "failovers", "proc_busy", "proc_hung"))
    for k, (f, b, h) in slow.items():
        print("  %-10s %-10d %-10d %-10d" % ("%g s" % k, f, b, h))
    print()
    print("bpf/sched.bpf.c per call (bpf_stats, %d agents' copies summed), %.0f s of pipe ping-pong"
          % (max(a[2] for a in s1.values()), secs))
    print("  host context switches: %.0f /s" % rate)
    print("  %-18s %-12s %-12s %-10s" % ("program", "calls/s", "ns/call", "copies"))
    cost = {}
    for name in sorted(s1):
        dt = s1[name][0] - s0.get(name, [0, 0])[0]
        dn = s1[name][1] - s0.get(name, [0, 0])[1]
        cost[name] = dt / dn if dn else 0
        print("  %-18s %-12.0f %-12.1f %-10d" % (name, dn / (t1 - t0), cost[name], s1[name][2]))
    print(json.dumps({"settings": settings, "stop_hung_ms": {"p50": pct(hung_ms, 50), "max": max(hung_ms)},
                      "stop_promoted_ms": {"p50": pct(promo_ms, 50), "p99": pct(promo_ms, 99),
                                           "max": max(promo_ms)},
                      "slow_failovers": {str(k): v[0] for k, v in slow.items()},
                      "ctxt_per_s": rate, "ns_per_call": cost}))


if fault == "kill":
    bench_kill(int(sys.argv[5]), float(sys.argv[6]))
elif fault == "stop":
    bench_stop(int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7]))
else:
    raise SystemExit("usage: benchfo.py kill|stop CTL_PORT PORTS DIR ... (see bench/failover.sh)")
