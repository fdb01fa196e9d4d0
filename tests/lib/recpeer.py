#!/usr/bin/python3
"""A recording test peer for the agent's controller link (docs/protocol.md).

Listens on 127.0.0.1:PORT, answers HELLO and REPORT as a controller would, and
appends every command it receives to OUT as one JSON object per line:
{"t": <unix time>, "conn": N, "cmd": "REPORT", "args": {...}}.
Speaks protocol version 2 (tests/lib/flauth.py): proves it holds the node's key,
derived from --secret (default the tests' s3cret-s3cret-s3cret), and checks the
agent's PROVE.
--secret S: the cluster secret it derives node keys from (a wrong one cannot prove).
--reject: HELLO is answered -AUTH.
--garbage: answer everything with bytes that are not RESP.
--silent: accept HELLO, never answer REPORT.
--primary N / --epoch E: what REPORT answers say (default n1 at epoch 7).
"""
import argparse, hmac, json, os, socket, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flauth

def read_command(f):
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        raise ValueError("not an array")
    n = int(line[1:])
    args = []
    for _ in range(n):
        hdr = f.readline()
        if not hdr.startswith(b"$"):
            raise ValueError("not a bulk string")
        ln = int(hdr[1:])
        data = f.read(ln + 2)[:-2]
        args.append(data.decode("utf-8", "replace"))
    return args

def serve(conn, cid, opts, out, lock):
    f = conn.makefile("rb")
    hs = {}
    try:
        while True:
            args = read_command(f)
            if args is None:
                break
            rec = {"t": time.time(), "conn": cid, "cmd": args[0].upper()}
            if rec["cmd"] == "REPORT":
                rec["seq"] = int(args[1])
                rec["args"] = dict(zip(args[2::2], args[3::2]))
            else:
                rec["argv"] = args[1:] if rec["cmd"] != "HELLO" else args[1:4]
            with lock:
                out.write(json.dumps(rec) + "\n")
                out.flush()
            if opts.garbage:
                conn.sendall(b"@@garbage\r\n")
                continue
            if rec["cmd"] == "HELLO":
                if opts.reject:
                    conn.sendall(b"-AUTH wrong key\r\n")
                elif len(args) != 5 or args[2] != "2":
                    conn.sendall(b"-VERSION this controller speaks flatline protocol version 2 only\r\n")
                else:
                    node, na, nc = args[3], args[4], flauth.nonce()
                    key = flauth.node_key(opts.secret, node)
                    hs.update(node=node, na=na, nc=nc, key=key)
                    conn.sendall(b"*3\r\n+CHALLENGE\r\n" + flauth.enc(nc)[4:] +
                                 flauth.enc(flauth.proof(key, "controller", node, na, nc))[4:])
            elif rec["cmd"] == "PROVE":
                want = flauth.proof(hs["key"], "agent", hs["node"], hs["na"], hs["nc"]) if hs else ""
                if hs and len(args) == 2 and hmac.compare_digest(args[1], want):
                    conn.sendall(b"+OK\r\n")
                else:
                    conn.sendall(b"-AUTH wrong key for this node\r\n")
                    break
            elif rec["cmd"] == "REPORT":
                if not opts.silent:
                    p = opts.primary.encode()
                    conn.sendall(b"*3\r\n$2\r\nOK\r\n:%d\r\n$%d\r\n%s\r\n" % (opts.epoch, len(p), p))
            else:
                conn.sendall(b"-ERR unknown command\r\n")
    except (ValueError, OSError):
        pass
    finally:
        conn.close()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("out")
    ap.add_argument("--secret", default="s3cret-s3cret-s3cret")
    ap.add_argument("--reject", action="store_true")
    ap.add_argument("--garbage", action="store_true")
    ap.add_argument("--silent", action="store_true")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--primary", default="n1", help="the primary REPORT answers name")
    ap.add_argument("--epoch", type=int, default=7)
    opts = ap.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((opts.bind, opts.port))
    s.listen(16)
    out = open(opts.out, "a")
    lock = threading.Lock()
    cid = 0
    while True:
        conn, _ = s.accept()
        cid += 1
        threading.Thread(target=serve, args=(conn, cid, opts, out, lock), daemon=True).start()

main()
