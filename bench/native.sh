#!/usr/bin/env bash
# What the native-memory breakdown by region costs a user: N idle JVMs (100)
# and 300 other processes, three servers scraped at a real interval side by
# side in the same run — executor_exporter with its default flags (the
# breakdown on), the same with --jvm.native-memory.max-age=0 (off), and
# node_exporter (Debian's, default collectors), the anchor. Each JVM is
# past its first minute before the window starts, so the window shows the
# steady state; the start-up's breakdowns are measured apart (the first
# 90 s). Needs root (apt-get), OpenJDK 17 and python3.
#
#   bench/native.sh                 # 100 JVMs, 15 s and 30 s intervals, 300 s each
#   JVMS=20 WINDOW=150 bench/native.sh
#
# Writes bench/results/native.jsonl; docs/performance.md shows its table.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
jvms="${JVMS:-100}"
window="${WINDOW:-300}"
out="$root/bench/results/native.jsonl"

command -v prometheus-node-exporter >/dev/null || {
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus-node-exporter >/dev/null
}
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

./executor_exporter --web.listen-address=127.0.0.1:19482 --cloud.provider=none --log.level=warn 2>"$work/on.log" &
on=$!; pids+=("$on")
./executor_exporter --web.listen-address=127.0.0.1:19483 --cloud.provider=none --log.level=warn \
  --jvm.native-memory.max-age=0 2>"$work/off.log" &
off=$!; pids+=("$off")
prometheus-node-exporter --web.listen-address=127.0.0.1:19100 2>"$work/ne.log" &
ne=$!; pids+=("$ne")
sleep 2

for ((i = 0; i < jvms; i++)); do
  java -Xmx16m -Xms16m -XX:+UseSerialGC -Xss256k -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 \
    -cp "$work/classes" org.apache.spark.executor.CoarseGrainedExecutorBackend \
    --executor-id "$((i + 1))" --app-id app-bench --exit-after-s 7200 >/dev/null 2>&1 &
  pids+=("$!")
done
breakdowns() { curl -sf http://127.0.0.1:19482/metrics | grep -c '^executor_jvm_native_memory_timestamp_seconds' || true; }
for _ in $(seq 600); do [ "$(breakdowns)" -ge "$jvms" ] && break; sleep 0.5; done
echo "all $jvms JVMs broken down; their start-up (90 s at 15 s scrapes):" >&2

reads() { # breakdowns read (smaps) and checked (maps) so far
  curl -sf http://127.0.0.1:19482/metrics | awk -F'[{}" ]+' '/^executor_jvm_native_memory_reads_total/ {printf "\"%s_reads\":%s,", $3, $4}'
}
run() { # label interval seconds
  before="$(reads)"
  python3 bench/interval.py "$3" "$2" \
    on "http://127.0.0.1:19482/metrics" "$on" off "http://127.0.0.1:19483/metrics" "$off" \
    node_exporter "http://127.0.0.1:19100/metrics" "$ne" |
    sed "s/^{/{\"phase\":\"$1\",\"jvms\":$jvms,/"
  printf '{"kind":"reads","phase":"%s","interval_s":%s,"before":{%s"_":0},"after":{%s"_":0}}\n' "$1" "$2" "$before" "$(reads)"
}
{
  run startup 15 90
  run steady 15 "$window"
  run steady 30 "$window"
  printf '{"kind":"errors","phase":"end","native_memory_read_errors":%s}\n' \
    "$(curl -sf http://127.0.0.1:19482/metrics | awk '/read_errors_total\{reason="native_memory"\}/ {print $2}')"
} | tee "$out"
