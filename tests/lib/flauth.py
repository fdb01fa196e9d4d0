#!/usr/bin/python3
"""The agent <-> controller handshake, protocol version 2 (user/common/auth.h,
docs/protocol.md), for the test peers and tools written in Python.

As a module: node_key(secret, node), proof(key, role, node, na_hex, nc_hex),
nonce(). As a command, an agent's side against a controller:

  flauth.py hello HOST:PORT NODE SECRET [COMMAND...]
      HELLO, check the controller's proof, PROVE, then each COMMAND (words
      separated by spaces); prints every reply, one per line.
  flauth.py hello-only HOST:PORT NODE VERSION
      HELLO flatline VERSION NODE <nonce>; prints the reply.
  flauth.py prove-wrong HOST:PORT NODE
      HELLO, then PROVE with a made-up proof; prints both replies.
  flauth.py hello-silent HOST:PORT NODE SECRET [COMMAND...]
      as hello (the commands sent at once, each split in two writes 50 ms
      apart), then silent until the controller closes the connection (10 s at
      most); prints "closed after N ms".
"""
import hashlib, hmac, os, socket, sys, time

def node_key(secret, node):
    return hmac.new(secret.encode(), b"flatline-node-key:" + node.encode(), hashlib.sha256).digest()

def proof(key, role, node, na_hex, nc_hex):
    msg = "flatline-v2 %s\n%s\n%s\n%s" % (role, node, na_hex, nc_hex)
    return hmac.new(key, msg.encode(), hashlib.sha256).hexdigest()

def nonce():
    return os.urandom(32).hex()

def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out

def read_reply(f):
    line = f.readline()
    if not line:
        raise EOFError("connection closed")
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b"-"):
        return (t.decode() + rest.decode("utf-8", "replace"))
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2].decode("utf-8", "replace")
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise ValueError("not RESP: %r" % line)

def connect(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=3)
    return s, s.makefile("rb")

def main():
    cmd, addr, node = sys.argv[1], sys.argv[2], sys.argv[3]
    s, f = connect(addr)
    na = nonce()
    if cmd == "hello-only":
        s.sendall(enc("HELLO", "flatline", sys.argv[4], node, na))
        print(read_reply(f))
        return 0
    s.sendall(enc("HELLO", "flatline", 2, node, na))
    ch = read_reply(f)
    print(ch)
    if not isinstance(ch, list) or ch[0] != "+CHALLENGE":
        return 1
    if cmd == "prove-wrong":
        s.sendall(enc("PROVE", "00" * 32))
        print(read_reply(f))
        return 0
    key = node_key(sys.argv[4], node)
    if not hmac.compare_digest(ch[2], proof(key, "controller", node, na, ch[1])):
        print("controller proof wrong", file=sys.stderr)
        return 1
    s.sendall(enc("PROVE", proof(key, "agent", node, na, ch[1])))
    print(read_reply(f))
    if cmd == "hello-silent":
        frames = b"".join(enc(*c.split(" ")) for c in sys.argv[5:])
        s.sendall(frames[:len(frames) // 2])
        time.sleep(0.05)
        s.sendall(frames[len(frames) // 2:])
        for _ in sys.argv[5:]:
            print(read_reply(f))
        t0 = time.monotonic()
        s.settimeout(10)
        try:
            while s.recv(4096):
                pass
        except socket.timeout:
            print("not closed in 10 s")
            return 1
        print("closed after %d ms" % ((time.monotonic() - t0) * 1000))
        return 0
    for c in sys.argv[5:]:
        s.sendall(enc(*c.split(" ")))
        print(read_reply(f))
    return 0

if __name__ == "__main__":
    sys.exit(main())
