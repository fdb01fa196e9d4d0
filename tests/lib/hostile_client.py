#!/usr/bin/python3
"""Hostile clients of the controller's socket (tests/integration/test_hostile.sh).
Each mode prints one line of JSON with what it saw.

  status-flood PORT SECS   FLATLINE STATUS over and over, never reading
  ping-sub PORT SECS       SUBSCRIBE, then PING over and over, never reading
  partial PORT N SECS      N connections, each with half of a 60 kB frame
  bigframe PORT            one 1 MB frame before authenticating
  conns PORT N SECS        N idle connections held for SECS
  hello-flood PORT N       N HELLOs with made-up node ids, pipelined
  crlf-id PORT             a HELLO whose node id holds CR LF and a forged line
  auth-guess PORT N        N wrong AUTHs on one connection, each waiting for its answer
  kill-loop PORT SECS [ADDR...]
                           on one connection, as fast as answered, CLIENT KILL
                           TYPE normal between each of: CLIENT LIST (every addr it shows
                           is added to the targets), CLIENT KILL ADDR / the old CLIENT
                           KILL <addr> of each target (ADDR: the agents' links, as ss
                           shows them), CLIENT KILL ID 1..64; dials again when closed. Counts the
                           answers: errors (by first word), zeros, and anything that
                           killed or listed
  auth-flood PORT SECS N [SRC]
                           a guesser at full speed: N connections from SRC (default
                           127.0.0.1), each sending a wrong AUTH as soon as the last is
                           answered, dialling again when closed; counts the answers
  metrics-flood PORT N SECS
                           N connections to a metrics endpoint from 127.0.1.1-16,
                           held for SECS, a third
                           of them dripping a request's header one byte a second,
                           each dialled again as soon as the server closes it;
                           counts the connections made and the ones closed
"""
import json, os, select, socket, sys, time

from flauth import enc  # RESP: a command as an array of bulk strings

def conn(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s

def closed_by_peer(s, wait):
    """True when the server closed s (EOF or reset) within wait seconds."""
    end = time.time() + wait
    s.setblocking(False)
    while time.time() < end:
        r, _, _ = select.select([s], [], [], 0.1)
        if r:
            try:
                while True:
                    d = s.recv(1 << 20)
                    if not d:
                        return True
            except BlockingIOError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return True
    return False

def flood(port, secs, first, unit):
    s = conn(port)
    # A small receive buffer, so the server's answers pile up on its side; not
    # a tiny one: at 4 KB loopback TCP drops segments that carry the server's
    # ACKs, backs off to seconds between retransmits, and the flood stalls.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    if first:
        s.sendall(first)
    s.setblocking(False)
    t0 = time.time()
    sent, end, closed = 0, t0 + secs, False
    chunk, buf = unit * (65536 // len(unit) + 1), b""
    while time.time() < end:
        try:
            # What a short send left goes first: frames stay whole.
            if not buf:
                buf = chunk
            n = s.send(buf)
            buf = buf[n:]
            sent += n
        except BlockingIOError:
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
    if not closed:
        closed = closed_by_peer(s, 0.5)
    return {"sent": sent, "closed": closed, "secs": round(time.time() - t0, 2)}

def auth_flood(port, secs, n, src):
    """Wrong AUTHs at full speed on n connections for secs: answers per second."""
    def dial():
        while True:  # a connection reset as it opened (closed unanswered): again
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((src, 0))
                s.connect(("127.0.0.1", port))
                s.sendall(enc("AUTH", "guess-" + os.urandom(8).hex()))
                s.setblocking(False)
                return s
            except (ConnectionResetError, BrokenPipeError):
                s.close()
    socks = {}
    for _ in range(n):
        s = dial()
        socks[s] = b""
    answers = wrongpass = closes = 0
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select(list(socks), [], [], 0.05)
        for s in r:
            try:
                d = s.recv(4096)
            except OSError:
                d = b""
            if not d:
                closes += 1
                del socks[s]
                s.close()
                socks[dial()] = b""
                continue
            buf = socks[s] + d
            while b"\r\n" in buf:
                line, buf = buf.split(b"\r\n", 1)
                answers += 1
                wrongpass += line.startswith(b"-WRONGPASS")
                s.sendall(enc("AUTH", "guess-" + os.urandom(8).hex()))
            socks[s] = buf
    for s in socks:
        s.close()
    return {"secs": secs, "conns": n, "answers": answers, "wrongpass": wrongpass,
            "closed_unanswered": closes, "per_s": round(answers / secs, 2)}

def kill_loop(port, secs, targets):
    """What a connection with no credential tries to cut the agents' links."""
    targets = list(targets)
    out = {"sent": 0, "errors": {}, "zero": 0, "killed": 0, "ok": 0, "listed": 0,
           "closed": 0}

    def ask(f, s, *a):
        s.sendall(enc(*a))
        out["sent"] += 1
        line = f.readline()
        if not line:
            raise ConnectionResetError
        line = line.decode(errors="replace").rstrip("\r\n")
        if line.startswith("-"):
            w = line[1:].split(" ", 1)[0]
            out["errors"][w] = out["errors"].get(w, 0) + 1
        elif line.startswith(":"):
            if int(line[1:]):
                out["killed"] += int(line[1:])
            else:
                out["zero"] += 1
        elif line.startswith("+"):
            out["ok"] += 1
        elif line.startswith("$"):
            body = f.read(int(line[1:]) + 2).decode(errors="replace")
            out["listed"] += 1
            for w in body.split():
                if w.startswith("addr=") and w[5:] not in targets:
                    targets.append(w[5:])
        return line

    end = time.time() + secs
    while time.time() < end:
        try:
            s = conn(port)
            f = s.makefile("rb")
            while time.time() < end:
                # TYPE normal between every other try: a link dialled again is
                # cut again before its handshake is done.
                tries = [("CLIENT", "LIST")]
                for t in targets:
                    tries += [("CLIENT", "KILL", "ADDR", t), ("CLIENT", "KILL", t)]
                tries += [("CLIENT", "KILL", "ID", str(i)) for i in range(1, 65)]
                for a in tries:
                    ask(f, s, "CLIENT", "KILL", "TYPE", "normal")
                    ask(f, s, *a)
                    if time.time() >= end:
                        break
        except OSError:
            out["closed"] += 1
            time.sleep(0.01)
    out["targets"] = len(targets)
    return out

def metrics_flood(port, n, secs):
    import resource
    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 256, n + 256))
    socks, made, closed, refused = {}, 0, 0, 0
    drip = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 10000

    def dial(i):
        nonlocal made, refused
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind(("127.0.1.%d" % (1 + i % 16), 0))
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            refused += 1
            s.close()
            return
        socks[s.fileno()] = (s, i, 0)
        made += 1

    for i in range(n):
        dial(i)
    end, last_drip = time.time() + secs, time.time()
    while time.time() < end:
        p = select.poll()
        for fd in socks:
            p.register(fd, select.POLLIN)
        for fd, ev in p.poll(100):
            s, i, _ = socks[fd]
            try:
                d = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                d = b""
            if not d:
                del socks[fd]
                s.close()
                closed += 1
                dial(i)
        if time.time() - last_drip >= 1:
            last_drip = time.time()
            for fd, (s, i, off) in list(socks.items()):
                if i % 3 == 0 and off < len(drip):
                    try:
                        s.send(drip[off:off + 1])
                        socks[fd] = (s, i, off + 1)
                    except OSError:
                        pass
    print(json.dumps({"made": made, "closed": closed, "refused": refused, "open": len(socks)}))

def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "status-flood":
        r = flood(port, float(sys.argv[3]), b"", enc("FLATLINE", "STATUS"))
    elif mode == "ping-sub":
        r = flood(port, float(sys.argv[3]), enc("SUBSCRIBE", "+switch-master"), enc("PING"))
    elif mode == "partial":
        n, secs = int(sys.argv[3]), float(sys.argv[4])
        socks = []
        for _ in range(n):
            s = conn(port)
            s.sendall(b"*1\r\n$60000\r\n" + b"a" * 30000)
            socks.append(s)
        t0 = time.time()
        closed = sum(1 for s in socks if closed_by_peer(s, max(0.01, secs - (time.time() - t0))))
        r = {"conns": n, "closed": closed, "secs": round(time.time() - t0, 2)}
    elif mode == "bigframe":
        s = conn(port)
        s.sendall(b"*1\r\n$1000000\r\n" + b"a" * 1000)
        r = {"reply": s.recv(200).decode(errors="replace").strip()}
    elif mode == "conns":
        n, secs = int(sys.argv[3]), float(sys.argv[4])
        socks, refused, errs = [], 0, 0
        for _ in range(n):
            try:
                socks.append(conn(port))
            except OSError:
                errs += 1
        time.sleep(0.5)
        for s in socks:
            s.setblocking(False)
            try:
                d = s.recv(200)
                if b"max number of clients" in d:
                    refused += 1
            except BlockingIOError:
                pass
            except OSError:
                pass
        time.sleep(secs)
        r = {"conns": len(socks), "refused": refused, "connect_errors": errs}
    elif mode == "hello-flood":
        n = int(sys.argv[3])
        s = conn(port)
        f = s.makefile("rb")
        batch = 500
        got = 0
        for i in range(0, n, batch):
            s.sendall(b"".join(enc("HELLO", "flatline", 2, "x%d-%s" % (j, os.urandom(8).hex()), "ab" * 32)
                               for j in range(i, min(n, i + batch))))
            for _ in range(min(n, i + batch) - i):
                line = f.readline()
                if not line:
                    break
                got += 1
        r = {"sent": n, "answered": got}
    elif mode == "auth-guess":
        s = conn(port)
        s.settimeout(10)
        f = s.makefile("rb")
        answers = []
        for i in range(int(sys.argv[3])):
            s.sendall(enc("AUTH", "guess-%d-guess-guess" % i))
            answers.append(f.readline().decode(errors="replace").strip()[:9])
        r = {"answers": answers}
    elif mode == "kill-loop":
        r = kill_loop(port, float(sys.argv[3]), sys.argv[4:])
    elif mode == "auth-flood":
        r = auth_flood(port, float(sys.argv[3]), int(sys.argv[4]),
                       sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1")
    elif mode == "metrics-flood":
        metrics_flood(port, int(sys.argv[3]), float(sys.argv[4]))
        return 0
    elif mode == "crlf-id":
        s = conn(port)
        s.sendall(enc("HELLO", "flatline", 1, "n1\r\nflatline: FORGED controller_start", "x"))
        r = {"reply": s.recv(200).decode(errors="replace").strip()}
    else:
        print("unknown mode", file=sys.stderr)
        return 2
    print(json.dumps(r))
    return 0

sys.exit(main())
