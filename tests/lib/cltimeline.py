#!/usr/bin/python3
"""A failover as a timeline, read from the event logs (controller and agents) and the
cluster writer's record (tests/lib/clwriter.py), relative to the fault (make demo,
tests/integration/test_cluster.sh, bench/compare.sh).

  cltimeline.py --fault-ns T0 --fault "primary n1 killed (SIGKILL)" --old ADDR
                --controller LOG [--agent LOG]... --writer OUT [--final FILE]
                [--dns-name NAME] [--json]

--old is the failed primary's address (host, or host:port); --final lists the values
that are on the new primary at the end (LRANGE), one per line: an acknowledged value
missing from it is a lost write. Sentinel's log (--sentinel-log, repeatable) is read
for +sdown/+odown/+switch-master when comparing with Redis Sentinel.

--redis-log (repeatable) reads a server's own log for "MASTER MODE enabled" (Valkey 8:
"PRIMARY MODE enabled"; the moment it became a primary, ms resolution): master_mode_ms.

Prints the timeline, or with --json one object: detect_ms (the controller's node_down,
or Sentinel's first +odown), kernel_ms (the agent's first event), promoted_ms, dns_ms,
first_write_ms (first acknowledged write on another server than --old), max_gap_ms,
acked, lost, lost_after_fault (acknowledged after the fault, yet lost), lost_max_age_ms,
failovers."""
import argparse
import datetime
import json
import re
import sys

WATCH_AGENT = {"proc_exit", "oom_kill", "proc_hung", "proc_up", "proc_down", "peer_down",
               "role_change", "self_fenced", "self_fence_lifted"}
WATCH_CTL = {"node_down", "agent_lost", "failover_start", "replica_selected", "promoted",
             "promote_failed", "switch_master", "replicas_repointed", "failover_end",
             "failover_abort", "dns_updated", "dns_repaired", "dns_failed", "old_primary_demoted",
             "node_up", "tilt_start", "controller_start", "controller_ready",
             "primary_discovered", "repoint_failed", "failover_blocked",
             # redundancy restored (ctl_spares.c)
             "replica_deficit", "spare_attached", "spare_refused", "spare_sync_aborted",
             "spare_sync_failed", "replica_synced", "replica_promotable",
             "redundancy_restored", "provision_requested"}


def ts_ns(ts):
    d = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc)
    return int(d.timestamp()) * 1000000000 + d.microsecond * 1000


def read_jsonl(path):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


MONTHS = {m: i + 1 for i, m in enumerate(
    "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}
SENT_RE = re.compile(r"^\d+:[XMSC] (\d+) (\w+) (\d+) (\d+):(\d+):(\d+)\.(\d+) [#*.-] (\S+) (.*)$")


def read_sentinel(path):
    """(t_ns, event, rest) from a redis-sentinel or redis-server log (local time, ms):
    event is the first word after the level mark."""
    out = []
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return out
    for line in lines:
        m = SENT_RE.match(line)
        if not m:
            continue
        d, mon, y, hh, mm, ss, ms, ev, rest = m.groups()
        t = datetime.datetime(int(y), MONTHS[mon], int(d), int(hh), int(mm), int(ss),
                              int(ms) * 1000)  # local time, as Redis writes it
        out.append((int(round(t.timestamp() * 1000)) * 1000000, ev, rest))
    return out


def host_of(s):
    """The host of "host", "host:port", "[v6]:port" or a bare IPv6 address."""
    if s.startswith("["):
        return s[1:].partition("]")[0]
    if s.count(":") > 1:
        return s
    return s.split(":")[0]


def describe(ev, dns_name):
    k = ev["kind"]
    n = ev.get("node", "")
    g = ev.get
    if k == "proc_exit":
        why = g("signal") or ("status %s" % g("exit_status"))
        if g("oom"):
            why += ", OOM killer"
        if g("core_dumped"):
            why += ", core dumped"
        return "agent %s: %s pid %s exited (%s); kernel -> agent %.3f ms" % (
            n, g("comm", "?"), g("pid"), why, (g("delay_us") or 0) / 1000.0)
    if k == "oom_kill":
        return "agent %s: OOM killer chose pid %s (anon rss %s kB)" % (n, g("pid"), g("anon_rss_kb"))
    if k == "proc_hung":
        return "agent %s: server hung (no PONG)" % n
    if k == "proc_up":
        return "agent %s: server answers PING (was %s), pid %s" % (n, g("was"), g("pid"))
    if k == "proc_down":
        return "agent %s: server down" % n
    if k == "peer_down":
        return "agent %s: peer %s down (ICMP, reply age %s ms)" % (n, g("peer"), g("reply_age_ms"))
    if k == "role_change":
        if g("role") == "slave":
            return "agent %s: server is a replica of %s:%s" % (n, g("master_host"), g("master_port"))
        return "agent %s: server is a %s (was %s)" % (n, g("role"), g("was"))
    if k in ("self_fenced", "self_fence_lifted"):
        return "agent %s: %s" % (n, k.replace("_", " "))
    if k == "node_down":
        return "controller: %s (%s) down: %s" % (g("instance"), g("role"), g("reason"))
    if k == "node_up":
        return "controller: %s up again" % g("instance")
    if k == "agent_lost":
        return "controller: agent of %s lost (%s)" % (g("instance"), g("reason"))
    if k == "failover_start":
        return "controller: failover of %s from %s (%s)" % (g("shard"), g("from"), g("reason"))
    if k == "replica_selected":
        return "controller: %s selected (offset %s; candidates %s)" % (
            g("instance"), g("offset"), g("candidates"))
    if k == "promoted":
        return "controller: %s promoted, REPLICAOF NO ONE accepted (epoch %s)" % (
            g("instance"), g("epoch"))
    if k == "switch_master":
        return "controller: +switch-master %s %s:%s -> %s:%s" % (
            g("shard"), g("old_addr"), g("old_port"), g("new_addr"), g("new_port"))
    if k == "replicas_repointed":
        return "controller: replicas repointed to %s: %s" % (g("primary"), g("nodes"))
    if k == "failover_end":
        return "controller: failover done, %s -> %s (%s ms)" % (g("from"), g("to"), g("elapsed_ms"))
    if k == "dns_updated":
        return "%s -> %s (DNS UPDATE %s, %s ms)" % (
            (g("name") or dns_name).rstrip("."), g("addr"), g("rcode"), g("elapsed_ms"))
    if k == "dns_repaired":
        return "%s -> %s (DNS repaired: it named another server; %s ms)" % (
            (g("name") or dns_name).rstrip("."), g("addr"), g("elapsed_ms"))
    if k == "dns_failed":
        return "DNS UPDATE of %s failed: %s" % (g("name"), g("reason"))
    if k == "old_primary_demoted":
        if (g("reason") or "").startswith("reported as a master"):
            # (an old primary back, or a spare just attached, before its REPLICAOF)
            return "controller: %s (a master, not the primary) made a replica of %s" % (
                g("instance"), g("primary"))
        return "controller: old primary %s made a replica of the new one" % g("instance")
    if k == "replica_deficit":
        return "controller: shard %s has %s of %s replicas (replica_deficit)" % (
            g("shard"), g("replicas"), g("desired"))
    if k == "spare_attached":
        return "controller: spare %s attached to %s, REPLICAOF %s (spare_attached)" % (
            g("instance"), g("shard"), g("primary"))
    if k in ("spare_refused", "spare_sync_aborted", "spare_sync_failed"):
        return "controller: %s %s: %s" % (k.replace("_", " "), g("instance"), g("reason"))
    if k == "replica_synced":
        return "controller: %s synced from %s in %s ms, %.1f MB (replica_synced)" % (
            g("instance"), g("primary"), g("duration_ms"), (g("bytes") or 0) / 1e6)
    if k == "replica_promotable":
        return "controller: %s steady, a failover candidate now (replica_promotable)" % (
            g("instance"))
    if k == "redundancy_restored":
        return "controller: redundancy restored, %s of %s replicas, %s ms after the deficit" % (
            g("replicas"), g("desired"), g("after_ms"))
    if k == "provision_requested":
        return "controller: provision_script asked (%s)" % g("reason")
    if k == "controller_start":
        return "controller started (pid %s)" % g("pid")
    if k == "primary_discovered":
        return "controller: primary of %s is %s (%s)" % (g("shard"), g("instance"), g("reason"))
    return "controller: %s %s" % (k, " ".join("%s=%s" % (a, b) for a, b in ev.items()
                                               if a not in ("ts", "node", "kind")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault-ns", type=int, required=True)
    ap.add_argument("--fault", default="fault")
    ap.add_argument("--old", required=True)
    ap.add_argument("--controller")
    ap.add_argument("--agent", action="append", default=[])
    ap.add_argument("--sentinel-log", action="append", default=[])
    ap.add_argument("--redis-log", action="append", default=[],
                    help="a server's log: when it switched to master mode")
    ap.add_argument("--writer", required=True)
    ap.add_argument("--final")
    ap.add_argument("--dns-name", default="")
    ap.add_argument("--until-ms", type=float, default=10000.0,
                    help="events after T0 + this are left out of the timeline")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    t0 = a.fault_ns
    old_host = host_of(a.old)
    rows = [(t0, a.fault)]
    res = {"master_mode_ms": None, "detect_ms": None, "kernel_ms": None, "promoted_ms": None, "dns_ms": None,
           "first_write_ms": None, "max_gap_ms": None, "acked": 0, "lost": None,
           "lost_after_fault": None, "failovers": 0, "first_error_ms": None}

    def ms(t):
        return round((t - t0) / 1e6, 3)

    end = t0 + int(a.until_ms * 1e6)
    for path in a.agent:
        for ev in read_jsonl(path):
            if ev.get("kind") not in WATCH_AGENT:
                continue
            t = ts_ns(ev["ts"])
            if t < t0 - 1000000 or t > end:
                continue
            rows.append((t, describe(ev, a.dns_name)))
            if res["kernel_ms"] is None and ev["kind"] in ("proc_exit", "oom_kill", "proc_hung",
                                                           "peer_down"):
                res["kernel_ms"] = ms(t)
    if a.controller:
        for ev in read_jsonl(a.controller):
            if ev.get("kind") not in WATCH_CTL:
                continue
            t = ts_ns(ev["ts"])
            if t < t0 - 1000000:
                continue
            if ev["kind"] == "failover_start":
                res["failovers"] += 1
            if t > end:
                continue
            rows.append((t, describe(ev, a.dns_name)))
            k = ev["kind"]
            if k == "node_down" and ev.get("role") == "primary" and res["detect_ms"] is None:
                res["detect_ms"] = ms(t)
            if k == "promoted" and res["promoted_ms"] is None:
                res["promoted_ms"] = ms(t)
            if k in ("dns_updated", "dns_repaired") and ev.get("addr") != old_host and \
                    res["dns_ms"] is None:
                res["dns_ms"] = ms(t)
                res["dns_attempts"] = ev.get("attempts")
                res["dns_elapsed_ms"] = ev.get("elapsed_ms")  # UPDATE sent -> answer
    for path in a.sentinel_log:
        name = path.rsplit("/", 1)[-1]
        for t, e, rest in read_sentinel(path):
            if t < t0 - 1000000 or t > end:
                continue
            if e in ("+sdown", "+odown", "+switch-master", "+promoted-slave",
                     "+selected-slave", "+failover-end", "+try-failover"):
                if e == "+sdown" and not rest.startswith("master"):
                    continue
                rows.append((t, "%s: %s %s" % (name, e, rest)))
                # the first of any sentinel (logs are read one after the other)
                if e == "+odown" and (res["detect_ms"] is None or ms(t) < res["detect_ms"]):
                    res["detect_ms"] = ms(t)
                if e == "+promoted-slave" and (res["promoted_ms"] is None or
                                               ms(t) < res["promoted_ms"]):
                    res["promoted_ms"] = ms(t)
                if e == "+switch-master":
                    res["failovers"] += 1

    for path in a.redis_log:
        name = path.rstrip("/").split("/")[-2] if "/" in path else path
        for t, e, rest in read_sentinel(path):
            if t < t0 - 1000000 or t > end:
                continue
            if e in ("MASTER", "PRIMARY") and rest.startswith("MODE enabled"):
                rows.append((t, "%s: %s MODE enabled (the server's own log, ms)" % (name, e)))
                if res["master_mode_ms"] is None or ms(t) < res["master_mode_ms"]:
                    res["master_mode_ms"] = ms(t)

    acked = {}
    first_err = None
    first_new = None
    prev_ack = None
    max_gap = 0
    for line in open(a.writer, errors="replace"):
        f = line.split()
        if not f:
            continue
        if f[0] == "A" and len(f) >= 4:
            v, t, addr = int(f[1]), int(f[2]), f[3]
            acked[v] = (t, addr)
            if prev_ack is not None and t > t0 - 2000000000:
                max_gap = max(max_gap, t - prev_ack)
            prev_ack = t
            if t > t0 and first_new is None and host_of(addr) != old_host:
                first_new = t
                rows.append((t, "writer: first acknowledged write on %s" % addr))
        elif f[0] == "E" and len(f) >= 5:
            t = int(f[2])
            if t > t0 and first_err is None:
                first_err = t
                rows.append((t, "writer: write to %s failed (%s)" % (f[3], f[4])))
        elif f[0] == "R" and len(f) >= 3:
            t = int(f[1])
            if t > t0 and t <= end:
                via = a.dns_name.rstrip(".") + " resolves to" if a.dns_name else "primary is"
                rows.append((t, "writer: %s %s" % (via, f[2])))
    res["acked"] = len(acked)
    if first_new is not None:
        res["first_write_ms"] = ms(first_new)
    if first_err is not None:
        res["first_error_ms"] = ms(first_err)
    res["max_gap_ms"] = round(max_gap / 1e6, 3)
    if a.final:
        have = set()
        for line in open(a.final):
            line = line.strip()
            if line.isdigit():
                have.add(int(line))
        lost = [v for v in acked if v not in have]
        res["lost"] = len(lost)
        res["lost_after_fault"] = sum(1 for v in lost if acked[v][0] > t0)
        res["lost_values"] = sorted(lost)[:20]
        # how long before the fault the oldest lost write was acknowledged (asynchronous
        # replication can lose only the last moments before it)
        res["lost_max_age_ms"] = round(max([(t0 - acked[v][0]) / 1e6 for v in lost] + [0]), 3)
    if a.json:
        print(json.dumps(res))
        return
    rows.sort(key=lambda r: r[0])
    for t, text in rows:
        print("T%+10.3f ms  %s" % ((t - t0) / 1e6, text))
    if first_new is not None:
        tail = "writes resumed after %.1f ms" % ((first_new - t0) / 1e6)
    else:
        tail = "writes did not resume on another server"
    if res["lost"] is not None:
        tail += ", %d acknowledged write%s lost (of %d)" % (
            res["lost"], "" if res["lost"] == 1 else "s", res["acked"])
    print(tail)


if __name__ == "__main__":
    sys.exit(main())
