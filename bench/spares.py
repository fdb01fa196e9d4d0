#!/usr/bin/python3
"""bench/spares.sh's helper (Debian's python3 with python3-redis).

  spares.py probe --host H --port P --out FILE [--rate OPS]
      SET and GET in turn on 1,000 small keys, paced at RATE commands a second, one
      connection; every command timed (perf_counter_ns around the round trip) and
      written "wall_ns op latency_us", an error "wall_ns E reason". Stops on SIGTERM.

  spares.py row --clog LOG --t0-ns T0 --spare NODE [--lat FILE]
      One JSON object: the controller's events after T0 (failover_end, replica_deficit,
      spare_attached, replica_synced, replica_promotable, redundancy_restored), each as
      ms after T0, the sync's duration_ms and bytes, and the probe's latency
      (p50/p99/max, µs) before the attach (the new primary, no sync) and from the
      attach to replica_synced (the full sync)."""
import argparse
import datetime
import json
import signal
import sys
import time


def ts_ns(ts):
    d = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc)
    return int(d.timestamp()) * 1000000000 + d.microsecond * 1000


def probe(a):
    import redis
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    r = redis.Redis(host=a.host, port=a.port, socket_timeout=2, socket_connect_timeout=2)
    out = open(a.out, "w", buffering=1 << 16)
    gap = 1e9 / a.rate
    val = b"x" * 100
    i = 0
    nxt = time.monotonic_ns()
    while not stop:
        k = "lat:%d" % (i % 1000)
        op = "SET" if i % 2 == 0 else "GET"
        t = time.perf_counter_ns()
        try:
            if op == "SET":
                r.set(k, val)
            else:
                r.get(k)
            us = (time.perf_counter_ns() - t) / 1000.0
            out.write("%d %s %.1f\n" % (time.time_ns(), op, us))
        except Exception as e:  # the new primary is the one server here: record, go on
            out.write("%d E %s\n" % (time.time_ns(), type(e).__name__))
        i += 1
        nxt += gap
        d = nxt - time.monotonic_ns()
        if d > 0:
            time.sleep(d / 1e9)
        else:
            nxt = time.monotonic_ns()  # behind (a slow command): no burst to catch up
    out.close()


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def row(a):
    t0 = a.t0_ns
    first = {}
    extra = {}
    for line in open(a.clog, errors="replace"):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        k = ev.get("kind")
        if k not in ("failover_end", "replica_deficit", "spare_attached", "replica_synced",
                     "replica_promotable", "redundancy_restored", "spare_refused",
                     "spare_sync_failed", "spare_sync_aborted"):
            continue
        if k in ("spare_attached", "replica_synced", "replica_promotable") and \
                ev.get("instance") != a.spare:
            continue
        t = ts_ns(ev["ts"])
        if t < t0 or k in first:
            continue
        first[k] = t
        if k == "replica_synced":
            extra["sync_duration_ms"] = ev.get("duration_ms")
            extra["sync_bytes"] = ev.get("bytes")
        if k == "redundancy_restored":
            extra["restored_after_deficit_ms"] = ev.get("after_ms")
        if k.startswith("spare_") and k != "spare_attached":
            extra.setdefault("trouble", []).append("%s: %s" % (k, ev.get("reason")))
    res = {k + "_ms": round((t - t0) / 1e6, 1) for k, t in first.items()}
    res.update(extra)
    if a.lat:
        before, during, errs = [], [], 0
        att, syn = first.get("spare_attached"), first.get("replica_synced")
        for line in open(a.lat, errors="replace"):
            f = line.split()
            if len(f) < 3:
                continue
            t = int(f[0])
            if f[1] == "E":
                if att and syn and att <= t <= syn:
                    errs += 1
                continue
            us = float(f[2])
            if att and t < att:
                before.append(us)
            elif att and syn and t <= syn:
                during.append(us)
        for name, v in (("before", before), ("sync", during)):
            res["lat_%s_n" % name] = len(v)
            for p in (50, 99):
                res["lat_%s_p%d_us" % (name, p)] = pct(v, p)
            res["lat_%s_max_us" % name] = max(v) if v else None
        res["lat_sync_errors"] = errs
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, default=6379)
    p.add_argument("--out", required=True)
    p.add_argument("--rate", type=float, default=1000.0)
    r = sub.add_parser("row")
    r.add_argument("--clog", required=True)
    r.add_argument("--t0-ns", type=int, required=True)
    r.add_argument("--spare", required=True)
    r.add_argument("--lat")
    a = ap.parse_args()
    if a.cmd == "probe":
        probe(a)
    else:
        row(a)


if __name__ == "__main__":
    sys.exit(main())
