#!/usr/bin/env python3
# A forger of echo replies, for the tests of the probes' random data: run (as root) in a
# peer's namespace whose kernel does not answer echo requests itself
# (net.ipv4.icmp_echo_ignore_all = 1), it reads every ICMP echo request from --from on a
# raw socket and answers it with an echo reply of the same id and sequence number but
# other data (each byte of the request's data inverted). A prober that checks only id
# and seq takes that for its peer's answer; one that checks its random data does not.
# One line per reply sent on stdout ("spoofed ID SEQ"), flushed.
import argparse
import socket
import struct
import sys


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="src", required=True, help="the prober's IPv4 address")
    a = ap.parse_args()
    rx = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    tx = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    while True:
        pkt, addr = rx.recvfrom(2048)
        if addr[0] != a.src or len(pkt) < 20:
            continue
        ihl = (pkt[0] & 0xF) * 4
        icmp = pkt[ihl:]
        if len(icmp) < 8 or icmp[0] != 8 or icmp[1] != 0:
            continue
        ident, seq = struct.unpack("!HH", icmp[4:8])
        data = bytes(b ^ 0xFF for b in icmp[8:])
        hdr = struct.pack("!BBHHH", 0, 0, 0, ident, seq)
        reply = hdr[:2] + struct.pack("!H", csum(hdr + data)) + hdr[4:] + data
        tx.sendto(reply, (a.src, 0))
        print("spoofed", ident, seq, flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
