#!/usr/bin/python3
"""Records sd_notify(3) datagrams as systemd would receive them.

Usage: notifyrec.py SOCKET OUT: binds a unix datagram socket at SOCKET and appends
each message to OUT, one line per assignment (READY=1, STATUS=..., WATCHDOG=1),
flushed at once. Runs until killed.
"""
import os, socket, sys

path, out = sys.argv[1], sys.argv[2]
if os.path.exists(path):
    os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(out, "a", buffering=1) as f:
    while True:
        msg = s.recv(4096).decode("utf-8", "replace")
        for line in msg.split("\n"):
            if line:
                f.write(line + "\n")
