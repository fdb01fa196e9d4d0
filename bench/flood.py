#!/usr/bin/python3
"""Driver of bench/flood.sh: what hundreds of connections sending empty
lines or inline junk cost the controller, seen as the latency of a PING from
another connection.

  flood PORT CONNS SECS MODE OUT   CONNS connections, each sending MODE's bytes as fast
                                   as the socket takes them (16 KiB per send), reading
                                   and dropping what comes back, dialling again when
                                   closed; OUT gets one JSON line: bytes sent, reconnects
  ping PORT SECS OUT               a PING every 10 ms on one connection, each answer
                                   awaited; OUT gets one JSON line: the latencies (ms)

MODE: empty ("\\n" only), crlf ("\\r\\n" only), junk (short unknown inline commands:
"x\\n" ... each answered with an error), or spaces (one line of blanks, then "\\n",
up to the inline limit)."""
import json
import selectors
import socket
import sys
import time

CHUNK = 16384


def payload(mode):
    if mode == "empty":
        return b"\n" * CHUNK
    if mode == "crlf":
        return b"\r\n" * (CHUNK // 2)
    if mode == "junk":
        return b"x\n" * (CHUNK // 2)
    if mode == "spaces":
        return b" " * (CHUNK - 1) + b"\n"
    raise SystemExit("flood.py: unknown mode " + mode)


def flood(port, conns, secs, mode, out):
    sel = selectors.DefaultSelector()
    data = payload(mode)
    sent = reconnects = refused = 0

    def dial():
        nonlocal refused
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect_ex(("127.0.0.1", port))
        except OSError:
            refused += 1
            s.close()
            return
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, [0])

    for _ in range(conns):
        dial()
    end = time.monotonic() + secs
    while time.monotonic() < end:
        for key, ev in sel.select(0.05):
            s = key.fileobj
            try:
                if ev & selectors.EVENT_READ:
                    if not s.recv(1 << 16):
                        raise ConnectionResetError
                if ev & selectors.EVENT_WRITE:
                    off = key.data[0]
                    n = s.send(data[off:] if off else data)
                    sent += n
                    key.data[0] = (off + n) % len(data)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                sel.unregister(s)
                s.close()
                reconnects += 1
                dial()
    with open(out, "w") as f:
        json.dump({"sent": sent, "reconnects": reconnects, "refused": refused}, f)
        f.write("\n")


def ping(port, secs, out):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    lat, lost = [], 0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            s.sendall(b"PING\r\n")
            buf = b""
            while not buf.endswith(b"\r\n"):
                d = s.recv(64)
                if not d:
                    raise ConnectionResetError
                buf += d
            lat.append((time.monotonic() - t0) * 1000)
        except OSError:
            lost += 1
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
        time.sleep(max(0.0, 0.01 - (time.monotonic() - t0)))
    with open(out, "w") as f:
        json.dump({"lat_ms": lat, "lost": lost}, f)
        f.write("\n")


def main():
    if len(sys.argv) >= 7 and sys.argv[1] == "flood":
        flood(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6])
    elif len(sys.argv) >= 5 and sys.argv[1] == "ping":
        ping(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
