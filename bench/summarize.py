#!/usr/bin/env python3
"""Turns bench/run.sh's JSON lines into the tables of docs/performance.md.

usage: summarize.py results.jsonl [busier-node.jsonl]

The second file, from `EXTRA_PROCS=500 bench/run.sh 20`, gives what 500
more processes add to a reading with 20 JVMs.
"""
import json
import statistics
import sys
from collections import defaultdict


def ms(seconds):
    return f"{seconds * 1e3:.2f} ms"


def mib(b):
    return f"{b / 2**20:.1f} MiB"


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    machine = next(r for r in rows if r["kind"] == "machine")
    print(f"machine: {machine['nproc']} CPUs ({machine['cpu']}), "
          f"{machine['mem_total_kib'] / 2**20:.1f} GiB, Linux {machine['kernel']}, {machine['java']}")
    print(f"node_exporter: {machine['node_exporter']}")
    print(f"executor_exporter: {machine['exporter']}")
    if machine.get("cgroup_per_jvm"):
        print("each JVM in a memory cgroup of its own")
    procs = sorted({r.get("processes") for r in rows if r["kind"] == "scrape" and r.get("processes")})
    if procs:
        print(f"processes on the machine during the runs: {procs[0]}–{procs[-1]}")
    print()

    scrape = {(r["target"], r["jvms"]): r for r in rows if r["kind"] == "scrape"}
    hyper = {(r["target"], r["jvms"]): r for r in rows if r["kind"] == "hyperfine"}
    jstat = defaultdict(list)
    for r in rows:
        if r["kind"] == "jstat":
            jstat[r["jvms"]].append(r)
    background = {r["jvms"]: r for r in rows if r["kind"] == "background"}
    counts = sorted({n for _, n in scrape})

    print("| JVMs (seen) | executor_exporter CPU / scrape | per JVM | node_exporter CPU / scrape | ratio | "
          "jstat -gc CPU / JVM | jstat ÷ exporter per JVM | latency (p50, p99) | node_exporter latency (p50, p90) | "
          "hyperfine curl ee / ne | exporter RSS (max) | scrape size | background sampling CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in counts:
        ee, ne = scrape[("executor_exporter", n)], scrape[("node_exporter", n)]
        seen = ee.get("jvms_seen") or n
        per_jvm = ee["cpu_seconds_per_scrape"] / seen
        js = statistics.mean(r["cpu_seconds"] for r in jstat[n]) if jstat[n] else float("nan")
        hee, hne = hyper.get(("executor_exporter", n)), hyper.get(("node_exporter", n))
        bg = background.get(n)
        print("| {} ({}) | {} | {} | {} | {:.2f}× | {} | {:,.0f}× | {} / {} | {} / {} | {} / {} | {} ({}) | {:,} B | {} |".format(
            n, seen, ms(ee["cpu_seconds_per_scrape"]), ms(per_jvm), ms(ne["cpu_seconds_per_scrape"]),
            ee["cpu_seconds_per_scrape"] / ne["cpu_seconds_per_scrape"] if ne["cpu_seconds_per_scrape"] else float("inf"),
            ms(js), js / per_jvm if per_jvm else float("inf"),
            ms(ee["latency_median_seconds"]), ms(ee.get("latency_p99_seconds", ee["latency_p90_seconds"])),
            ms(ne["latency_median_seconds"]), ms(ne["latency_p90_seconds"]),
            ms(hee["mean_seconds"]) if hee else "-", ms(hne["mean_seconds"]) if hne else "-",
            mib(ee["VmRSS"]), mib(ee["VmHWM"]), ee["bytes"],
            f"{bg['cpu_seconds_per_second'] * 1e3:.2f} ms/s, RSS {mib(bg['rss_bytes'])}" if bg else "-"))



def default_flags_table(path):
    """The exporter as deployed (background sampling, scrapes served from
    the last sample) against node_exporter."""
    rows = [json.loads(line) for line in open(path) if line.strip()]
    scrape = {(r["target"], r["jvms"]): r for r in rows if r["kind"] == "scrape"}
    background = {r["jvms"]: r for r in rows if r["kind"] == "background"}
    counts = sorted({n for t, n in scrape if t == "executor_exporter_default"})
    if not counts:
        return
    print()
    print("| JVMs (seen) | default flags: CPU / scrape | net of background sampling | node_exporter CPU / scrape | ratio (net) | "
          "background sampling | total at a 30 s scrape interval |")
    print("|---|---|---|---|---|---|---|")
    for n in counts:
        d, ne = scrape[("executor_exporter_default", n)], scrape[("node_exporter", n)]
        bg = background.get(n, {}).get("cpu_seconds_per_second", 0.0)
        # The loop ran `seconds`; the sampler ran meanwhile and is not the
        # scrape's cost.
        net = max(0.0, d["cpu_seconds_per_scrape"] - bg * d.get("seconds", 0) / d["scrapes"])
        print("| {} ({}) | {} | {} | {} | {:.2f}× | {:.2f} ms/s | {:.1f} millicores |".format(
            n, d.get("jvms_seen"), ms(d["cpu_seconds_per_scrape"]), ms(net), ms(ne["cpu_seconds_per_scrape"]),
            net / ne["cpu_seconds_per_scrape"] if ne["cpu_seconds_per_scrape"] else float("inf"),
            bg * 1e3, (bg + net / 30) * 1e3))


def done_when(path, busier=None):
    """The figures issue 14's budgets are stated in."""
    rows = [json.loads(line) for line in open(path) if line.strip()]
    scrape = {(r["target"], r["jvms"]): r for r in rows if r["kind"] == "scrape"}
    background = {r["jvms"]: r for r in rows if r["kind"] == "background"}
    jstat = [r["cpu_seconds"] for r in rows if r["kind"] == "jstat"]
    cpu = lambda t, n: scrape[(t, n)]["cpu_seconds_per_scrape"] if (t, n) in scrape else None
    print()
    print("| budget | measured | |")
    print("|---|---|---|")
    if cpu("executor_exporter_default", 100) is not None:
        d, ne = scrape[("executor_exporter_default", 100)], cpu("node_exporter", 100)
        bg = background.get(100, {}).get("cpu_seconds_per_second", 0.0)
        net = max(0.0, d["cpu_seconds_per_scrape"] - bg * d.get("seconds", 0) / d["scrapes"])
        print(f"| 100 JVMs: CPU per served scrape below node_exporter's | {ms(net)} vs {ms(ne)} ({net / ne:.2f}×), "
              f"p50/p99 {ms(d['latency_median_seconds'])} / {ms(d.get('latency_p99_seconds', 0))} | "
              f"{'met' if net < ne else 'NOT met'} |")
    for lo, hi in ((20, 100), (1, 20)):
        a, b = cpu("executor_exporter", lo), cpu("executor_exporter", hi)
        if a is None or b is None:
            continue
        sa, sb = scrape[("executor_exporter", lo)].get("jvms_seen") or lo, scrape[("executor_exporter", hi)].get("jvms_seen") or hi
        per = (b - a) / (sb - sa)
        js = statistics.mean(jstat) if jstat else float("nan")
        print(f"| marginal CPU per JVM (read + served) ≤ 100 µs, ≥ 1500× below `jstat -gc` | {per * 1e6:.0f} µs "
              f"({lo}→{hi} JVMs, fresh readings); jstat -gc {ms(js)}: {js / per:,.0f}× | "
              f"{'met' if per <= 100e-6 and js / per >= 1500 else 'NOT met'} |")
    if busier:
        brows = [json.loads(line) for line in open(busier) if line.strip()]
        b = {(r["target"], r["jvms"]): r for r in brows if r["kind"] == "scrape"}
        bb = {r["jvms"]: r for r in brows if r["kind"] == "background"}
        base, more = cpu("executor_exporter", 20), b.get(("executor_exporter", 20))
        if base is not None and more is not None:
            add = more["cpu_seconds_per_scrape"] / base - 1
            print(f"| 500 more processes add ≤ 10 % to a reading with 20 JVMs | fresh reading {ms(base)} → "
                  f"{ms(more['cpu_seconds_per_scrape'])} ({add * 100:+.0f} %) with {more.get('processes')} processes; "
                  f"background sampling {background.get(20, {}).get('cpu_seconds_per_second', 0) * 1e3:.2f} → "
                  f"{bb.get(20, {}).get('cpu_seconds_per_second', 0) * 1e3:.2f} ms/s | {'met' if add <= 0.10 else 'NOT met'} |")
    readings = [r for r in rows if r["kind"] == "reading"]
    if readings:
        bgs = {(r["round"], r["extra"]): r["cpu_seconds_per_second"] for r in rows if r["kind"] == "reading_background"}
        adds, bg_adds, extra, n, procs = [], [], 0, 0, set()
        for rnd in sorted({r["round"] for r in readings}):
            base = next(r for r in readings if r["round"] == rnd and r["extra"] == 0)
            more = next((r for r in readings if r["round"] == rnd and r["extra"] > 0), None)
            if more is None:
                continue
            extra, n = more["extra"], more["jvms"]
            procs |= {base.get("processes"), more.get("processes")}
            adds.append(more["cpu_seconds_per_scrape"] / base["cpu_seconds_per_scrape"] - 1)
            if bgs.get((rnd, 0)) and bgs.get((rnd, extra)):
                bg_adds.append(bgs[(rnd, extra)] / bgs[(rnd, 0)] - 1)
        if adds:
            print(f"| {extra} more processes add ≤ 10 % to a reading with {n} JVMs | fresh reading {min(adds) * 100:+.0f} … "
                  f"{max(adds) * 100:+.0f} % over {len(adds)} rounds (same run; {min(procs)}–{max(procs)} processes); "
                  f"background sampling {min(bg_adds, default=0) * 100:+.0f} … {max(bg_adds, default=0) * 100:+.0f} % | "
                  f"{'met' if max(adds) <= 0.10 else 'NOT met'} |")
    for t in ("executor_exporter_default", "executor_exporter"):
        if (t, 100) in scrape:
            r = scrape[(t, 100)]
            print(f"| RSS under 25 MiB with 100 JVMs ({'default flags' if t.endswith('default') else 'fresh readings'}) | "
                  f"{mib(r['VmRSS'])} (peak {mib(r['VmHWM'])}) | {'met' if r['VmHWM'] < 25 * 2**20 else 'NOT met'} |")
    for t, label in (("executor_exporter_old", "fresh"), ("executor_exporter_old_default", "default flags")):
        for n in sorted({n for tt, n in scrape if tt == t}):
            new = cpu(t.replace("_old", ""), n)
            print(f"| A/B, {n} JVMs, {label}: the OLD revision against this one | {ms(cpu(t, n))} → {ms(new)} | |")
    loads = sorted({float(r["loadavg"]) for r in rows if r.get("loadavg")})
    if loads:
        print(f"\nload average during the run: {loads[0]:.1f}–{loads[-1]:.1f}")


if __name__ == "__main__":
    main()
    default_flags_table(sys.argv[1])
    done_when(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
