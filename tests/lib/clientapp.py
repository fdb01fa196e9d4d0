#!/usr/bin/python3
"""An application on redis-py (Debian's python3-redis) with its default options,
following a shard through the Sentinel API: Sentinel(...).master_for(NAME), RPUSH 0, 1,
2 ... to KEY at RATE per second, one command at a time; with ROLE "replica" it reads
from the replicas instead (Sentinel(...).slave_for(NAME), LLEN KEY). Every outcome is
a line in OUT:

  A <value> <t_ns> <addr>           acknowledged by the server at addr
  E <value> <t_ns> <addr> <error>   an exception that reached the application

On SIGTERM prints {"acked": N, "errors": N, "addr": "last server"} on stdout.
usage: clientapp.py SENTINEL_HOST:PORT[,HOST:PORT] NAME KEY RATE OUT [master|replica]
With SENTINEL_PASSWORD (and SENTINEL_USER) in the environment it logs in to the
Sentinel API as an application does: Sentinel(sentinel_kwargs={"password": ...}).
(tests/node/app.js is the same application on ioredis.)
"""
import json
import os
import signal
import sys
import time

from redis.sentinel import Sentinel

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def main():
    sentinels = []
    for s in sys.argv[1].split(","):
        host, port = s.rsplit(":", 1)
        sentinels.append((host, int(port)))
    name, key, gap = sys.argv[2], sys.argv[3], 1.0 / float(sys.argv[4])
    signal.signal(signal.SIGTERM, on_term)
    reader = len(sys.argv) > 6 and sys.argv[6] == "replica"
    kw = {}
    if os.environ.get("SENTINEL_PASSWORD"):
        kw["sentinel_kwargs"] = {"password": os.environ["SENTINEL_PASSWORD"]}
        if os.environ.get("SENTINEL_USER"):
            kw["sentinel_kwargs"]["username"] = os.environ["SENTINEL_USER"]
    # the defaults, as an application has them
    r = Sentinel(sentinels, **kw).slave_for(name) if reader else Sentinel(sentinels, **kw).master_for(name)
    acked = errors = 0
    addr = "-"
    with open(sys.argv[5], "w", buffering=1) as out:
        v = 0
        while not stop:
            t0 = time.monotonic()
            try:
                if reader:
                    r.llen(key)
                else:
                    r.rpush(key, v)
                conn = r.connection_pool._available_connections
                if conn and conn[-1]._sock:
                    a = conn[-1]._sock.getpeername()
                    addr = "%s:%d" % (a[0], a[1])
                acked += 1
                out.write("A %d %d %s\n" % (v, time.time_ns(), addr))
            except Exception as e:  # what the application would see
                errors += 1
                out.write("E %d %d %s %s: %s\n" % (v, time.time_ns(), addr, type(e).__name__,
                                                   " ".join(str(e).split())))
            v += 1
            left = gap - (time.monotonic() - t0)
            if left > 0:
                time.sleep(left)
    print(json.dumps({"acked": acked, "errors": errors, "addr": addr}))


if __name__ == "__main__":
    main()
