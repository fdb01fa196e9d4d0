#!/usr/bin/python3
"""The cluster writer (tests/lib/cluster.sh, make demo, tests/integration/test_cluster.sh,
bench/compare.sh): a real client (Debian's python3-redis) that finds the primary
either through DNS, as an application that only knows `cache.ha.test` does, or through
Sentinel's protocol, as a Sentinel-aware client does (redis-py's own discover_master:
the first sentinel that names a master that is not s_down/o_down).

  --dns NAME --dns-server IP[:PORT]   ask that server for NAME's A record (directly, as
                                      a resolver does when the record's TTL of 1 s ran
                                      out) each time it (re)connects; [IPv6]:PORT too
  --dns-type A|AAAA                   the record asked for (AAAA: an IPv6 cluster)
  --sentinel HOST:PORT[,HOST:PORT]    ask these sentinels (or flatline's controller)
  --service NAME
  --addr HOST:PORT                    always this server (a client next to its cache,
                                      on the primary's own host: the write lease tests)

It RPUSHes 0, 1, 2, ... to KEY at RATE per second (0: as fast as it can), one command
at a time. Every outcome is a line in OUT, flushed, wall-clock nanoseconds:

  A <value> <t_ns> <addr>            acknowledged by the server at addr
  E <value> <t_ns> <addr> <error>    failed or timed out (may or may not have been applied)
  R <t_ns> <addr>                    the primary's address changed (or was first learnt)

On any error the connection is dropped, the primary looked up again, and the value is
never reused. On SIGTERM prints a JSON summary (acked, errors, max_gap_ms) on stdout.
"""
import argparse
import random
import signal
import socket
import struct
import time

import redis
from redis.sentinel import Sentinel, MasterNotFoundError

from pacer import Pacer

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def split_hp(s, default_port):
    """HOST, PORT of "host:port", "[v6]:port", "[v6]", a bare IPv6 address or host."""
    if s.startswith("["):
        host, _, rest = s[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else default_port
    if s.count(":") > 1:
        return s, default_port
    host, _, port = s.partition(":")
    return host, int(port or default_port)


def join_hp(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def dns_a(name, server, port, timeout, rtype=1):
    """The A (rtype 1) or AAAA (28) record of NAME from SERVER (one UDP query), or None."""
    qid = random.getrandbits(16)
    q = struct.pack(">HHHHHH", qid, 0, 1, 0, 0, 0)  # no RD: ask the authority itself
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", rtype, 1)
    s = socket.socket(socket.AF_INET6 if ":" in server else socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(q, (server, port))
        while True:
            data = s.recv(1500)
            if len(data) >= 12 and struct.unpack(">H", data[:2])[0] == qid:
                break
    except OSError:
        return None
    finally:
        s.close()
    _, flags, qd, an, _, _ = struct.unpack(">HHHHHH", data[:12])
    if flags & 0xF:
        return None  # rcode

    def skip_name(off):
        while True:
            n = data[off]
            if n & 0xC0 == 0xC0:
                return off + 2
            if n == 0:
                return off + 1
            off += n + 1

    off = 12
    for _ in range(qd):
        off = skip_name(off) + 4
    for _ in range(an):
        off = skip_name(off)
        typ, cls, _, rdlen = struct.unpack(">HHIH", data[off:off + 10])
        off += 10
        if typ == 1 == rtype and cls == 1 and rdlen == 4:
            return socket.inet_ntoa(data[off:off + 4])
        if typ == 28 == rtype and cls == 1 and rdlen == 16:
            return socket.inet_ntop(socket.AF_INET6, data[off:off + 16])
        off += rdlen
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dns")
    ap.add_argument("--dns-server")
    ap.add_argument("--dns-type", choices=("A", "AAAA"), default="A")
    ap.add_argument("--port", type=int, default=6379, help="the servers' port (with --dns)")
    ap.add_argument("--sentinel", help="HOST:PORT[,HOST:PORT...]")
    ap.add_argument("--service", default="cache")
    ap.add_argument("--addr", help="HOST:PORT: this server only, never looked up")
    ap.add_argument("--key", default="w")
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--timeout-ms", type=float, default=100.0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if (bool(a.dns) + bool(a.sentinel) + bool(a.addr)) != 1:
        ap.error("give --dns NAME --dns-server IP[:PORT], --sentinel HOST:PORT[,...] or --addr HOST:PORT")
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    tmo = a.timeout_ms / 1000.0

    if a.addr:
        h, _, p = a.addr.rpartition(":")
        fixed = (h.strip("[]"), int(p))

        def lookup():
            return fixed
    elif a.dns:
        host, dport = split_hp(a.dns_server, 53)
        rtype = 28 if a.dns_type == "AAAA" else 1

        def lookup():
            ip = dns_a(a.dns, host, dport, tmo, rtype)
            return (ip, a.port) if ip else None
    else:
        sents = []
        for hp in a.sentinel.split(","):
            sents.append(split_hp(hp, 26379))
        sentinel = Sentinel(sents, socket_timeout=tmo, socket_connect_timeout=tmo)

        def lookup():
            try:
                return sentinel.discover_master(a.service)
            except (MasterNotFoundError, redis.exceptions.RedisError, OSError):
                return None

    out = open(a.out, "w", buffering=1)
    pace = Pacer(a.rate)
    i = 0
    conn = addr = None
    last_addr = None
    while not stop:
        if conn is None:
            where = lookup()
            if where is None:
                time.sleep(0.001)
                continue
            addr = join_hp(*where)
            if addr != last_addr:
                out.write("R %d %s\n" % (time.time_ns(), addr))
                last_addr = addr
        try:
            if conn is None:
                conn = redis.Redis(host=where[0], port=where[1], socket_timeout=tmo,
                                   socket_connect_timeout=tmo, single_connection_client=True)
            conn.rpush(a.key, i)
            out.write("A %d %d %s\n" % (i, time.time_ns(), addr))
            pace.ack()
        except (redis.exceptions.RedisError, OSError) as e:
            out.write("E %d %d %s %s\n" % (i, time.time_ns(), addr, type(e).__name__))
            pace.errors += 1
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass
            conn = None
            i += 1  # the value may or may not have been applied: never reused
            time.sleep(0.001)
            continue
        i += 1
        pace.wait()
    pace.summary()


if __name__ == "__main__":
    main()
