#!/usr/bin/python3
"""A fake controller on the controller's address (tests/integration/test_hostile_limits.sh):
records every byte it receives to OUT and answers each command +OK, except
FLATLINE PROVE: -ERR, or with --relay PORT the real controller's answer to the same
command (a listener that relays the CLI's nonce to the real controller).

  fakectl.py PORT OUT [--relay PORT]
"""
import socket, sys, threading

from flauth import enc  # RESP: a command as an array of bulk strings


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


def serve(conn, out, relay):
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
            else:
                conn.sendall(b"-ERR unknown subcommand\r\n")
        else:
            conn.sendall(b"+OK\r\n")
    conn.close()


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    relay = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--relay" else 0
    open(out, "wb").close()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, out, relay), daemon=True).start()


main()
