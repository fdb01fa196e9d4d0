#!/usr/bin/python3
"""Failover benchmark driver (bench/failover.sh sets up the servers, the
controller and the agents). Per run: a writer follows the primary through the
controller's Sentinel API at RATE writes/s (tests/lib/flwriter.py); the primary
is killed with SIGKILL; an independent client tries a write on every replica in a
tight loop until one accepts it: that is the failover time. Then the writer's
acknowledged values are looked up on the new primary: the ones missing are lost.
The old primary is restarted (empty) and must come back as a replica."""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import redis

ctl_port = int(sys.argv[1])
ports = [int(p) for p in sys.argv[2].split(",")]
runs = int(sys.argv[3])
rate = float(sys.argv[4])
workdir = sys.argv[5]
service = "s"
here = os.path.dirname(os.path.abspath(__file__))

ctl = redis.Redis(port=ctl_port, socket_timeout=2)


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
    raise SystemExit("bench-failover: timed out waiting for " + what)


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


def start_redis(port):
    subprocess.run(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--repl-diskless-sync-delay", "0",
                    "--dir", workdir, "--dbfilename", "dump-%d.rdb" % port,
                    "--pidfile", "%s/redis-%d.pid" % (workdir, port),
                    "--logfile", "%s/redis-%d.log" % (workdir, port), "--daemonize", "yes"],
                   check=True)


writers = []


@__import__("atexit").register
def stop_writers():
    for w in writers:
        if w.poll() is None:
            w.kill()


times, lost, acked_n, gaps = [], [], [], []
for run in range(runs):
    wait(healthy, what="a healthy shard before run %d" % run)
    old = primary_port()
    others = [p for p in ports if p != old]
    key = "bench:%d" % run
    acked_file = "%s/acked-%d" % (workdir, run)
    w = subprocess.Popen([sys.executable, os.path.join(here, "..", "tests", "lib", "flwriter.py"), "--sentinel",
                          str(ctl_port), "--service", service, "--key", key, "--rate",
                          str(rate), "--out", acked_file], stdout=subprocess.PIPE)
    writers.append(w)
    time.sleep(0.5)
    probes = [redis.Redis(port=p, socket_timeout=1) for p in others]
    for c in probes:
        c.ping()
    pid = int(redis.Redis(port=old).info("server")["process_id"])
    t0 = time.monotonic_ns()
    os.kill(pid, signal.SIGKILL)
    done = None
    while done is None:
        for p, c in zip(others, probes):
            try:
                c.set("probe", run)
                done = time.monotonic_ns()
                new = p
                break
            except (redis.exceptions.ResponseError, redis.exceptions.ConnectionError,
                    redis.exceptions.TimeoutError):
                pass  # READONLY until promoted; the promotion kills normal clients
        if time.monotonic_ns() - t0 > 10e9:
            raise SystemExit("bench-failover: no replica accepted a write within 10 s")
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


def pct(v, p):
    s = sorted(v)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


print()
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
print(json.dumps({"runs": runs, "writer_gap_ms": {"p50": pct(gaps, 50), "max": max(gaps)}, "failover_ms": {"p50": pct(times, 50), "p99": pct(times, 99),
                                                 "max": max(times)},
                  "lost_per_failover": {"mean": statistics.mean(lost), "max": max(lost)}}))
