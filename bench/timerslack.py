#!/usr/bin/env python3
"""Run COMMAND with the timer slack of a systemd unit's TimerSlackNSec=,
as systemd starts the unit's process: prctl(PR_SET_TIMERSLACK) in the
process, then exec, so every thread the command starts inherits it.

usage: timerslack.py UNIT_FILE COMMAND [ARG ...]
"""
import ctypes
import os
import re
import sys

PR_SET_TIMERSLACK = 29
UNITS = {"ns": 1, "nsec": 1, "us": 1_000, "usec": 1_000, "ms": 1_000_000,
         "msec": 1_000_000, "s": 1_000_000_000, "sec": 1_000_000_000}


def slack_ns(unit_file):
    """The unit's TimerSlackNSec=, in nanoseconds (a bare number is ns)."""
    with open(unit_file) as f:
        for line in f:
            m = re.fullmatch(r"TimerSlackNSec=(\d+)\s*([a-z]*)\s*", line)
            if m:
                return int(m.group(1)) * UNITS[m.group(2) or "ns"]
    sys.exit(f"{unit_file}: no TimerSlackNSec=")


def main():
    ns = slack_ns(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(ns), 0, 0, 0) != 0:
        sys.exit(f"prctl(PR_SET_TIMERSLACK): {os.strerror(ctypes.get_errno())}")
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
