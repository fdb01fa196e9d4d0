#!/usr/bin/python3
"""The campaign's history checker (bench/campaign.sh; tests/integration/test_campaign.sh).

Reads what a campaign recorded and judges it against what the docs promise:

  --history FILE...   the clients' histories (tests/lib/histclient.py): every RPUSH with
                      its index (the length it answered), every LLEN, every ROLE sample
  --nemesis FILE      the faults, one JSON line each: kind, node (the target), primary
                      (the target was the primary when the fault began), t0, t1 (ns),
                      done (false: refused, e.g. a switchover inside failover_block_ms)
  --events FILE...    the controllers' event logs (promotions: replica_selected, promoted)
  --sentinel-log FILE...  or Redis Sentinels' logs (+promoted-slave / +switch-master)
  --nodes ID=HOST:PORT,...  which server is which node
  --final FILE        {"primary": ID, "lists": {KEY: [VALUE, ...]}}: the final primary's lists
  --lease-ms N        the lease (0 = off): the bound on an isolated primary's acknowledgements

Promotion instants: the controller's replica_selected of every failover that ended in
promoted (the earliest instant the new primary could take writes), or Sentinel's
+promoted-slave. From the first promotion of node P on, every other node is SUPERSEDED
until it is promoted again itself.

What it counts (the JSON line at the end):
  acked                 acknowledged writes
  lost                  acknowledged writes the final primary lacks (all causes)
  lost_within_bound     of those: sent before the promotion that superseded their server
                        (replication lag at a crash, the lease's window): reported, allowed
  lost_after_promotion  ANOMALY: sent after their server was superseded, and lost
  lost_beyond_lease     ANOMALY (lease on): acknowledged by a server more than the lease
                        (+1/16 drift, +100 ms) after its host was cut off, and lost
  two_primaries         ANOMALY: two different values acknowledged at one index of one key,
                        or a write acknowledged by a superseded server (lost or not)
  stale_reads           reads shorter than what the same client had seen acknowledged
                        there (after a failover that lost writes within bound, allowed);
                        ANOMALY when served by a superseded server
  role_overlap_ms       time two servers answered ROLE master at once (the lease makes that
                        harmless: reported, not counted)
  false_failovers       ANOMALY: promotions no failover-capable fault explains
  anomalies             the sum of the ANOMALY counts
"""
import argparse
import datetime
import json
import re
import statistics
import sys
from collections import defaultdict

# Faults that may legitimately move the primary when their target is the primary.
CAPABLE = {"server_kill", "server_stop", "server_restart", "host_kill", "cut_full", "cut_out",
           "split", "switchover", "delay"}
EXPLAIN_AFTER_NS = 15 * 10**9  # a failover this long after a capable fault ended is still its


def ts_ns(s):
    d = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(d.timestamp()) * 10**9 + d.microsecond * 1000


def read_jsonl(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a kill at the end of a history
    return out


def promotions_from_events(paths):
    """[(t_ns, node)] from controller event logs: replica_selected of each failover that
    ended in promoted (HA logs repeat one failover in several files: one entry each)."""
    proms = {}
    for p in paths:
        pend = {}
        for e in read_jsonl(p):
            k, inst = e.get("kind"), e.get("instance") or e.get("node_promoted") or e.get("to")
            if k == "replica_selected":
                pend[e.get("shard", "")] = (ts_ns(e["ts"]), e.get("instance") or e.get("to"))
            elif k == "promoted":
                t, node = pend.pop(e.get("shard", ""), (ts_ns(e["ts"]), inst))
                node = inst or node
                # the same failover seen by two controllers' logs: keep the earliest
                key = (node, e.get("epoch"))
                proms[key] = min(t, proms.get(key, t))
    return sorted((t, n) for (n, _), t in proms.items())


SENT_RE = re.compile(r"^\d+:X (\d+ \w+ \d+ [\d:.]+) [#*] \+(promoted-slave|switch-master) (.*)$")


def promotions_from_sentinel(paths, addr_node):
    proms = {}
    for p in paths:
        with open(p, errors="replace") as f:
            for line in f:
                m = SENT_RE.match(line.strip())
                if not m:
                    continue
                t = datetime.datetime.strptime(m.group(1), "%d %b %Y %H:%M:%S.%f")
                t_ns = int(t.astimezone(datetime.timezone.utc).timestamp() * 1e9)
                f_ = m.group(3).split()
                if m.group(2) == "promoted-slave":  # slave IP:PORT IP PORT @ name IP PORT
                    addr = "%s:%s" % (f_[1], f_[2])
                else:  # name oldip oldport newip newport
                    addr = "%s:%s" % (f_[3], f_[4])
                node = addr_node.get(addr)
                if node is None:
                    continue
                # one failover: the earliest line of any sentinel for that node, per second
                key = (node, t_ns // 10**10)
                proms[key] = min(t_ns, proms.get(key, t_ns))
    return sorted((t, n) for (n, _), t in proms.items())


def superseded_since(proms, node, t):
    """The promotion instant since which NODE has been superseded at time T, or None."""
    last_other = last_self = None
    for pt, pn in proms:
        if pt > t:
            break
        if pn == node:
            last_self = pt
        else:
            last_other = pt
    if last_other is not None and (last_self is None or last_other > last_self):
        return last_other
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--history", nargs="+", required=True)
    ap.add_argument("--nemesis", required=True)
    ap.add_argument("--events", nargs="*", default=[])
    ap.add_argument("--sentinel-log", nargs="*", default=[])
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--final", required=True)
    ap.add_argument("--lease-ms", type=int, default=500)
    ap.add_argument("--seed", default="")
    ap.add_argument("--anomalies-out", help="write each anomaly as a JSON line here")
    a = ap.parse_args()

    addr_node = {}
    for kv in a.nodes.split(","):
        n, _, hp = kv.partition("=")
        addr_node[hp] = n
    hist = []
    for p in a.history:
        hist.extend(read_jsonl(p))
    faults = read_jsonl(a.nemesis)
    with open(a.final) as f:
        final = json.load(f)
    lists = {k: set(v) for k, v in final["lists"].items()}
    if a.sentinel_log:
        proms = promotions_from_sentinel(a.sentinel_log, addr_node)
    else:
        proms = promotions_from_events(a.events)

    found = []  # (what, detail)

    def anomaly(what, **kv):
        kv["what"] = what
        found.append(kv)

    writes = [h for h in hist if h.get("op") == "w"]
    acked = [w for w in writes if w.get("ok") == 1]
    lost = [w for w in acked if w["v"] not in lists.get(w["k"], ())]

    # Writes acknowledged by a superseded server: two primaries at once.
    superseded_acks = 0
    for w in acked:
        node = addr_node.get(w["a"])
        p = superseded_since(proms, node, w["t0"])
        if p is not None:
            superseded_acks += 1
            if superseded_acks <= 20:
                anomaly("ack_by_superseded", node=node, key=w["k"], value=w["v"],
                        ms_after_promotion=round((w["t0"] - p) / 1e6, 3))
    # Two different values at one index of one key: a divergence. When the first value's
    # server acknowledged nothing more after the second value's server took that index,
    # the first is a write lost at a failover (counted under lost); when it went on
    # acknowledging, two servers took writes at once.
    acks_by_server = defaultdict(list)
    for w in acked:
        acks_by_server[w["a"]].append(w["t1"])
    for v in acks_by_server.values():
        v.sort()
    at_index = defaultdict(list)
    for w in acked:
        at_index[(w["k"], w["n"])].append(w)
    index_conflicts = 0
    for (k, n), ws in sorted(at_index.items()):
        if len({w["v"] for w in ws}) < 2:
            continue
        ws.sort(key=lambda w: w["t1"])
        first, later = ws[0], ws[-1]
        if first["a"] == later["a"]:
            continue  # one server lost the list and took the index again (a restart)
        after = acks_by_server[first["a"]]
        if after and after[-1] > later["t1"] and \
                superseded_since(proms, addr_node.get(first["a"]), later["t1"]) is None:
            # both took writes at once and no promotion says which one was right
            index_conflicts += 1
            if index_conflicts <= 20:
                anomaly("two_values_at_index", key=k, index=n - 1,
                        values=sorted({w["v"] for w in ws}))

    lost_within = lost_after = lost_beyond = 0
    cuts = [f for f in faults if f["kind"] in ("cut_full", "cut_out", "cut_in", "cut_ctl",
                                                "cut_peers", "split", "host_kill")]
    lease_bound_ns = (a.lease_ms + a.lease_ms // 16 + 100) * 10**6
    for w in lost:
        node = addr_node.get(w["a"])
        p = superseded_since(proms, node, w["t0"])
        if p is not None:
            lost_after += 1
            continue
        beyond = False
        if a.lease_ms > 0:
            for f in cuts:
                if f.get("node") == node and f["t0"] + lease_bound_ns < w["t0"] < f["t1"]:
                    beyond = True
        if beyond:
            lost_beyond += 1
            if lost_beyond <= 20:
                anomaly("lost_beyond_lease", node=node, key=w["k"], value=w["v"])
        else:
            lost_within += 1

    # Stale reads: shorter than what the same client saw acknowledged on that key.
    seen = defaultdict(int)  # (client, key) -> longest acknowledged length
    stale = stale_bad = 0
    for h in sorted((h for h in hist if h.get("op") in ("w", "r") and h.get("ok") == 1),
                    key=lambda h: h["t1"]):
        ck = (h["c"], h["k"])
        if h["op"] == "w":
            seen[ck] = max(seen[ck], h["n"])
        elif h["n"] < seen[ck]:
            stale += 1
            node = addr_node.get(h["a"])
            if superseded_since(proms, node, h["t0"]) is not None:
                stale_bad += 1
                if stale_bad <= 20:
                    anomaly("stale_read_from_superseded", node=node, key=h["k"], got=h["n"],
                            had_seen=seen[ck])

    # ROLE master at once on two servers (from the co-located clients' samples, every
    # 100 ms; a sample older than 300 ms says nothing: that server may be gone).
    roles = sorted((h["t0"], addr_node.get(h["a"]), h["role"]) for h in hist
                   if h.get("op") == "role")
    overlap_ns, step, fresh = 0, 50 * 10**6, 300 * 10**6
    if roles:
        last, j = {}, 0
        for t in range(roles[0][0], roles[-1][0], step):
            while j < len(roles) and roles[j][0] <= t:
                last[roles[j][1]] = (roles[j][0], roles[j][2])
                j += 1
            if sum(1 for ts, r in last.values() if r == "master" and t - ts <= fresh) >= 2:
                overlap_ns += step

    # Failovers no capable fault explains.
    false_fo = 0
    for pt, pn in proms:
        ok = any(f["kind"] in CAPABLE and f.get("done", True)
                 and (f.get("primary") or f["kind"] == "switchover")
                 and f["t0"] <= pt <= f["t1"] + EXPLAIN_AFTER_NS for f in faults)
        if not ok:
            false_fo += 1
            anomaly("false_failover", node=pn, t_ns=pt)

    # Unavailability per fault: the longest time without an acknowledged write by the
    # clients that follow the primary (not the co-located ones), from the fault's start
    # to 10 s after its end.
    follow_acks = sorted(w["t1"] for w in acked if not w["c"].startswith("colo"))
    per_kind = defaultdict(list)
    faults.sort(key=lambda f: f["t0"])
    for fi, f in enumerate(faults):
        # what follows the fault until the next one begins (at most 10 s) is the fault's
        lo, hi = f["t0"], f["t1"] + 10 * 10**9
        if fi + 1 < len(faults):
            hi = min(hi, faults[fi + 1]["t0"])
        if follow_acks:
            hi = min(hi, follow_acks[-1])  # the clients stop at the end of the campaign
        ts = [lo] + [t for t in follow_acks if lo <= t <= hi]
        nxt = [t for t in follow_acks if t > hi][:1]
        ts += nxt or [hi]
        gap = max(b - a_ for a_, b in zip(ts, ts[1:]))
        fos = sum(1 for pt, _ in proms if lo <= pt <= hi)
        per_kind[f["kind"]].append((gap / 1e6, fos, f.get("primary", False)))

    print("%-16s %6s %10s %12s %12s" % ("fault", "count", "failovers", "unavail p50", "unavail max"))
    for k in sorted(per_kind):
        v = per_kind[k]
        gaps = [g for g, _, _ in v]
        print("%-16s %6d %10d %9.0f ms %9.0f ms" % (k, len(v), sum(f for _, f, _ in v),
                                                   statistics.median(gaps), max(gaps)))
    for x in found[:40]:
        print("anomaly: " + json.dumps(x))
    if a.anomalies_out:
        with open(a.anomalies_out, "w") as f:
            for x in found:
                f.write(json.dumps(x) + "\n")
    two = superseded_acks + index_conflicts
    result = {
        "seed": a.seed, "faults": len(faults), "fault_kinds": len(per_kind),
        "acked": len(acked), "lost": len(lost), "lost_within_bound": lost_within,
        "lost_after_promotion": lost_after, "lost_beyond_lease": lost_beyond,
        "two_primaries": two, "stale_reads": stale, "stale_reads_bad": stale_bad,
        "role_overlap_ms": round(overlap_ns / 1e6), "promotions": len(proms),
        "false_failovers": false_fo,
    }
    result["anomalies"] = lost_after + lost_beyond + two + stale_bad + false_fo
    print(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
