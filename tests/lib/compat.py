#!/usr/bin/python3
"""flatline's Sentinel API against a real redis-sentinel (tests/integration/
test_sentinel_compat.sh).

  compat.py shapes HOST PORT SHARD [SECRET] > FILE.json
      asks every command below (raw RESP2, its own tiny client: no library's reply
      parsing in between) and writes each reply's shape: the RESP type tree, the
      field names of map-like replies (flat key/value arrays, INFO sections, CLIENT
      LIST lines).
  compat.py compare SENTINEL.json FLATLINE.json SENTINEL-EVENTS FLATLINE-EVENTS
      prints the comparison command by command and the event streams kind by kind;
      exits 1 when a difference is not one of the known ones (KNOWN, each with its
      reason, the same as the table in docs/sentinel.md).
"""
import json
import socket
import sys

COMMANDS = [
    ("PING",),
    ("HELLO", "2"),
    ("ROLE",),
    ("INFO",),
    ("INFO", "sentinel"),
    ("CLIENT", "ID"),
    ("CLIENT", "GETNAME"),
    ("CLIENT", "LIST"),
    ("CLIENT", "INFO"),
    ("COMMAND", "COUNT"),
    ("COMMAND", "INFO", "ping"),
    ("SENTINEL", "MYID"),
    ("SENTINEL", "MASTERS"),
    ("SENTINEL", "MASTER", "{shard}"),
    ("SENTINEL", "REPLICAS", "{shard}"),
    ("SENTINEL", "SLAVES", "{shard}"),
    ("SENTINEL", "SENTINELS", "{shard}"),
    ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "{shard}"),
    ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nosuchshard"),
    ("SENTINEL", "MASTER", "nosuchshard"),
    ("SENTINEL", "CKQUORUM", "{shard}"),
    ("SENTINEL", "CONFIG", "GET", "*"),
    ("SENTINEL", "DEBUG"),
    ("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "{ip}", "{port}", "0", "*"),
    ("SENTINEL", "PENDING-SCRIPTS"),
    ("SENTINEL", "INFO-CACHE", "{shard}"),
    ("SENTINEL", "SIMULATE-FAILURE", "HELP"),
    ("SENTINEL", "SET", "{shard}", "down-after-milliseconds", "60000"),
    ("SENTINEL", "SET", "{shard}", "notification-script", "/bin/true"),
    ("SENTINEL", "RESET", "nosuchshard*"),
    ("SENTINEL", "FLUSHCONFIG"),
    ("SENTINEL", "MONITOR", "{shard}", "{ip}", "{port}", "1"),
]

# (command, difference) -> why. A difference is "missing FIELD", "extra FIELD" or
# "type ...". docs/sentinel.md's table of differences says the same.
KNOWN = {
    ("COMMAND COUNT", "value"): "flatline counts the commands it serves",
    ("SENTINEL CKQUORUM", "value"): "one controller: '1 usable Sentinels'",
}
KNOWN_FIELD_PREFIX = {
    # INFO: flatline prints the fields it has a meaning for
    "INFO": "flatline prints Server, Clients and Sentinel with the fields it has a value for",
    "INFO sentinel": "",
    "CLIENT LIST": "",
    "CLIENT INFO": "",
    "SENTINEL DEBUG": "flatline's timers are not Sentinel's: only those that map",
    "SENTINEL CONFIG": "",
}


class Conn:
    def __init__(self, host, port):
        self.s = socket.create_connection((host, port), timeout=5)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError
            self.buf += d
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def _bulk(self, n):
        while len(self.buf) < n + 2:
            self.buf += self.s.recv(65536)
        d, self.buf = self.buf[:n], self.buf[n + 2:]
        return d.decode(errors="replace")

    def read(self):
        line = self._line()
        t, rest = line[0], line[1:]
        if t == "+":
            return ("status", rest)
        if t == "-":
            return ("error", rest)
        if t == ":":
            return ("int", int(rest))
        if t == "$":
            n = int(rest)
            return ("nil", None) if n < 0 else ("bulk", self._bulk(n))
        if t == "*":
            n = int(rest)
            return ("nilarray", None) if n < 0 else ("array", [self.read() for _ in range(n)])
        raise ValueError("unexpected reply type %r" % t)

    def cmd(self, *args):
        out = "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a.encode()), a) for a in args)
        self.s.sendall(out.encode())
        return self.read()


def flat_keys(r):
    """A flat key/value array's keys, or None."""
    if r[0] != "array" or len(r[1]) % 2 or not r[1]:
        return None
    ks = r[1][0::2]
    if not all(k[0] == "bulk" for k in ks):
        return None
    return sorted(k[1] for k in ks)


def shape(name, r):
    """A comparable description of reply r of command name."""
    t = r[0]
    if t in ("error",):
        return {"type": "error", "value": r[1].split(" ")[0]}
    if name.startswith("INFO") and t == "bulk":
        secs, cur = {}, None
        for line in r[1].split("\r\n"):
            if line.startswith("# "):
                cur = line[2:]
                secs[cur] = []
            elif ":" in line and cur:
                k = line.split(":", 1)[0]
                secs[cur].append("masterN" if k.startswith("master") and k[6:].isdigit() else k)
        return {"type": "bulk", "sections": {k: sorted(set(v)) for k, v in secs.items()}}
    if name in ("CLIENT LIST", "CLIENT INFO") and t == "bulk":
        line = r[1].strip().split("\n")[0]
        return {"type": "bulk", "fields": sorted(f.split("=", 1)[0] for f in line.split(" "))}
    if t == "array":
        ks = flat_keys(r)
        if name in ("SENTINEL MASTER", "HELLO", "SENTINEL CONFIG", "SENTINEL DEBUG") and ks:
            return {"type": "map", "fields": ks}
        if name in ("SENTINEL MASTERS", "SENTINEL REPLICAS", "SENTINEL SLAVES") and r[1]:
            return {"type": "array of maps", "fields": flat_keys(r[1][0]) or []}
        return {"type": "array", "items": [shape(name + "[]", x)["type"] for x in r[1]][:12]}
    if t == "status":
        return {"type": "status", "value": r[1].split(" ")[0]}
    if t == "int":
        return {"type": "int"}
    return {"type": t}


def cmd_name(c):
    if c[0] in ("SENTINEL", "CLIENT", "COMMAND") and len(c) > 1:
        return c[0] + " " + c[1].upper()
    if c[0] == "INFO" and len(c) > 1:
        return "INFO " + c[1]
    return c[0]


def do_shapes(host, port, shard, secret):
    c = Conn(host, int(port))
    master = None
    if secret:
        c.cmd("AUTH", secret)
    r = c.cmd("SENTINEL", "GET-MASTER-ADDR-BY-NAME", shard)
    if r[0] == "array":
        master = (r[1][0][1], r[1][1][1])
    out = []
    for cmd in COMMANDS:
        args = [a.format(shard=shard, ip=master[0] if master else "?",
                         port=master[1] if master else "0") for a in cmd]
        name = cmd_name(cmd)
        out.append({"cmd": " ".join(cmd), "name": name, "shape": shape(name, c.cmd(*args))})
    json.dump(out, sys.stdout, indent=1)


def kinds(path):
    """The event stream's kinds, in order, from a sentinel_events.py record."""
    with open(path) as f:
        return [line.split(" ", 1)[0] for line in f if line.strip()]


# Kinds Sentinel sends that flatline does not, with the reason.
KNOWN_EVENTS = {
    "+vote-for-leader": "one controller: no Sentinel peers to vote with",
    "+sentinel": "no Sentinel peers to discover",
    "+reboot": "the servers' restarts are the agents' (proc events)",
    "+role-change": "sent by Sentinel when a replica's reported role settles; flatline repoints it in the failover",
    "+fix-slave-config": "flatline repairs stray replicas with its own event (replica_repointed)",
    "-dup-sentinel": "no Sentinel peers",
    "+config-update-from": "no Sentinel peers",
}


# Kinds flatline sends earlier than Sentinel on purpose, with the reason and the kind
# they must still follow.
KNOWN_EARLY = {
    "+switch-master": ("published at the promotion, once the new primary accepts writes "
                       "(Sentinel: after +failover-end, once every replica is reconfigured)",
                       "+promoted-slave"),
}


def do_compare(sj, fj, se, fe):
    with open(sj) as f:
        s = json.load(f)
    with open(fj) as f:
        fl = json.load(f)
    bad = 0
    print("| command | Sentinel | flatline | verdict |")
    print("|---|---|---|---|")
    for a, b in zip(s, fl):
        sa, sb = a["shape"], b["shape"]
        name = a["name"]
        if sa == sb:
            print("| `%s` | %s | same | ok |" % (a["cmd"], sa["type"]))
            continue
        diffs = []
        if sa["type"] != sb["type"]:
            diffs.append("type %s vs %s" % (sa["type"], sb["type"]))
        elif "value" in sa and sa.get("value") != sb.get("value"):
            diffs.append("value")
        for key in ("fields",):
            if key in sa and key in sb:
                miss = sorted(set(sa[key]) - set(sb[key]))
                extra = sorted(set(sb[key]) - set(sa[key]))
                if miss:
                    diffs.append("missing " + ",".join(miss))
                if extra:
                    diffs.append("extra " + ",".join(extra))
        if "sections" in sa and "sections" in sb:
            for sec in sa["sections"]:
                if sec not in sb["sections"]:
                    diffs.append("missing section " + sec)
                    continue
                miss = sorted(set(sa["sections"][sec]) - set(sb["sections"][sec]))
                if miss:
                    diffs.append("%s: missing %s" % (sec, ",".join(miss)))
        if "items" in sa and "items" in sb and sa["type"] == sb["type"] == "array":
            if sa["items"][:1] != sb["items"][:1] and sa["items"] and sb["items"]:
                diffs.append("items %s vs %s" % (sa["items"][:3], sb["items"][:3]))
        verdict = []
        for d in diffs:
            why = KNOWN.get((name, d.split(" ")[0]))
            if why is None and name in KNOWN_FIELD_PREFIX and (
                    d.startswith("missing") or d.startswith("extra") or ": missing" in d):
                why = KNOWN_FIELD_PREFIX[name] or "fields flatline has no value for"
            if why is None and d.startswith("extra"):
                why = "flatline's own addition"
            if why is None:
                bad += 1
                verdict.append("**DIFFERS**")
            else:
                verdict.append(why)
        print("| `%s` | %s | %s | %s |" % (a["cmd"], sa["type"], "; ".join(diffs) or sb["type"],
                                          "; ".join(verdict) or "ok"))
    # The event streams: every kind Sentinel sent, in Sentinel's order, in flatline's
    # stream (after the failover starts), apart from the known ones.
    sk, fk = kinds(se), kinds(fe)
    print()
    print("| Sentinel's event stream | flatline | verdict |")
    print("|---|---|---|")
    pos = 0
    for k in sk:
        if k in KNOWN_EVENTS:
            print("| `%s` | not sent | %s |" % (k, KNOWN_EVENTS[k]))
            continue
        if k in KNOWN_EARLY:
            why, after = KNOWN_EARLY[k]
            if fk.count(k) == 1 and after in fk and fk.index(after) < fk.index(k):
                print("| `%s` | `%s`, after `%s` | %s |" % (k, k, after, why))
            else:
                print("| `%s` | %s | **DIFFERS** |" % (
                    k, "missing" if k not in fk else "not once after " + after))
                bad += 1
            continue
        try:
            j = fk.index(k, pos)
            print("| `%s` | `%s` | ok |" % (k, fk[j]))
            pos = j + 1
        except ValueError:
            where = "out of order" if k in fk else "missing"
            print("| `%s` | %s | **DIFFERS** |" % (k, where))
            bad += 1
    extra = sorted(set(fk) - set(sk))
    if extra:
        print("\nflatline sends besides: " + ", ".join(extra))
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "shapes":
        do_shapes(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else "")
    else:
        sys.exit(do_compare(*sys.argv[2:6]))
