#!/usr/bin/env python3
"""Print the tables of docs/performance.md's Figures from one run of
bench/interval.sh (its OUT, bench/results/interval.jsonl by default), in
Markdown, in the document's rows: each server's CPU and memory in every
phase, with its ratio to node_exporter's in the same phase; then the
run's other figures (the JVMs' own start, what the exporter read in each
phase, the marginal JVM against `jstat -gc`).

usage: report.py [interval.jsonl]
"""
import json
import sys

MIB = 1 << 20
ANCHOR = "node_exporter"


def main():
    with open(sys.argv[1] if len(sys.argv) > 1 else "bench/results/interval.jsonl") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    run = next((r for r in rows if r.get("kind") == "run"), {})
    jvms = run.get("jvms") or next(r["jvms"] for r in rows if "jvms" in r)
    phases = {}  # phase -> server -> interval.py's line
    for r in rows:
        if r.get("kind") == "interval" and r["phase"] != "marginal":
            phases.setdefault(r["phase"], {})[r["server"]] = r
    servers = [s for u, s in run.get("servers", {}).items() if u != "_"] or list(next(iter(phases.values())))
    by_url = {u: s for u, s in run.get("servers", {}).items() if u != "_"}
    b2b_rows = [r for r in rows if r.get("phase") == "back-to-back"]
    if not by_url:  # a run without its "run" line: scrape.py's URLs come in the servers' order
        by_url = {r["url"]: s for r, s in zip(b2b_rows, servers)}
    b2b = {by_url.get(r["url"]): r for r in b2b_rows}

    def window(phase):
        return next(iter(phases.get(phase, {}).values()), {}).get("window_s", 0)

    def cells(value, unit, digits=3, ratio=True):
        out = []
        for s in servers:
            v, a = value(s), value(ANCHOR)
            if v is None:
                out.append("—")
            elif ratio and a and s != ANCHOR:
                out.append(f"{v:.{digits}f} {unit} ({v / a:.2f}×)")
            else:
                out.append(f"{v:.{digits}f} {unit}")
        return " | ".join(out)

    def cpu(phase):
        return lambda s: phases.get(phase, {}).get(s, {}).get("cpu_ms_per_s")

    start, settled = phases.get("start", {}), phases.get("15s", {})
    ws = window("start")
    print(f"<!-- {jvms} JVMs, build {run.get('build') or '?'}"
          + (f", base {run['base'][:12]}" if run.get("base") else "")
          + f", {run.get('nproc', '?')} CPUs, load average {run.get('loadavg', '?')} at the start -->")
    print("| phase | " + " | ".join(servers) + " |")
    print("|---|" + "---|" * len(servers))
    if start:
        print(f"| start: {jvms} fresh JVMs, 15 s scrapes, their first {ws:.0f} s: CPU per second | {cells(cpu('start'), 'ms')} |")
        print(f"| start: CPU per JVM over its first {ws:.0f} s | "
              + cells(lambda s: start[s]["cpu_ms_per_s"] * ws / jvms if s in start else None, "ms", 1) + " |")
        print("| start: CPU per JVM beyond the settled 15 s cost | "
              + cells(lambda s: (start[s]["cpu_ms_per_s"] - settled[s]["cpu_ms_per_s"]) * ws / jvms
                      if s in start and s in settled else None, "ms", 1, ratio=False) + " |")
    print("| back-to-back, 100 scrapes: CPU per scrape | "
          + cells(lambda s: 1000 * b2b[s]["cpu_seconds_per_scrape"] if s in b2b else None, "ms", 2) + " |")
    for phase, title in (("1s", "1 s scrapes"), ("15s", "15 s scrapes, settled"),
                         ("30s", "30 s scrapes"), ("15s-churn", "15 s scrapes with churn")):
        if phase not in phases:
            continue
        print(f"| {title}, {window(phase):.0f} s: CPU per second | {cells(cpu(phase), 'ms', 2 if phase == '1s' else 3)} |")
    for phase in ("15s", "30s"):
        out = []
        for s in servers:
            r = phases.get(phase, {}).get(s)
            out.append("—" if not r else
                       f"{r['VmRSS_median'] / MIB:.1f} MiB ({r['VmRSS'] / MIB:.1f}, {r['VmHWM'] / MIB:.1f})")
        print(f"| resident memory, {phase} phase: median (at the end, peak) | " + " | ".join(out) + " |")
    print("| a scrape's body (gzip on the wire) | " + " | ".join(
        f"{b2b[s]['bytes'] / 1000:.0f} kB ({b2b[s]['wire_bytes'] / 1000:.1f} kB)" if s in b2b else "—"
        for s in servers) + " |")
    print()

    print("| figure | value |")
    print("|---|---|")
    own = next((r for r in rows if r.get("phase") == "start" and r.get("kind") == "jvms"), None)
    if own:
        per_jvm = 1000 * own["cpu_s"] / own["jvms"]
        print(f"| the JVMs' own start: CPU of all {own['jvms']} over their first {own['window_s']:.0f} s; per JVM "
              f"| {own['cpu_s']:.1f} s; {per_jvm:.0f} ms, {per_jvm / own['window_s']:.2f} ms/s |")
        if "executor_exporter" in start and per_jvm:
            ee = start["executor_exporter"]["cpu_ms_per_s"] * ws / jvms
            print(f"| executor_exporter's start cost per JVM against the JVM's own | {100 * ee / per_jvm:.2f} % |")
    reads = []
    for r in rows:
        if r.get("kind") == "reads":
            d = {k: r["after"].get(k, 0) - r["before"].get(k, 0) for k in r["after"] if k != "_"}
            reads.append(f"{r['phase']} {d.get('jvm_reads', 0):.0f} ({d.get('smaps_reads', 0):.0f}, {d.get('maps_reads', 0):.0f})")
    if reads:
        print("| executor_exporter's JVM readings (`smaps`, `maps` reads) by phase | " + "; ".join(reads) + " |")
    fast = {r["jvms"]: r for r in rows if r.get("phase") == "marginal" and r.get("kind") == "interval"}
    jstat = next((r for r in rows if r.get("kind") == "jstat"), None)
    if 10 in fast and 0 in fast:
        per = 1000 * (fast[10]["cpu_ms_per_s"] - fast[0]["cpu_ms_per_s"]) / 10
        print(f"| marginal, sampled every second: 10 JVMs; none; per JVM and reading "
              f"| {fast[10]['cpu_ms_per_s']:.2f} ms/s; {fast[0]['cpu_ms_per_s']:.2f} ms/s; {per:.0f} µs |")
        if jstat:
            times = f" ({1000 * jstat['cpu_s'] / per * 1000:,.0f}× a reading)" if per > 0 else ""
            print(f"| one `jstat -gc` | {1000 * jstat['cpu_s']:.0f} ms{times} |")


if __name__ == "__main__":
    main()
