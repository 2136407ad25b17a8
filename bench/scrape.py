#!/usr/bin/env python3
"""Scrape a metrics URL COUNT times in a row and report what one scrape cost
the server: CPU time (utime+stime of PID from /proc/PID/stat, before and
after) and latency as this client saw it. Prints one JSON object.

usage: scrape.py URL PID COUNT
"""
import json
import os
import statistics
import sys
import time
import urllib.request

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    # The command name may hold spaces: fields after the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_bytes(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def main():
    url, pid, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    body = urllib.request.urlopen(url, timeout=30).read()  # warm-up
    # JVMs the exporter reads: the benchmark's and any other on the machine.
    seen = [float(line.split()[1]) for line in body.decode().splitlines()
            if line.startswith("executor_jvm_processes ")]
    latencies = []
    before = cpu_seconds(pid)
    began = time.perf_counter()
    for _ in range(count):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as resp:
            resp.read()
        latencies.append(time.perf_counter() - start)
    after = cpu_seconds(pid)
    seconds = time.perf_counter() - began
    latencies.sort()
    print(json.dumps({
        "url": url,
        "scrapes": count,
        "bytes": len(body),
        "jvms_seen": int(seen[0]) if seen else None,
        "loadavg": open("/proc/loadavg").read().split()[0],
        "processes": sum(1 for d in os.listdir("/proc") if d.isdigit()),
        "seconds": seconds,
        "cpu_seconds_per_scrape": (after - before) / count,
        "latency_median_seconds": statistics.median(latencies),
        "latency_p90_seconds": latencies[int(0.9 * (count - 1))],
        **rss_bytes(pid),
    }))


if __name__ == "__main__":
    main()
