#!/usr/bin/env python3
"""Read a process's CPU time (the sum of its threads' schedstat) every
STEP seconds (0.1) for SECONDS, and print its total per second of
wall-clock time, then each burst of work: consecutive steps that used
CPU, merged when at most 0.25 s apart, with when it began and what it
cost. What an unscraped exporter does between scrapes (a reading of the
JVMs, a discovery scan that found nothing) shows as one line each.

usage: timeline.py PID SECONDS [STEP]
"""
import sys
import time

from scrape import cpu_seconds

MERGE_S = 0.25     # steps closer than this are one burst
NOISE_MS = 0.05    # a step below this used no CPU worth counting
SHOW_MS = 0.15     # bursts below this are not listed


def main():
    pid, seconds = int(sys.argv[1]), float(sys.argv[2])
    step = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1
    start = time.monotonic()
    first = prev = cpu_seconds(pid)
    bursts = []  # [began, last step, ms]
    while time.monotonic() - start < seconds:
        time.sleep(step)
        now, cpu = time.monotonic() - start, cpu_seconds(pid)
        ms = 1000 * (cpu - prev)
        prev = cpu
        if ms < NOISE_MS:
            continue
        if bursts and now - bursts[-1][1] <= MERGE_S:
            bursts[-1][1] = now
            bursts[-1][2] += ms
        else:
            bursts.append([now, now, ms])
    total = 1000 * (prev - first)
    print(f"total {total:.1f} ms over {seconds:.0f} s = {total / seconds:.3f} ms/s")
    for began, _, ms in bursts:
        if ms >= SHOW_MS:
            print(f"{began:7.1f} s {ms:6.2f} ms")


if __name__ == "__main__":
    main()
