#!/usr/bin/env python3
"""Scrape metrics URLs every INTERVAL seconds for SECONDS, as Prometheus
does, and report what each server cost per second of wall-clock time over
the whole window, background work included: CPU time (the sum of its
threads' /proc/PID/task/*/schedstat, in nanoseconds, before and after)
divided by the window, and its resident memory at the end. A PID given
with URL "-" is measured but never scraped. Prints one JSON object per
server, in the order given.

usage: interval.py SECONDS INTERVAL LABEL URL PID [LABEL URL PID ...]
"""
import json
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
    while time.monotonic() - start < seconds:
        tick = time.monotonic()
        for _, url, _ in servers:
            if url != "-":
                req = urllib.request.Request(url, headers=HEADERS)
                with urllib.request.urlopen(req, timeout=30) as resp:
                    resp.read()
        scrapes += 1
        time.sleep(max(0.0, interval - (time.monotonic() - tick)))
    window = time.monotonic() - start
    for (label, url, pid), cpu0 in zip(servers, before):
        cpu = cpu_seconds(int(pid)) - cpu0
        print(json.dumps({
            "kind": "interval", "server": label, "interval_s": interval, "window_s": round(window, 1),
            "scrapes": scrapes if url != "-" else 0,
            "cpu_ms_per_s": round(1000 * cpu / window, 4), **rss_bytes(int(pid)),
        }), flush=True)


if __name__ == "__main__":
    main()
