#!/usr/bin/env python3
"""Scrape metrics URLs every INTERVAL seconds for SECONDS, as Prometheus
does, and report what each server cost per second of wall-clock time over
the whole window, background work included: CPU time (the sum of its
threads' /proc/PID/task/*/schedstat, in nanoseconds, before and after)
divided by the window, and its resident memory: at the end (VmRSS, and
the peak, VmHWM) and the median of VmRSS read every second of the window
(VmRSS_median), which moves less than one reading with when the garbage
collector last ran. A PID given with URL "-" is measured but never
scraped. Prints one JSON object per server, in the order given.

usage: interval.py SECONDS INTERVAL LABEL URL PID [LABEL URL PID ...]
"""
import json
import statistics
import sys
import time
import urllib.request

from scrape import HEADERS, cpu_seconds, rss_bytes


def main():
    seconds, interval = float(sys.argv[1]), float(sys.argv[2])
    servers = [sys.argv[i:i + 3] for i in range(3, len(sys.argv), 3)]
    before = [cpu_seconds(int(pid)) for _, _, pid in servers]
    start = time.monotonic()
    scrapes = 0
    rss = [[] for _ in servers]

    def read_rss():
        for samples, (_, _, pid) in zip(rss, servers):
            samples.append(rss_bytes(int(pid))["VmRSS"])

    while time.monotonic() - start < seconds:
        tick = time.monotonic()
        for _, url, _ in servers:
            if url != "-":
                req = urllib.request.Request(url, headers=HEADERS)
                with urllib.request.urlopen(req, timeout=30) as resp:
                    resp.read()
        scrapes += 1
        while (left := interval - (time.monotonic() - tick)) > 0:
            time.sleep(min(1.0, left))
            read_rss()
    window = time.monotonic() - start
    for (label, url, pid), cpu0, samples in zip(servers, before, rss):
        cpu = cpu_seconds(int(pid)) - cpu0
        print(json.dumps({
            "kind": "interval", "server": label, "interval_s": interval, "window_s": round(window, 1),
            "scrapes": scrapes if url != "-" else 0,
            "cpu_ms_per_s": round(1000 * cpu / window, 4), **rss_bytes(int(pid)),
            "VmRSS_median": int(statistics.median(samples)) if samples else None,
        }), flush=True)


if __name__ == "__main__":
    main()
