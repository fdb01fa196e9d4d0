#!/usr/bin/python3
"""The tables and plots of bench/compare.sh, from its per-trial results (JSON lines).

  compare_report.py RESULTS OUT

Prints (and writes to OUT/tables.md) one table of every fault, server and system side by
side, then a table per fault (min / median / max of each measure, and the ratios Sentinel
median / flatline median). Writes the distributions as SVG plots with gnuplot into OUT:
first-write.svg (a strip plot per fault: time from the fault to the first write a new
primary acknowledged, every trial a point, its median a bar; log scale) and slow.svg (the
slow commands: the writer's longest time without an acknowledged write, a trial that
failed over drawn as a cross). Without gnuplot it says so and writes no plot."""
import json
import os
import shutil
import statistics
import subprocess
import sys

FAULTS = [("sigkill", "kill -9"), ("sigstop", "SIGSTOP (hung)"),
          ("host", "host killed"), ("cut", "host cut off (nftables)"),
          ("slow", "1 s slow command (Lua busy loop)"),
          ("sleep", "1 s slow command (DEBUG SLEEP 1)"),
          # results of the Lua loop on Valkey before it counted CPU time: Valkey freezes
          # TIME within a script, so the loop ran until the busy threshold (5 s)
          ("slow5s", "5 s slow command (Lua busy loop, Valkey's frozen TIME)")]
SLOW = ("slow", "sleep", "slow5s")
SYSTEMS = [("flatline", "flatline"), ("sentinel-1s", "Sentinel, down-after 1 s"),
           ("sentinel-default", "Sentinel, defaults (down-after 30 s)")]


def fmt_ms(v):
    if v is None:
        return "-"
    if v < 10:
        return "%.1f ms" % v
    if v < 1000:
        return "%.0f ms" % v
    return "%.2f s" % (v / 1000)


def fmt_range(m, lo, hi):
    """median (min–max) in the median's unit: "7.3 (7.1–7.6) ms", "2.24 (2.21–2.27) s"."""
    if m >= 1000:
        return "%.2f (%.2f–%.2f) s" % (m / 1000, lo / 1000, hi / 1000)
    f = "%.1f" if m < 10 else "%.0f"
    return "%s (%s–%s) ms" % (f % m, f % lo, f % hi)


def load(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    for r in rows:
        r.setdefault("server", "Redis")  # results of runs made before the server column
        if r["sys"] == "flatline":
            # runs before the settings column all had lease_ms = 0 in the cluster file
            r.setdefault("settings", "unrecorded")
        if "failed_over" not in r:
            r["failed_over"] = r.get("first_write_ms") is not None
    return rows


def servers_of(rows):
    out = []
    for r in rows:
        if r["server"] not in out:
            out.append(r["server"])
    return out


def flatline_label(rows):
    s = sorted(set(r["settings"] for r in rows if r["sys"] == "flatline"))
    return "flatline, " + (" / ".join(s) if s else "defaults")


def cell(sr, fault):
    if not sr:
        return "not run"
    lost = sum(r["lost"] for r in sr if r.get("lost") is not None)
    if fault in SLOW:
        fo = sum(1 for r in sr if r["failed_over"])
        gaps = [r["max_gap_ms"] for r in sr if r.get("max_gap_ms") is not None]
        down = sum(1 for r in sr if r.get("detect_ms") is not None)
        s = ("**%d of %d failed over**" if fo else "%d of %d failed over") % (fo, len(sr))
        if down:  # declared down (node_down, +odown) whether or not it failed over
            s += " (declared down in %d)" % down
        return s + "; writes paused %s (max); lost %d" % (fmt_ms(max(gaps)) if gaps else "-",
                                                         lost)
    vals = [r["first_write_ms"] for r in sr if r.get("first_write_ms") is not None]
    miss = len(sr) - len(vals)
    if not vals:
        return "no new primary (%d trials); lost %d" % (len(sr), lost)
    s = "%s, n %d" % (fmt_range(statistics.median(vals), min(vals), max(vals)), len(vals))
    if miss:
        s += ", %d without recovery" % miss
    return s + "; lost %d" % lost


def summary(rows, out):
    servers = servers_of(rows)
    names = [flatline_label(rows)] + [n for k, n in SYSTEMS[1:]]
    out.append("| fault | server | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for fault, title in FAULTS:
        fr = [r for r in rows if r["fault"] == fault]
        if not fr:
            continue
        for srv in servers:
            if not any(r["server"] == srv for r in fr):
                continue
            cells = [cell([r for r in fr if r["sys"] == k and r["server"] == srv], fault)
                     for k, _ in SYSTEMS]
            out.append("| %s | %s | %s |" % (title, srv, " | ".join(cells)))


COLS = [("detection", "detect_ms"), ("new primary", "promoted_ms"),
        ("first acknowledged write", "first_write_ms"), ("DNS updated", "dns_ms"),
        ("longest write gap", "max_gap_ms"), ("acknowledged writes lost", "lost")]


def detail(rows, out):
    servers = servers_of(rows)
    for fault, title in FAULTS:
        fr = [r for r in rows if r["fault"] == fault]
        if not fr:
            continue
        out.append("\n### %s\n" % title)
        out.append("| server | system | trials | failed over | " +
                   " | ".join("%s min / median / max" % c for c, _ in COLS) + " |")
        out.append("|---|---|---|---|" + "---|" * len(COLS))
        med = {}
        for srv in servers:
            for sysname, label in SYSTEMS:
                sr = [r for r in fr if r["sys"] == sysname and r["server"] == srv]
                if not sr:
                    continue
                if sysname == "flatline":
                    label = flatline_label(sr)
                cells = []
                for c, k in COLS:
                    vals = [r[k] for r in sr if r.get(k) is not None]
                    if not vals:
                        cells.append("-")
                        continue
                    m = statistics.median(vals)
                    med[(srv, sysname, k)] = m
                    if k == "lost":
                        cells.append("%d / %g / %d" % (min(vals), m, max(vals)))
                    else:
                        cells.append("%s / %s / %s" % (fmt_ms(min(vals)), fmt_ms(m),
                                                       fmt_ms(max(vals))))
                fo = sum(1 for r in sr if r["failed_over"])
                out.append("| %s | %s | %d | %d | %s |" % (srv, label, len(sr), fo,
                                                          " | ".join(cells)))
            for sysname, label in SYSTEMS[1:]:
                if fault in SLOW or (srv, sysname, "first_write_ms") not in med or \
                        (srv, "flatline", "first_write_ms") not in med:
                    continue
                cells = []
                for c, k in COLS:
                    a, b = med.get((srv, "flatline", k)), med.get((srv, sysname, k))
                    if k in ("lost", "max_gap_ms") or a is None or b is None or a <= 0:
                        cells.append("-")
                    else:
                        cells.append(("%.1f×" if b / a < 10 else "%.0f×") % (b / a))
                out.append("| %s | %s ÷ flatline (medians) | | | %s |" % (srv, label,
                                                                         " | ".join(cells)))


COLOURS = {"flatline": "#1f77b4", "sentinel-1s": "#d62728", "sentinel-default": "#7f7f7f"}
SHORT = {"flatline": "flatline", "sentinel-1s": "Sentinel 1 s",
         "sentinel-default": "Sentinel 30 s"}


def jitter(i, n):
    return 0 if n <= 1 else -0.25 + 0.5 * i / (n - 1)


def strip(gp, data, panels, key, ylabel, logscale, title):
    """One multiplot of strip plots: panels is [(fault, title)], each with a category per
    server and system that has trials."""
    rows, cols = (2, 2) if len(panels) == 4 else (1, len(panels))
    gp.append("set multiplot layout %d,%d title %s" % (rows, cols, json.dumps(title)))
    gp.append("set lmargin 12")
    gp.append("set rmargin 2")
    for fault, ftitle, cats in panels:
        gp.append("set title %s" % json.dumps(ftitle))
        gp.append("set ylabel %s" % json.dumps(ylabel))
        gp.append("set logscale y\nset yrange [1:60000]" if logscale else "unset logscale y\nset yrange [0:*]")
        gp.append("set xrange [0.4:%f]" % (len(cats) + 0.6))
        gp.append("set xtics (%s) font ',8'" % ", ".join(
            "%s %d" % (json.dumps(lbl), i + 1) for i, (lbl, _, _) in enumerate(cats)))
        plots = []
        for i, (lbl, sysname, sr) in enumerate(cats):
            vals = [r for r in sr if r.get(key) is not None]
            if not vals:
                continue
            name = "%s-%d" % (fault, i)
            pts = ["%f %f %d" % (i + 1 + jitter(j, len(vals)), r[key], 1 if r["failed_over"] else 0)
                   for j, r in enumerate(vals)]
            data[name + ".dat"] = "\n".join(pts) + "\n"
            m = statistics.median(r[key] for r in vals)
            data[name + ".med"] = "%d %f\n" % (i + 1, m)
            c = COLOURS[sysname]
            if fault in SLOW:
                plots.append("'%s.dat' using 1:($3 == 0 ? $2 : 1/0) with points pt 7 ps 0.8 "
                             "lc rgb '%s' notitle" % (name, c))
                plots.append("'%s.dat' using 1:($3 == 1 ? $2 : 1/0) with points pt 2 ps 1.6 "
                             "lw 2 lc rgb '%s' notitle" % (name, c))
            else:
                plots.append("'%s.dat' using 1:2 with points pt 7 ps 0.8 lc rgb '%s' notitle" %
                             (name, c))
            plots.append("'%s.med' using 1:2:(0.33) with xerrorbars pt -1 lw 2 lc rgb '%s' "
                         "notitle" % (name, c))
        gp.append("plot " + ", \\\n  ".join(plots) if plots else "plot 1/0 notitle")
    gp.append("unset multiplot")


def categories(rows, fault):
    cats = []
    for srv in servers_of(rows):
        for sysname, _ in SYSTEMS:
            sr = [r for r in rows if r["fault"] == fault and r["sys"] == sysname and
                  r["server"] == srv]
            if sr:
                cats.append(("%s\n%s" % (SHORT[sysname], srv.split()[0]), sysname, sr))
    return cats


def plots(rows, outdir):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("(no gnuplot: no plots; scripts/install-deps.sh installs gnuplot-nox)")
        return []
    made = []
    flabel = flatline_label(rows)
    jobs = [("first-write.svg", [f for f in FAULTS if f[0] not in SLOW], "first_write_ms",
             "first write on the new primary (ms)", True,
             "Time from the fault to the first write a new primary acknowledged "
             "(every trial a point, the median a bar; %s)" % flabel),
            ("slow.svg", [f for f in FAULTS if f[0] in SLOW], "max_gap_ms",
             "longest time without an ack (ms)", False,
             "Slow commands on the primary: the writer's longest pause "
             "(dot: no failover, cross: failed over; %s)" % flabel)]
    for fname, faults, key, ylabel, log, title in jobs:
        panels = [(f, t, categories(rows, f)) for f, t in faults]
        panels = [p for p in panels if p[2]]
        if not panels:
            continue
        data = {}
        w, h = (1000, 820) if len(panels) == 4 else (max(560, 480 * len(panels)), 460)
        gp = ["set terminal svg size %d,%d dynamic font 'sans,11' background '#ffffff'" % (w, h),
              "set output %s" % json.dumps("../" + fname), "set grid ytics", "set bmargin 4",
              "set key off"]
        strip(gp, data, panels, key, ylabel, log, title)
        os.makedirs(os.path.join(outdir, "plot-data"), exist_ok=True)
        for name, text in data.items():
            with open(os.path.join(outdir, "plot-data", name), "w") as f:
                f.write(text)
        script = os.path.join(outdir, "plot-data", fname.replace(".svg", ".gp"))
        with open(script, "w") as f:
            f.write("\n".join(gp) + "\n")
        r = subprocess.run([gnuplot, os.path.basename(script)], cwd=os.path.dirname(script),
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("(gnuplot failed on %s: %s)" % (script, r.stderr.strip()[-500:]))
            continue
        made.append(os.path.join(outdir, fname))
    return made


def main():
    rows = load(sys.argv[1])
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    out = ["", "### All faults, side by side", "",
           "Fault → first write acknowledged by the new primary: median (min–max) over n "
           "trials; for a slow command: the trials that failed over (the right answer is "
           "none) and the writer's longest pause; acknowledged writes lost, summed over the "
           "trials.", ""]
    summary(rows, out)
    detail(rows, out)
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(outdir, "tables.md"), "w") as f:
        f.write(text)
    made = plots(rows, outdir)
    if made:
        print("\nplots: %s" % " ".join(made))


main()
