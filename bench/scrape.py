#!/usr/bin/env python3
"""Scrape metrics URLs COUNT times each, in turn (one scrape of each, then
the next round), with the headers Prometheus sends (OpenMetrics or text,
gzip), and report what one scrape cost each server: CPU time (the sum of
its threads' /proc/PID/task/*/schedstat, in nanoseconds, before and after)
and latency as this client saw it. Taking the servers in turn puts the
machine's other work, which moves from minute to minute, on all of them
alike. Prints one JSON object per URL, in the order given.

usage: scrape.py COUNT URL PID [URL PID ...]
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

def cpu_seconds(pid):
    """CPU time of a process so far: the sum over its threads (those alive
    now; a server's threads live as long as it does)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total / 1e9


def rss_bytes(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def main():
    count = int(sys.argv[1])
    targets = [(sys.argv[i], int(sys.argv[i + 1])) for i in range(2, len(sys.argv), 2)]
    first = {}
    for url, pid in targets:
        wire, body = fetch(url)  # warm-up
        # JVMs the exporter reads: the benchmark's and any other on the machine.
        seen = [float(line.split()[1]) for line in body.decode().splitlines()
                if line.startswith("executor_jvm_processes ")]
        first[url] = (wire, body, int(seen[0]) if seen else None)
    latencies = {url: [] for url, _ in targets}
    before = {url: cpu_seconds(pid) for url, pid in targets}
    began = time.perf_counter()
    for _ in range(count):
        for url, _ in targets:
            start = time.perf_counter()
            fetch(url)
            latencies[url].append(time.perf_counter() - start)
    after = {url: cpu_seconds(pid) for url, pid in targets}
    seconds = time.perf_counter() - began
    for url, pid in targets:
        lat = sorted(latencies[url])
        wire, body, seen = first[url]
        print(json.dumps({
            "url": url,
            "scrapes": count,
            "bytes": len(body),
            "wire_bytes": len(wire),
            "jvms_seen": seen,
            "loadavg": open("/proc/loadavg").read().split()[0],
            "processes": sum(1 for d in os.listdir("/proc") if d.isdigit()),
            "seconds": seconds,
            "cpu_seconds_per_scrape": (after[url] - before[url]) / count,
            "latency_median_seconds": statistics.median(lat),
            "latency_p90_seconds": lat[int(0.9 * (count - 1))],
            "latency_p99_seconds": lat[int(0.99 * (count - 1))],
            **rss_bytes(pid),
        }))


if __name__ == "__main__":
    main()
