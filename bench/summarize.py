#!/usr/bin/env python3
"""Turns bench/run.sh's JSON lines into the tables of docs/performance.md.

usage: summarize.py results.jsonl
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
          "jstat -gc CPU / JVM | jstat ÷ exporter per JVM | latency (median, p90) | node_exporter latency | "
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
            ms(ee["latency_median_seconds"]), ms(ee["latency_p90_seconds"]),
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


if __name__ == "__main__":
    main()
    default_flags_table(sys.argv[1])
