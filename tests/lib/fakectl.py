#!/usr/bin/python3
"""A fake controller on the controller's address (tests/integration/test_hostile_limits.sh):
records every byte it receives to OUT and answers each command +OK, except
FLATLINE PROVE: -ERR, or with --relay PORT the real controller's answer to the same
command (a listener that relays the CLI's nonce to the real controller), or with
--node-key SECRET NODE a right proof for this connection under NODE's key (what
root on NODE's host holds), whatever node the CLI asked for.

  fakectl.py PORT|/UNIX/PATH OUT [--relay PORT | --node-key SECRET NODE]
"""
import hashlib, hmac, socket, struct, sys, threading

from flauth import enc, node_key  # enc: a command as an array of bulk strings


def end_hex(addr):
    """A connection end as common/auth.c hashes it: 16-byte address, port."""
    ip, port = addr[0], addr[1]
    if ":" in ip:
        b = socket.inet_pton(socket.AF_INET6, ip)
    else:
        b = b"\0" * 10 + b"\xff\xff" + socket.inet_aton(ip)
    return (b + struct.pack(">H", port)).hex()


def cli_proof(key, node, nonce_hex, conn):
    if conn.family == socket.AF_UNIX:
        ends = ("unix", "unix")
    else:
        ends = (end_hex(conn.getpeername()), end_hex(conn.getsockname()))
    msg = "flatline-v2 controller-to-cli\n%s\n%s\n%s\n%s" % ((node, nonce_hex.lower()) + ends)
    return hmac.new(key, msg.encode(), hashlib.sha256).hexdigest()


def read_command(f):
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return line.split()
    args = []
    for _ in range(int(line[1:])):
        n = int(f.readline()[1:])
        args.append(f.read(n + 2)[:-2])
    return args


def serve(conn, out, relay, nkey):
    f = conn.makefile("rb")
    real = socket.create_connection(("127.0.0.1", relay)) if relay else None
    rf = real.makefile("rb") if real else None
    while True:
        args = read_command(f)
        if args is None:
            break
        with open(out, "ab") as o:
            o.write(b" ".join(args) + b"\n")
        if len(args) >= 2 and args[0].upper() == b"FLATLINE" and args[1].upper() == b"PROVE":
            if real:
                real.sendall(enc(*args))
                line = rf.readline()
                if line.startswith(b"$"):
                    line += rf.read(int(line[1:]) + 2)
                conn.sendall(line)
            elif nkey and len(args) == 4:
                p = cli_proof(nkey, args[2].decode(), args[3].decode(), conn).encode()
                conn.sendall(b"$%d\r\n%s\r\n" % (len(p), p))
            else:
                conn.sendall(b"-ERR unknown subcommand\r\n")
        else:
            conn.sendall(b"+OK\r\n")
    conn.close()


def main():
    where, out = sys.argv[1], sys.argv[2]
    relay = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--relay" else 0
    nkey = None
    if len(sys.argv) > 5 and sys.argv[3] == "--node-key":
        nkey = node_key(sys.argv[4], sys.argv[5])
    open(out, "wb").close()
    if where.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        s.bind(where)
    else:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(where)))
    s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, out, relay, nkey), daemon=True).start()


main()
