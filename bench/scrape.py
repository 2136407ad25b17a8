#!/usr/bin/env python3
"""Scrape a metrics URL COUNT times in a row, with the headers Prometheus
sends (OpenMetrics or text, gzip), and report what one scrape cost the
server: CPU time (utime+stime of PID from /proc/PID/stat, before and after)
and latency as this client saw it. Prints one JSON object.

usage: scrape.py URL PID COUNT
"""
import json
import os
import statistics
import sys
import time
import gzip
import urllib.request

# What Prometheus 2.x asks for; both exporters then compress.
HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
              "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
}


def fetch(url):
    req = urllib.request.Request(url, headers=HEADERS)
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
        if resp.headers.get("Content-Encoding") == "gzip":
            return raw, gzip.decompress(raw)
        return raw, raw

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
    wire, body = fetch(url)  # warm-up
    # JVMs the exporter reads: the benchmark's and any other on the machine.
    seen = [float(line.split()[1]) for line in body.decode().splitlines()
            if line.startswith("executor_jvm_processes ")]
    latencies = []
    before = cpu_seconds(pid)
    began = time.perf_counter()
    for _ in range(count):
        start = time.perf_counter()
        fetch(url)
        latencies.append(time.perf_counter() - start)
    after = cpu_seconds(pid)
    seconds = time.perf_counter() - began
    latencies.sort()
    print(json.dumps({
        "url": url,
        "scrapes": count,
        "bytes": len(body),
        "wire_bytes": len(wire),
        "jvms_seen": int(seen[0]) if seen else None,
        "loadavg": open("/proc/loadavg").read().split()[0],
        "processes": sum(1 for d in os.listdir("/proc") if d.isdigit()),
        "seconds": seconds,
        "cpu_seconds_per_scrape": (after - before) / count,
        "latency_median_seconds": statistics.median(latencies),
        "latency_p90_seconds": latencies[int(0.9 * (count - 1))],
        "latency_p99_seconds": latencies[int(0.99 * (count - 1))],
        **rss_bytes(pid),
    }))


if __name__ == "__main__":
    main()
