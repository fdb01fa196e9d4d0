#!/usr/bin/python3
"""A hostile RESP peer: a fake controller or a fake Redis that misbehaves on purpose
(tests/integration/test_hostile.sh).

Listens on 127.0.0.1:PORT; each connection is numbered and logged to OUT as one
JSON line {"t", "conn", "cmd"} per command received. What it answers depends on MODE:

  extra-hello   HELLO -> a valid CHALLENGE and "+OK" (a reply nobody asked for:
                the agent's PROVE is sent after those bytes arrived)
  extra-report  handshake; REPORT -> its answer and "+EXTRA"
  report-type   handshake; REPORT -> ":1" (not the array protocol.md says)
  unproven      HELLO -> a CHALLENGE whose proof is wrong (a fake controller
                without the key): the agent must not PROVE nor REPORT
  info-extra    as a Redis primary, but INFO is followed by "+OK"
  crlf-error    HELLO -> an error whose text holds a CR and a forged log line
  unsolicited   accept, then send "+OK" before any command
  huge-bulk     any command -> "$4294967296" and then bytes as fast as it can
  deep          any command -> 100000 nested "*1" headers
  wide          any command -> "*100000000" and then ":1" elements as fast as it can
  drip          any command -> "$1000000" and then one byte every 100 ms
  resp3         any command -> a RESP3 map ("%1")
"""
import json, os, socket, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flauth

SECRET = "s3cret-s3cret-s3cret" # the tests' cluster secret

INFO = (b"# Server\r\nredis_version:7.0.0\r\nprocess_id:1\r\ntcp_port:6379\r\n"
        b"run_id:0123456789012345678901234567890123456789\r\n"
        b"# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
        b"master_replid:0123456789012345678901234567890123456789\r\nmaster_repl_offset:0\r\n")

def read_command(f):
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return [line.strip().decode("utf-8", "replace")]
    args = []
    for _ in range(int(line[1:])):
        ln = int(f.readline()[1:])
        args.append(f.read(ln + 2)[:-2].decode("utf-8", "replace"))
    return args

def flood(conn, first, unit):
    conn.sendall(first)
    chunk = unit * (65536 // len(unit))
    while True:
        conn.sendall(chunk)

def challenge(args, wrong=False):
    node, na, nc = args[3], args[4], flauth.nonce()
    p = "00" * 32 if wrong else flauth.proof(flauth.node_key(SECRET, node), "controller", node, na, nc)
    return b"*3\r\n+CHALLENGE\r\n" + flauth.enc(nc)[4:] + flauth.enc(p)[4:]

def answer(conn, mode, cmd, args):
    if mode == "huge-bulk":
        flood(conn, b"$4294967296\r\n", b"a")
    elif mode == "wide":
        flood(conn, b"*100000000\r\n", b":1\r\n")
    elif mode == "deep":
        conn.sendall(b"*1\r\n" * 100000)
    elif mode == "drip":
        conn.sendall(b"$1000000\r\n")
        while True:
            conn.sendall(b"a")
            time.sleep(0.1)
    elif mode == "resp3":
        conn.sendall(b"%1\r\n+a\r\n+b\r\n")
    elif cmd == "HELLO" and mode == "crlf-error":
        conn.sendall(b"-AUTH no\rflatline: FORGED controller says hi\r\n")
    elif cmd == "HELLO" and len(args) == 5:
        conn.sendall(challenge(args, mode == "unproven") + (b"+OK\r\n" if mode == "extra-hello" else b""))
    elif cmd == "PROVE":
        conn.sendall(b"+OK\r\n")
    elif cmd == "REPORT" and mode == "report-type":
        conn.sendall(b":1\r\n")
    elif cmd == "REPORT":
        conn.sendall(b"*3\r\n$2\r\nOK\r\n:7\r\n$2\r\nn1\r\n" + (b"+EXTRA\r\n" if mode == "extra-report" else b""))
    elif cmd == "PING":
        conn.sendall(b"+PONG\r\n")
    elif cmd == "INFO":
        conn.sendall(b"$%d\r\n%s\r\n" % (len(INFO), INFO) + (b"+OK\r\n" if mode == "info-extra" else b""))
    else:
        conn.sendall(b"+OK\r\n")

def serve(conn, cid, mode, out, lock):
    f = conn.makefile("rb")
    try:
        if mode == "unsolicited":
            conn.sendall(b"+OK\r\n")
        while True:
            args = read_command(f)
            if not args:
                break
            with lock:
                out.write(json.dumps({"t": time.time(), "conn": cid, "cmd": args[0].upper()}) + "\n")
                out.flush()
            answer(conn, mode, args[0].upper(), args)
    except (ValueError, OSError):
        pass
    finally:
        conn.close()

def main():
    port, out, mode = int(sys.argv[1]), open(sys.argv[2], "a"), sys.argv[3]
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    lock = threading.Lock()
    cid = 0
    while True:
        conn, _ = s.accept()
        cid += 1
        threading.Thread(target=serve, args=(conn, cid, mode, out, lock), daemon=True).start()

main()
