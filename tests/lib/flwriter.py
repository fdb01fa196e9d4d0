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
import signal
import time

import redis
from redis.sentinel import Sentinel

from pacer import Pacer

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
    pace = Pacer(a.rate)
    i = 0
    while not stop:
        try:
            master.rpush(a.key, i)
            pace.ack()
            out.write("%d\n" % i)
            i += 1
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
                redis.exceptions.ReadOnlyError, redis.exceptions.ResponseError,
                redis.sentinel.MasterNotFoundError) as e:
            pace.errors += 1
            i += 1  # the value may or may not have been written: never reused
            time.sleep(0.002)
            continue
        pace.wait()
    pace.summary()


if __name__ == "__main__":
    main()
