#!/usr/bin/env python3
"""Clients of a server for the write-lease tests (tests/integration/test_lease_server.sh).

  lease_clients.py probe READY GO SPEC...
      SPEC is KIND:HOST:PORT, KIND plain, tls (no certificate check) or setname (plain,
      then CLIENT SETNAME flatline-controller). Each connects, checks PING -> PONG, and
      then "ready" is written to READY; once the file GO exists each sends SET and
      prints "SPEC reply" or "SPEC none" (nothing within 1.5 s).
  lease_clients.py queued READY GO SPEC...
      As probe, plain connections only and no PING first: made while the server does
      not accept (stopped), they wait in its accept queue until it does.
  lease_clients.py multi READY GO HOST PORT
      One plain connection: MULTI and SET lease-multi (each answered: +OK, +QUEUED),
      "ready"; once GO exists, EXEC: prints "exec reply" or "exec none".
  lease_clients.py many READY GO N HOST PORT
      N connections, each checked with PING; "ready" to READY; once GO exists, each sends
      PING (a reply the lease drops), then it waits up to 10 s for the server to close
      them and prints "closed K of N".
"""
import os
import select
import socket
import ssl
import sys
import time


def connect(kind, host, port):
    s = socket.create_connection((host, int(port)), timeout=5)
    if kind == "tls":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        s = ctx.wrap_socket(s)
    return s


def cmd(s, *args, timeout=5.0):
    msg = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    s.sendall(msg)
    s.settimeout(timeout)
    try:
        return s.recv(4096)
    except (socket.timeout, ssl.SSLError, OSError):
        return b""


def wait_go(ready, go):
    with open(ready, "w") as f:
        f.write("ready\n")
    while not os.path.exists(go):
        time.sleep(0.01)


def probe(ready, go, specs):
    conns = []
    for spec in specs:
        kind, host, port = spec.split(":", 2)
        s = connect(kind, host, port)
        if not cmd(s, b"PING").startswith(b"+PONG"):
            sys.exit("%s: no PONG" % spec)
        if kind == "setname" and not cmd(s, b"CLIENT", b"SETNAME", b"flatline-controller").startswith(b"+OK"):
            sys.exit("%s: SETNAME refused" % spec)
        conns.append((spec, s))
    wait_go(ready, go)
    for spec, s in conns:
        r = cmd(s, b"SET", b"lease-probe", spec.encode(), timeout=1.5)
        print(spec, "reply" if r else "none", flush=True)


def queued(ready, go, specs):
    conns = []
    for spec in specs:
        _, host, port = spec.split(":", 2)
        conns.append((spec, connect("plain", host, port)))
    wait_go(ready, go)
    for spec, s in conns:
        r = cmd(s, b"SET", b"lease-probe", spec.encode(), timeout=1.5)
        print(spec, "reply" if r else "none", flush=True)


def multi(ready, go, host, port):
    s = connect("plain", host, port)
    if not cmd(s, b"MULTI").startswith(b"+OK"):
        sys.exit("MULTI refused")
    if not cmd(s, b"SET", b"lease-multi", b"1").startswith(b"+QUEUED"):
        sys.exit("SET not queued")
    wait_go(ready, go)
    r = cmd(s, b"EXEC", timeout=1.5)
    print("exec", "reply" if r else "none", flush=True)


def many(ready, go, n, host, port):
    conns = []
    for _ in range(n):
        s = connect("plain", host, port)
        if not cmd(s, b"PING").startswith(b"+PONG"):
            sys.exit("no PONG")
        conns.append(s)
    wait_go(ready, go)
    for s in conns:
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
    open_ = set(conns)
    end = time.time() + 10
    while open_ and time.time() < end:
        r, _, _ = select.select(list(open_), [], [], 0.2)
        for s in r:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                open_.discard(s)
    print("closed %d of %d" % (n - len(open_), n), flush=True)


def main():
    if sys.argv[1] == "probe":
        probe(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif sys.argv[1] == "multi":
        multi(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif sys.argv[1] == "queued":
        queued(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        many(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])


if __name__ == "__main__":
    main()
