#!/usr/bin/python3
"""Records the Sentinel event stream as a Sentinel client or script sees it:
PSUBSCRIBE * on a Sentinel (or flatline's controller), one line per message,
"<channel> <payload>", flushed; flatline's own flatline.* JSON channels skipped.
usage: sentinel_events.py HOST PORT OUT
"""
import sys

import redis


def main():
    r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), socket_timeout=None)
    p = r.pubsub(ignore_subscribe_messages=True)
    p.psubscribe("*")
    with open(sys.argv[3], "w", buffering=1) as out:
        for m in p.listen():
            ch = m["channel"].decode()
            if m["type"] != "pmessage" or ch.startswith("flatline."):
                continue
            out.write("%s %s\n" % (ch, m["data"].decode()))


if __name__ == "__main__":
    main()
