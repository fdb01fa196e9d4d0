#!/usr/bin/python3
"""Emulated agents for bench/scale.sh: the report load of many `flatline agent`s
through one controller, without a BPF program per server.

For each node given (--node ID=PORT, or --nodes-file with "ID PORT" lines) it holds one
connection to the controller (HELLO flatline 1 ID SECRET, docs/protocol.md) and one to
the node's redis-server on 127.0.0.1:PORT, and every --heartbeat-ms it reads
`INFO replication` from the server and sends the whole state as a REPORT, as the agent
does: proc up/down, pid, role, master_host/port, master_link_status, master_replid,
repl_offset, connected_slaves... A server that does not answer is reported `proc down`.
It does not watch processes in the kernel: nodes whose death is measured need a real
agent.

On SIGTERM prints a JSON summary (reports sent and answered, reconnects, CPU seconds)."""
import argparse
import asyncio
import json
import os
import resource
import signal
import sys
import time

stats = {"nodes": 0, "reports": 0, "answered": 0, "ctl_reconnects": 0, "errors": 0}


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


async def read_reply(r):
    line = await r.readline()
    if not line:
        raise ConnectionError("closed")
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b":"):
        return rest.decode()
    if t == b"-":
        return Exception(rest.decode())
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = await r.readexactly(n + 2)
        return data[:-2].decode(errors="replace")
    if t == b"*":
        n = int(rest)
        return [await read_reply(r) for _ in range(max(n, 0))]
    raise ConnectionError("bad reply %r" % line)


def parse_info(text):
    d = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, _, v = line.partition(":")
            d[k] = v.strip()
    return d


async def node_loop(node, port, a):
    hb = a.heartbeat_ms / 1000.0
    pid = 0
    while True:
        try:
            cr, cw = await asyncio.open_connection(a.ctl_host, a.ctl_port)
            cw.write(enc("HELLO", "flatline", 1, node, a.secret))
            rep = await read_reply(cr)
            if isinstance(rep, Exception):
                print("%s: HELLO refused: %s" % (node, rep), file=sys.stderr)
                await asyncio.sleep(1)
                continue
            seq = 0
            rr = rw = None
            proc = "unknown"
            change_ms = int(time.time() * 1000)
            last = None
            while True:
                info = None
                refused = False
                # A dropped connection (a promotion's CLIENT KILL TYPE normal drops ours)
                # is retried at once; only a refused connect means the server is gone,
                # as "nothing listens on its address" does for the agent.
                for _attempt in (1, 2):
                    try:
                        if rr is None:
                            rr, rw = await asyncio.wait_for(
                                asyncio.open_connection("127.0.0.1", port), hb)
                            rw.write(enc("INFO", "server"))
                            srv = parse_info(await asyncio.wait_for(read_reply(rr), hb))
                            pid = int(srv.get("process_id", 0))
                        rw.write(enc("INFO", "replication"))
                        info = parse_info(await asyncio.wait_for(read_reply(rr), hb))
                        break
                    except ConnectionRefusedError:
                        refused = True
                        rr = rw = None
                        break
                    except (OSError, asyncio.TimeoutError, ConnectionError, ValueError,
                            asyncio.IncompleteReadError):
                        if rw is not None:
                            rw.close()
                        rr = rw = None
                if info is None and not refused:
                    info = last  # not judged this round: the last state stands
                last = info
                st = "up" if info is not None else "down"
                if st != proc:
                    proc, change_ms = st, int(time.time() * 1000)
                kv = ["proc", proc, "pid", pid if info else 0, "proc_change_ms", change_ms,
                      "server", "redis"]
                if info:
                    role = info.get("role", "unknown")
                    kv += ["role", role]
                    if role == "slave":
                        kv += ["master_host", info.get("master_host", ""),
                               "master_port", info.get("master_port", "0"),
                               "master_link_status", info.get("master_link_status", "down"),
                               "master_last_io_seconds_ago",
                               info.get("master_last_io_seconds_ago", "-1"),
                               "master_sync_in_progress", info.get("master_sync_in_progress", "0"),
                               "repl_offset", info.get("slave_repl_offset", "0"),
                               "slave_priority", info.get("slave_priority", "100")]
                    else:
                        kv += ["repl_offset", info.get("master_repl_offset", "0"),
                               "connected_slaves", info.get("connected_slaves", "0")]
                    kv += ["master_replid", info.get("master_replid", "")]
                seq += 1
                cw.write(enc("REPORT", seq, *kv))
                stats["reports"] += 1
                rep = await asyncio.wait_for(read_reply(cr), 2 * hb + 1)
                if isinstance(rep, Exception):
                    stats["errors"] += 1
                    raise ConnectionError(str(rep))
                stats["answered"] += 1
                await asyncio.sleep(hb)
        except (OSError, asyncio.TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            stats["ctl_reconnects"] += 1
            await asyncio.sleep(0.1)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--controller", required=True, help="HOST:PORT")
    ap.add_argument("--secret", required=True)
    ap.add_argument("--heartbeat-ms", type=float, default=100)
    ap.add_argument("--node", action="append", default=[], help="ID=PORT")
    ap.add_argument("--nodes-file")
    a = ap.parse_args()
    a.ctl_host, _, p = a.controller.rpartition(":")
    a.ctl_port = int(p)
    nodes = [n.split("=", 1) for n in a.node]
    if a.nodes_file:
        nodes += [line.split() for line in open(a.nodes_file) if line.strip()]
    stats["nodes"] = len(nodes)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    t0 = time.monotonic()
    tasks = []
    for i, (node, port) in enumerate(nodes):
        tasks.append(asyncio.create_task(node_loop(node, int(port), a)))
        if i % 20 == 19:
            await asyncio.sleep(0.01)  # spread the heartbeats
    await stop.wait()
    for t in tasks:
        t.cancel()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    el = time.monotonic() - t0
    stats["cpu_s"] = round(ru.ru_utime + ru.ru_stime, 2)
    stats["seconds"] = round(el, 1)
    stats["reports_per_s"] = round(stats["reports"] / el, 1) if el else 0
    print(json.dumps(stats))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
