#!/usr/bin/env bash
# What executor_exporter costs a user at the scrape intervals Prometheus
# uses, against node_exporter (Debian's, default collectors) in the same
# run: N idle JVMs (100) and 300 other processes; executor_exporter with
# its default flags (risk-following sampling, the native-memory breakdown
# on), the same with the breakdown off (--jvm.native-memory.max-age=0),
# for what the breakdown costs, the same with the timer slack the
# systemd unit gives it (TimerSlackNSec=, through timerslack.py) and the
# same without waking before a scrape (--no-runtime.wake-before-scrape). Each
# exporter is measured as a whole, background work included: CPU time
# per second of wall-clock time (interval.py) and resident memory.
# Phases, every server scraped in turn:
#
#   back-to-back  100 scrapes in a row, CPU per scrape (scrape.py)
#   1s            1 s scrapes for 60 s
#   15s, 30s      scrapes every 15 s and 30 s, for WINDOW seconds each
#   15s-churn     15 s scrapes for 120 s while two short-lived processes
#                 start every half second (a node's probes and scripts)
#   marginal      10 JVMs, each in a memory cgroup of its own (256 MiB, as
#                 on Kubernetes), each sampled every second
#                 (--jvm.sample-interval=1s), unscraped, for 60 s, then the
#                 same without them: CPU per JVM per second of sampling at
#                 the fastest interval; and `jstat -gc` on one of them, the
#                 JDK's own reader of the same counters, the anchor
#
# The JVMs are past their first minute (start-up is sampled more often on
# purpose) and their base breakdowns before the first phase. BASE=<rev> adds that revision's build
# as a server of its own ("base"). Needs root (apt-get), OpenJDK 17, python3.
#
#   bench/interval.sh                     # 100 JVMs, WINDOW=300
#   JVMS=20 WINDOW=120 BASE=HEAD~3 bench/interval.sh
#
# Writes bench/results/interval.jsonl; docs/performance.md shows its table.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
jvms="${JVMS:-100}"
window="${WINDOW:-300}"
out="${OUT:-$root/bench/results/interval.jsonl}"

need=()
command -v prometheus-node-exporter >/dev/null || need+=(prometheus-node-exporter)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
work="$(mktemp -d)"
pids=()
jvm_pids=()
cleanup() {
  for p in "${pids[@]}" "${jvm_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ((c = ${#cgroups[@]} - 1; c >= 0; c--)); do rmdir "${cgroups[c]}" 2>/dev/null || true; done
  [ -n "$cgroup_parent" ] && rmdir "$cgroup_parent" 2>/dev/null
  [ -n "${BASE:-}" ] && git worktree remove --force "$work/base-tree" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

make -s build >/dev/null
if [ -n "${BASE:-}" ]; then
  git worktree add -q --detach "$work/base-tree" "$BASE"
  (cd "$work/base-tree" && go build -o "$work/ee-base" ./cmd/executor_exporter)
fi
javac -d "$work/classes" $(find test/java -name '*.java')
for ((i = 0; i < 300; i++)); do sleep 7200 & pids+=("$!"); done

start_jvms() { # count first-id
  for ((i = 0; i < $1; i++)); do
    java -Xmx16m -Xms16m -XX:+UseSerialGC -Xss256k -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 \
      -cp "$work/classes" org.apache.spark.executor.CoarseGrainedExecutorBackend \
      --executor-id "$(($2 + i))" --app-id app-bench --exit-after-s 7200 >/dev/null 2>&1 &
    jvm_pids+=("$!")
  done
}
# start_jvms_in_cgroups count: each JVM in a memory cgroup of its own.
cgroup_parent=""
cgroups=()
start_jvms_in_cgroups() {
  if [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cgroup_parent=/sys/fs/cgroup/memory/ee-bench-$$ limit_file=memory.limit_in_bytes
  else
    cgroup_parent=/sys/fs/cgroup/ee-bench-$$ limit_file=memory.max
  fi
  mkdir -p "$cgroup_parent"
  [ "$limit_file" = memory.max ] && echo +memory >"$cgroup_parent/cgroup.subtree_control"
  for ((i = 0; i < $1; i++)); do
    mkdir "$cgroup_parent/jvm-$i"; cgroups+=("$cgroup_parent/jvm-$i")
    echo $((256 << 20)) >"$cgroup_parent/jvm-$i/$limit_file"
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup_parent/jvm-$i" \
      java -Xmx16m -Xms16m -XX:+UseSerialGC -Xss256k -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 \
      -cp "$work/classes" org.apache.spark.executor.CoarseGrainedExecutorBackend \
      --executor-id "$((i + 1))" --app-id app-bench --exit-after-s 7200 >/dev/null 2>&1 &
    jvm_pids+=("$!")
  done
}
stop_jvms() {
  for p in "${jvm_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${jvm_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  jvm_pids=()
}

flags=(--cloud.provider=none --log.level=warn)
./executor_exporter --web.listen-address=127.0.0.1:19482 "${flags[@]}" 2>"$work/ee.log" &
ee=$!; pids+=("$ee")
servers=(executor_exporter "http://127.0.0.1:19482/metrics" "$ee")
# The same without the native-memory breakdown by region: what it costs.
./executor_exporter --web.listen-address=127.0.0.1:19485 "${flags[@]}" --jvm.native-memory.max-age=0 2>"$work/off.log" &
off=$!; pids+=("$off")
servers+=(breakdown-off "http://127.0.0.1:19485/metrics" "$off")
# The same as the systemd unit starts it: its TimerSlackNSec= (the flags
# stay the defaults; Kubernetes has no way to set a slack).
python3 bench/timerslack.py deploy/systemd/executor_exporter.service \
  ./executor_exporter --web.listen-address=127.0.0.1:19486 "${flags[@]}" 2>"$work/unit.log" &
unit=$!; pids+=("$unit")
servers+=(unit-timer-slack "http://127.0.0.1:19486/metrics" "$unit")
# The same without waking before a scrape is due: what the wake saves.
./executor_exporter --web.listen-address=127.0.0.1:19487 "${flags[@]}" --no-runtime.wake-before-scrape 2>"$work/nowake.log" &
nowake=$!; pids+=("$nowake")
servers+=(no-wake "http://127.0.0.1:19487/metrics" "$nowake")
if [ -n "${BASE:-}" ]; then
  "$work/ee-base" --web.listen-address=127.0.0.1:19483 "${flags[@]}" 2>"$work/base.log" &
  base=$!; pids+=("$base")
  servers+=(base "http://127.0.0.1:19483/metrics" "$base")
fi
prometheus-node-exporter --web.listen-address=127.0.0.1:19100 2>"$work/ne.log" &
ne=$!; pids+=("$ne")
servers+=(node_exporter "http://127.0.0.1:19100/metrics" "$ne")
sleep 2

start_jvms "$jvms" 1
# The bench's own looks at the exporter ask as Prometheus does (scrape.py's
# headers): a second format would make it keep the JVMs' text in both.
scrape() {
  curl -sf --compressed -H 'Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' "$1"
}
served() { scrape http://127.0.0.1:19482/metrics | grep -c '^executor_jvm_info' || true; }
for _ in $(seq 600); do [ "$(served)" -ge "$jvms" ] && break; sleep 0.5; done
sleep 75 # past every JVM's start-up
# and past the base breakdown of each, taken once its first minute is
# over: the smaps reads stand still for 15 s (3 minutes more at most).
smaps_reads() {
  scrape http://127.0.0.1:19482/metrics |
    awk -F'[{}" ]+' '/^executor_jvm_native_memory_reads_total\{file="smaps"\}/ {print $4}'
}
last=""
for _ in $(seq 12); do
  now="$(smaps_reads || true)"
  [ -n "$now" ] && [ "$now" = "$last" ] && break
  last="$now"
  sleep 15
done

counters() { # the exporter's own counts of what it read
  scrape http://127.0.0.1:19482/metrics |
    awk -F'[{}" ]+' '/^executor_jvm_reads_total / {printf "\"jvm_reads\":%s,", $2}
      /^executor_jvm_native_memory_reads_total/ {printf "\"%s_reads\":%s,", $3, $4}'
}
interval() { # phase interval seconds
  before="$(counters)"
  python3 bench/interval.py "$3" "$2" "${servers[@]}" | sed "s/^{/{\"phase\":\"$1\",\"jvms\":$jvms,/"
  printf '{"kind":"reads","phase":"%s","before":{%s"_":0},"after":{%s"_":0}}\n' "$1" "$before" "$(counters)"
}
{
  args=()
  for ((i = 0; i < ${#servers[@]}; i += 3)); do args+=("${servers[i + 1]}" "${servers[i + 2]}"); done
  python3 bench/scrape.py 100 "${args[@]}" | sed "s/^{/{\"phase\":\"back-to-back\",\"jvms\":$jvms,/"
  interval 1s 1 60
  interval 15s 15 "$window"
  interval 30s 30 "$window"
  (for _ in $(seq 260); do /bin/true; sleep 0.5; done) & # ends by itself
  churn=$!
  interval 15s-churn 15 120
  kill "$churn" 2>/dev/null || true

  # The marginal cost of a JVM sampled every second.
  for p in "${pids[@]:300}"; do kill "$p" 2>/dev/null || true; done
  stop_jvms
  # Started in this pipeline's subshell: its output must not hold the pipe
  # open, and it is stopped here, not by cleanup.
  ./executor_exporter --web.listen-address=127.0.0.1:19484 "${flags[@]}" --jvm.sample-interval=1s >/dev/null 2>"$work/fast.log" &
  fast=$!
  start_jvms_in_cgroups 10
  for _ in $(seq 600); do [ "$(scrape http://127.0.0.1:19484/metrics | grep -c '^executor_jvm_info')" -ge 10 ] && break; sleep 0.5; done
  sleep 75
  python3 bench/interval.py 60 60 fast-10 - "$fast" | sed 's/^{/{"phase":"marginal","jvms":10,/'
  # The anchor: the JDK's own reader of the same counters, once per JVM read.
  jstat_cpu="$( { /usr/bin/time -f '%U %S' jstat -gc "${jvm_pids[0]}" >/dev/null; } 2>&1 | tail -1)"
  printf '{"phase":"marginal","kind":"jstat","cpu_s":%s}\n' "$(echo "$jstat_cpu" | awk '{print $1 + $2}')"
  stop_jvms
  sleep 10
  python3 bench/interval.py 60 60 fast-0 - "$fast" | sed 's/^{/{"phase":"marginal","jvms":0,/'
  kill "$fast"
  wait "$fast" 2>/dev/null || true
  for ((c = ${#cgroups[@]} - 1; c >= 0; c--)); do rmdir "${cgroups[c]}" 2>/dev/null || true; done
  rmdir "$cgroup_parent" 2>/dev/null || true
} | tee "$out"
