#!/usr/bin/env python3
"""When do Sentinel clients learn the new primary? Started right after a fault, this asks
SENTINEL get-master-addr-by-name over and over on one connection (a question the
controller holds while the shard has no primary is answered when it has one), and, as
soon as the controller's event log says `promoted`, asks once more on a new connection.
It follows the log until `failover_end` and prints one JSON object (times in ms):

  poll_ms        `promoted` -> the first answer naming another server than OLD-IP
  poll_held      that question was asked before `promoted` (it was held)
  fresh_ms       `promoted` -> the answer to the question asked after it
  fresh_ip       what that answer named
  fresh_before_end  that answer came before `failover_end` was logged
  end_ms         `promoted` -> `failover_end`

usage: ask_primary.py HOST PORT SHARD OLD-IP EVENT-LOG SINCE-NS [TIMEOUT-S]"""
import datetime
import json
import socket
import sys
import threading
import time

host, port, shard, old_ip, clog = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
since = int(sys.argv[6]) / 1e9
deadline = time.time() + (float(sys.argv[7]) if len(sys.argv) > 7 else 15)


def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def ask(f, sock):
    """One question; the address it names, or None (a null reply)."""
    sock.sendall(enc("SENTINEL", "get-master-addr-by-name", shard))
    line = f.readline()
    if not line.startswith(b"*2"):
        return None
    vals = []
    for _ in range(2):
        f.readline()  # $len
        vals.append(f.readline().rstrip(b"\r\n").decode())
    return vals[0]


def connect():
    s = socket.create_connection((host, port), timeout=5)
    return s, s.makefile("rb")


res = {}


def poller():
    s, f = connect()
    while time.time() < deadline:
        t0 = time.time()
        ip = ask(f, s)
        t1 = time.time()
        if ip and ip != old_ip:
            res["poll"] = (t0, t1, ip)
            return
        # No pause: with the old primary's lease revoked the promotion follows the
        # failover's start by a millisecond or two, the whole time a question is held.


def ts_of(ev):
    return datetime.datetime.strptime(ev["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


th = threading.Thread(target=poller, daemon=True)
th.start()
promoted = end = None
buf = b""
with open(clog, "rb") as log:
    while time.time() < deadline and end is None:
        chunk = log.read()
        if not chunk:
            time.sleep(0.0005)
            continue
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ts_of(ev) < since:
                continue
            if ev.get("kind") == "promoted" and promoted is None:
                promoted = ts_of(ev)
                s, f = connect()
                t0 = time.time()
                ip = ask(f, s)
                res["fresh"] = (t0, time.time(), ip)
                s.close()
            elif ev.get("kind") == "failover_end" and promoted is not None:
                end = ts_of(ev)
th.join(max(0, deadline - time.time()))

out = {}
if promoted is not None:
    if "poll" in res:
        out["poll_ms"] = round((res["poll"][1] - promoted) * 1000, 1)
        out["poll_held"] = res["poll"][0] < promoted
        out["poll_ip"] = res["poll"][2]
    if "fresh" in res:
        out["fresh_ms"] = round((res["fresh"][1] - promoted) * 1000, 1)
        out["fresh_ip"] = res["fresh"][2]
        out["fresh_before_end"] = end is not None and res["fresh"][1] < end
    if end is not None:
        out["end_ms"] = round((end - promoted) * 1000, 1)
print(json.dumps(out))
