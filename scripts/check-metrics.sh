#!/usr/bin/env bash
# Starts the exporter on a loopback port, scrapes it once and runs
# `promtool check metrics` on the result. Usage: check-metrics.sh BINARY [FLAGS...]
set -euo pipefail
bin=${1:?binary}; shift
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" --web.listen-address=127.0.0.1:"$port" "$@" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/metrics" -o /dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/metrics" | promtool check metrics
echo "promtool check metrics: clean"
