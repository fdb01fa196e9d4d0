#!/usr/bin/python3
"""A Redis Cluster client writing throughout (tests/integration/test_cluster_mode.sh,
bench/cluster.sh): redis-py's own cluster client (redis.cluster.RedisCluster, Debian's
python3-redis 4.3.4), which follows MOVED/ASK and refreshes its slot map from the
cluster itself after a connection error.

PORT may be HOST:PORT (a cluster in namespaces: tests/lib/rcluster_ns.sh); a bare
port is on 127.0.0.1. PORTS: several, comma-separated.

  rcwriter.py write PORTS OUT     SETs w:0, w:1, ... (value = index) as fast as one
                                  client goes, one command at a time, until SIGTERM;
                                  every outcome a line in OUT, flushed:
                                    A <i> <t_ns> <slot>   acknowledged
                                    E <i> <t_ns> <slot>   failed (may have been applied)
  rcwriter.py check PORTS OUT T_NS SLOTS
                                  reads back every acknowledged key; prints JSON:
                                  acked, lost (acked, now missing or other), lost_after
                                  (of those acknowledged after T_NS), and, for the keys
                                  in SLOTS ("a-b,c-d": the victim's slots), the first
                                  ack after their first failure past T_NS: writable_ms
                                  from T_NS, gap_ms from the last ack before it;
                                  slots_acked_after (acks to SLOTS after T_NS) and
                                  max_gap_ms (the longest wait between two of them,
                                  from the last before T_NS: a client that retries by
                                  itself, ioredis, shows no error).
  rcwriter.py slotkey PREFIX SLOTS
                                  prints a key PREFIX{n} whose slot is in SLOTS
  rcwriter.py probe PORTS SLOTS OUT
                                  the servers' side, without a client's own delays
                                  (redis-py 4.3.4 sleeps 4 x 250 ms on a connection
                                  error before it asks for the slot map again): SETs a
                                  key of SLOTS on each of PORTS (the victim left out)
                                  in turn until one says OK rather than MOVED; writes
                                  the wall-clock ns of that OK and the port to OUT.
"""
import json
import logging
import signal
import sys
import time

import redis
from redis.cluster import ClusterNode, RedisCluster, key_slot

stop = False
# redis-py's cluster client logs every connection error with its traceback: the
# outcomes are counted here instead.
logging.getLogger("redis").setLevel(logging.CRITICAL + 1)


def hostport(s):
    host, _, port = s.rpartition(":")
    return host or "127.0.0.1", int(port)


def client(ports):
    # Every node a start: a client asked again after a kill must not start from the
    # dead one alone.
    return RedisCluster(startup_nodes=[ClusterNode(*hostport(p)) for p in ports],
                        socket_timeout=0.5, socket_connect_timeout=0.5,
                        cluster_error_retry_attempts=1)


def write(ports, out):
    global stop

    def on_term(*_):
        global stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    rc = None
    i = 0
    with open(out, "w", buffering=1) as f:
        while not stop:
            key = "w:%d" % i
            slot = key_slot(key.encode())
            try:
                if rc is None:
                    rc = client(ports)
                rc.set(key, str(i))
                f.write("A %d %d %d\n" % (i, time.time_ns(), slot))
            except Exception:  # noqa: BLE001 - every failure is one outcome
                f.write("E %d %d %d\n" % (i, time.time_ns(), slot))
                rc = None  # the slot map asked again
            i += 1


def in_slots(slot, ranges):
    return any(a <= slot <= b for a, b in ranges)


def check(ports, out, t_ns, slots):
    ranges = [tuple(int(x) for x in r.split("-")) for r in slots.split(",") if r]
    rc = client(ports)
    acked = lost = lost_after = 0
    with open(out) as f:
        lines = [ln.split() for ln in f if ln.strip()]
    for ln in lines:
        if ln[0] != "A":
            continue
        i, t = int(ln[1]), int(ln[2])
        acked += 1
        if rc.get("w:%d" % i) != str(i).encode():
            lost += 1
            if t > t_ns:
                lost_after += 1
    # The outage of the victim's slots: from its first failed write after T_NS, back
    # to the last ack before it and on to the first ack after it.
    victim = [(ln[0], int(ln[2])) for ln in lines if in_slots(int(ln[3]), ranges)]
    first_err = next((t for k, t in victim if k == "E" and t > t_ns), None)
    last_ok = first_ok = None
    if first_err is not None:
        last_ok = max((t for k, t in victim if k == "A" and t < first_err), default=None)
        first_ok = next((t for k, t in victim if k == "A" and t > first_err), None)
    # A client that retries by itself (ioredis) shows no error: the acks to the
    # victim's slots after T_NS, and the longest wait between two of them from the
    # last one before T_NS on.
    oks = [t for k, t in victim if k == "A"]
    since = [t for t in oks if t > t_ns]
    before = [t for t in oks if t <= t_ns][-1:]
    seq = before + since
    print(json.dumps({
        "acked": acked, "errors": sum(1 for ln in lines if ln[0] == "E"),
        "lost": lost, "lost_after": lost_after,
        "writable_ms": (first_ok - t_ns) / 1e6 if first_ok else None,
        "gap_ms": (first_ok - last_ok) / 1e6 if first_ok and last_ok else None,
        "slots_acked_after": len(since),
        "max_gap_ms": max((b - a for a, b in zip(seq, seq[1:])), default=0) / 1e6,
    }))


def probe(ports, slots, out):
    ranges = [tuple(int(x) for x in r.split("-")) for r in slots.split(",") if r]
    key = next("p:%d" % i for i in range(100000)
               if in_slots(key_slot(("p:%d" % i).encode()), ranges))
    conns = [(p, redis.Redis(host=hostport(p)[0], port=hostport(p)[1], socket_timeout=0.5))
             for p in ports]
    while True:
        for p, r in conns:
            try:
                r.set(key, "1")
            except redis.exceptions.ResponseError:
                continue  # MOVED: not its slot (yet)
            except redis.exceptions.ConnectionError:
                continue
            with open(out, "w") as f:
                f.write("%d %s\n" % (time.time_ns(), p))
            return
        time.sleep(0.0005)


if __name__ == "__main__":
    if sys.argv[1] == "probe":
        probe(sys.argv[2].split(","), sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "write":
        write(sys.argv[2].split(","), sys.argv[3])
    elif sys.argv[1] == "slotkey":
        # rcwriter.py slotkey PREFIX SLOTS: a key of PREFIX{...} in SLOTS
        ranges = [tuple(int(x) for x in r.split("-")) for r in sys.argv[3].split(",") if r]
        print(next(k for k in ("%s{%d}" % (sys.argv[2], i) for i in range(100000))
                   if in_slots(key_slot(k.encode()), ranges)))
    else:
        check(sys.argv[2].split(","), sys.argv[3], int(sys.argv[4]), sys.argv[5])
