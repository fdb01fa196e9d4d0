#!/usr/bin/python3
"""A writer that follows the primary through the controller's Sentinel API
(Debian's python3-redis, redis.sentinel.Sentinel), for the controller's
integration tests and bench/failover.sh.

RPUSHes 0, 1, 2, ... to KEY at RATE per second; every acknowledged value is
appended to OUT (one per line, flushed), so a test can check that each one is
on the primary afterwards. Errors (no primary, READONLY, connection lost) are
retried after a short sleep. On SIGTERM prints a JSON summary on stdout:
acked, errors, max_gap_ms (longest time without an acknowledged write)."""
import argparse
import json
import signal
import sys
import time

import redis
from redis.sentinel import Sentinel

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentinel", type=int, required=True, help="controller port")
    ap.add_argument("--service", default="s")
    ap.add_argument("--key", default="w")
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--password", default=None)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    sentinel = Sentinel([("127.0.0.1", a.sentinel)], socket_timeout=0.5)
    master = sentinel.master_for(a.service, socket_timeout=0.5, socket_connect_timeout=0.5,
                                 password=a.password)
    out = open(a.out, "w", buffering=1)
    period = 1.0 / a.rate if a.rate > 0 else 0
    i = acked = errors = 0
    last_ack = time.monotonic()
    max_gap = 0.0
    nxt = time.monotonic()
    while not stop:
        try:
            master.rpush(a.key, i)
            now = time.monotonic()
            max_gap = max(max_gap, now - last_ack)
            last_ack = now
            out.write("%d\n" % i)
            acked += 1
            i += 1
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
                redis.exceptions.ReadOnlyError, redis.exceptions.ResponseError,
                redis.sentinel.MasterNotFoundError) as e:
            errors += 1
            i += 1  # the value may or may not have been written: never reused
            time.sleep(0.002)
            continue
        if period:
            nxt += period
            d = nxt - time.monotonic()
            if d > 0:
                time.sleep(d)
            else:
                nxt = time.monotonic()
    max_gap = max(max_gap, time.monotonic() - last_ack)
    print(json.dumps({"acked": acked, "errors": errors, "max_gap_ms": round(max_gap * 1000, 1)}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
