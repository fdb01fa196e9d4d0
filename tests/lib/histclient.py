#!/usr/bin/python3
"""A campaign client (bench/campaign.sh): a real client (Debian's python3-redis) whose
history the checker (tests/lib/checker.py) can judge.

  --sentinel HOST:PORT[,HOST:PORT]  follow the primary through the Sentinel API
                                    (flatline's controllers or Redis Sentinels), as a
                                    Sentinel-aware application does
  --addr HOST:PORT                  always this server: a client on the server's own host
                                    (it also asks ROLE every --role-ms, so the checker sees
                                    which servers said "master" when)

Operations, one at a time, RATE a second: RPUSH KEY VALUE on one of --keys lists (the
reply is the list's new length, so every acknowledged write carries its index) or, one in
--read-every, LLEN KEY. VALUE is "<id>:<seq>", never reused. Every outcome is a JSON line
in OUT, flushed:

  {"c":ID,"op":"w","k":KEY,"v":VALUE,"t0":NS,"t1":NS,"a":ADDR,"ok":1,"n":LEN}
  {"c":ID,"op":"w",...,"ok":0,"e":"READONLY"}     refused: certainly not applied
  {"c":ID,"op":"w",...,"ok":null,"e":"Timeout"}   unknown: may or may not be applied
  {"c":ID,"op":"r","k":KEY,"t0":NS,"t1":NS,"a":ADDR,"ok":1,"n":LEN}
  {"c":ID,"op":"role","t0":NS,"t1":NS,"a":ADDR,"role":"master"}

t0 is the wall clock (ns) before the command was sent, t1 after its answer arrived. On
any error the connection is dropped and the primary looked up again.
"""
import argparse
import json
import random
import signal
import time

import redis
from redis.sentinel import Sentinel, MasterNotFoundError

from clwriter import split_hp

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def error_name(e):
    """READONLY / LOADING / ... for a server's refusal, the exception's class otherwise."""
    if isinstance(e, redis.exceptions.ResponseError):
        return (str(e).split() or ["ERR"])[0]
    return type(e).__name__


def refused(e):
    """A reply that says the write was not applied (as opposed to no reply at all)."""
    return isinstance(e, (redis.exceptions.ReadOnlyError, redis.exceptions.ResponseError)) \
        and not isinstance(e, redis.exceptions.ConnectionError)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--id", required=True)
    ap.add_argument("--sentinel")
    ap.add_argument("--addr")
    ap.add_argument("--service", default="cache")
    ap.add_argument("--keys", type=int, default=4)
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--read-every", type=int, default=5)
    ap.add_argument("--role-ms", type=float, default=100.0)
    ap.add_argument("--timeout-ms", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if bool(a.sentinel) == bool(a.addr):
        ap.error("give --sentinel HOST:PORT[,...] or --addr HOST:PORT")
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    tmo = a.timeout_ms / 1000.0
    rng = random.Random("%s/%d" % (a.id, a.seed))

    if a.addr:
        fixed = split_hp(a.addr, 6379)

        def lookup():
            return fixed
    else:
        sentinel = Sentinel([split_hp(hp, 26379) for hp in a.sentinel.split(",")],
                            socket_timeout=tmo, socket_connect_timeout=tmo)

        def lookup():
            try:
                return sentinel.discover_master(a.service)
            except (MasterNotFoundError, redis.exceptions.RedisError, OSError):
                return None

    out = open(a.out, "a", buffering=1)

    def rec(**kv):
        kv["c"] = a.id
        out.write(json.dumps(kv, separators=(",", ":")) + "\n")

    period = 1.0 / a.rate
    nxt = time.monotonic()
    next_role = 0.0
    seq = 0
    conn = where = None
    while not stop:
        if conn is None:
            where = lookup()
            if where is None:
                time.sleep(0.005)
                continue
            try:
                conn = redis.Redis(host=where[0], port=where[1], socket_timeout=tmo,
                                   socket_connect_timeout=tmo, single_connection_client=True)
            except (redis.exceptions.RedisError, OSError):
                conn = None  # nothing sent: no outcome to record
                time.sleep(0.005)
                continue
        addr = "%s:%d" % where
        now = time.monotonic()
        if a.addr and now >= next_role:
            next_role = now + a.role_ms / 1000.0
            t0 = time.time_ns()
            try:
                role = conn.execute_command("ROLE")[0]
                role = role.decode() if isinstance(role, bytes) else str(role)
                rec(op="role", t0=t0, t1=time.time_ns(), a=addr, role=role)
            except (redis.exceptions.RedisError, OSError):
                conn.close()
                conn = None
                time.sleep(0.005)
            continue
        key = "k%d" % rng.randrange(a.keys)
        read = a.read_every > 0 and rng.randrange(a.read_every) == 0
        val = None if read else "%s:%d" % (a.id, seq)
        seq += 0 if read else 1
        t0 = time.time_ns()
        try:
            n = conn.llen(key) if read else conn.rpush(key, val)
            rec(op="r" if read else "w", k=key, v=val, t0=t0, t1=time.time_ns(), a=addr, ok=1, n=n)
        except (redis.exceptions.RedisError, OSError) as e:
            ok = 0 if refused(e) else None
            rec(op="r" if read else "w", k=key, v=val, t0=t0, t1=time.time_ns(), a=addr, ok=ok,
                e=error_name(e))
            if ok is None:  # no answer: the link is gone or late; look the primary up again
                conn.close()
                conn = None
            time.sleep(0.005)
            continue
        nxt += period
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
        else:
            nxt = time.monotonic()


if __name__ == "__main__":
    main()
