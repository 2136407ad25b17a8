#!/usr/bin/env bash
# The settled cost at 15 s scrapes of executor_exporter started with other
# flags, side by side with its defaults and node_exporter in the same
# windows: the bench's 100 stand-in executors and 300 sleeping processes,
# 240 s to settle (the JVMs' start and base breakdowns), then two windows
# of 120 s (bench/interval.py: CPU per second and resident memory). Each
# argument is LABEL=FLAGS, the flags split at spaces. Run it in a PID
# namespace of its own, as bench/interval.sh, so that no other JVM is read:
#
#   unshare --pid --fork --mount-proc bench/flags.sh \
#     'sample-60s=--jvm.sample-interval=60s' 'discovery-15s=--jvm.discovery-interval=15s'
#
# Needs root, OpenJDK 17 (javac, java), python3 and Debian's
# prometheus-node-exporter; writes JSON lines to standard output.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
make -s build >/dev/null
javac -d "$work/classes" $(find test/java -name '*.java')
for ((i = 0; i < 300; i++)); do sleep 7200 & pids+=("$!"); done
for ((i = 0; i < 100; i++)); do
  java -Xmx16m -Xms16m -XX:+UseSerialGC -Xss256k -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 \
    -cp "$work/classes" org.apache.spark.executor.CoarseGrainedExecutorBackend \
    --executor-id "$((i + 1))" --app-id app-bench --exit-after-s 7200 >/dev/null 2>&1 &
  pids+=("$!")
done
servers=()
port=19601
for variant in "default=" "$@"; do
  read -ra extra <<<"${variant#*=}"
  ./executor_exporter --web.listen-address="127.0.0.1:$port" --cloud.provider=none --log.level=warn ${extra[@]+"${extra[@]}"} 2>/dev/null &
  pids+=("$!")
  servers+=("${variant%%=*}" "http://127.0.0.1:$port/metrics" "$!")
  port=$((port + 1))
done
prometheus-node-exporter --web.listen-address="127.0.0.1:$port" 2>/dev/null &
pids+=("$!")
servers+=(node_exporter "http://127.0.0.1:$port/metrics" "$!")
sleep 240
for window in 1 2; do
  python3 bench/interval.py 120 15 "${servers[@]}" | sed "s/^{/{\"window\":$window,/"
done
