#!/usr/bin/env bash
# Benchmarks executor_exporter on this machine against what a user would run
# instead: node_exporter (Debian's prometheus-node-exporter, default
# collectors) for the cost of a scrape, and `jstat -gc` (the JDK's own reader
# of the same hsperfdata counters) for the cost per JVM. Needs root (to
# apt-get what is missing), OpenJDK 17 and python3.
#
#   bench/run.sh            # 1, 20 and 100 JVMs
#   bench/run.sh 1 20       # other JVM counts
#   SCRAPES=500 bench/run.sh
#   EXTRA_PROCS=500 bench/run.sh 20   # a busier node: 500 more (sleeping) processes
#   OLD=9912dca bench/run.sh          # also the exporter built at another revision, side by side
#   BUSIER=500 bench/run.sh 20        # then, in the same run, readings without and with 500 more
#                                     # processes, alternately, three rounds
#   CGROUP_PER_JVM=1 bench/run.sh     # each JVM in a memory cgroup of its own, as on Kubernetes
#
# Writes bench/results/latest.jsonl and prints the summary table that
# docs/performance.md shows. Everything listens on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

counts=("${@:-1 20 100}")
read -r -a counts <<<"${counts[*]}"
scrapes="${SCRAPES:-300}"
ee_port="${EE_PORT:-19482}"
idle_port="${IDLE_PORT:-19483}"
default_port="${DEFAULT_PORT:-19484}"
ne_port="${NE_PORT:-19100}"
results="$root/bench/results"
out="$results/${OUT_NAME:-latest}.jsonl"
mkdir -p "$results"

need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v prometheus-node-exporter >/dev/null || need+=(prometheus-node-exporter)
command -v jstat >/dev/null || need+=(openjdk-17-jdk-headless)
[ -x /usr/bin/time ] || need+=(time)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work="$(mktemp -d)"
pids=()
cgroups=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ((c = ${#cgroups[@]} - 1; c >= 0; c--)); do rmdir "${cgroups[c]}" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

make -s build >/dev/null
javac -d "$work/classes" $(find test/java -name '*.java')

# Three executor_exporters:
#   fresh    --jvm.sample-interval=0 --jvm.max-sample-age=0: every scrape
#            reads every JVM (nothing in the background), so a
#            scrape's CPU is the whole cost of one reading of the machine;
#   default  the default flags, scraped: a scrape serves the background
#            sample (younger than --jvm.max-sample-age) when there is one;
#   idle     the default flags, never scraped: what background sampling
#            (every --jvm.sample-interval, 5 s) costs.
./executor_exporter --web.listen-address="127.0.0.1:$ee_port" --jvm.sample-interval=0 --jvm.max-sample-age=0 \
  --cloud.provider=none --log.level=warn 2>"$work/ee.log" &
ee_pid=$!; pids+=("$ee_pid")
# OLD: the same two ways, built at another revision, for an A/B in one run.
if [ -n "${OLD:-}" ]; then
  mkdir -p "$work/old"
  git archive "$OLD" | tar -x -C "$work/old"
  (cd "$work/old" && go build -o "$work/ee-old" ./cmd/executor_exporter)
  "$work/ee-old" --web.listen-address="127.0.0.1:${OLD_PORT:-19485}" --jvm.sample-interval=0 --jvm.max-sample-age=0 \
    --cloud.provider=none --log.level=warn 2>"$work/old.log" &
  old_pid=$!; pids+=("$old_pid")
  "$work/ee-old" --web.listen-address="127.0.0.1:${OLD_DEFAULT_PORT:-19486}" \
    --cloud.provider=none --log.level=warn 2>"$work/old-default.log" &
  old_default_pid=$!; pids+=("$old_default_pid")
fi
./executor_exporter --web.listen-address="127.0.0.1:$default_port" \
  --cloud.provider=none --log.level=warn 2>"$work/default.log" &
default_pid=$!; pids+=("$default_pid")
./executor_exporter --web.listen-address="127.0.0.1:$idle_port" \
  --cloud.provider=none --log.level=warn 2>"$work/idle.log" &
idle_pid=$!; pids+=("$idle_pid")
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" --log.level=warn 2>"$work/ne.log" &
ne_pid=$!; pids+=("$ne_pid")

# A Kubernetes node runs hundreds of processes; a bare container a few dozen.
# Add some to see what processes that are not JVMs cost. The exporter reads
# a process again while it is young (its first 30 s), so the figures are
# taken once these and the JVMs are older than that, as on a node.
for ((i = 0; i < ${EXTRA_PROCS:-0}; i++)); do
  sleep 7200 &
  pids+=("$!")
done
extra_started=$SECONDS

wait_http() {
  for _ in $(seq 100); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "$1 did not answer" >&2; exit 1
}
wait_http "http://127.0.0.1:$ee_port/metrics"
wait_http "http://127.0.0.1:$idle_port/metrics"
wait_http "http://127.0.0.1:$default_port/metrics"
wait_http "http://127.0.0.1:$ne_port/metrics"

# JVMs of this benchmark the exporter sees (other JVMs on the machine are
# scraped too, and counted in the figures, but not waited for).
jvms() {
  curl -sf "http://127.0.0.1:$ee_port/metrics" | grep -c '^executor_jvm_info{.*app_id="app-bench"' || true
}

# CGROUP_PER_JVM: each JVM in a memory cgroup of its own with a 256 MiB
# limit (cgroup v1 or v2, whichever has the memory controller), as each
# executor is in its pod's container cgroup on Kubernetes.
cgroup_parent=""
if [ -n "${CGROUP_PER_JVM:-}" ]; then
  if [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cgroup_parent=/sys/fs/cgroup/memory/ee-bench-$$ limit_file=memory.limit_in_bytes
  elif grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    cgroup_parent=/sys/fs/cgroup/ee-bench-$$ limit_file=memory.max
  else
    echo "CGROUP_PER_JVM: no memory cgroup controller" >&2; exit 1
  fi
  mkdir "$cgroup_parent"; cgroups+=("$cgroup_parent")
  [ "$limit_file" = memory.max ] && echo +memory >"$cgroup_parent/cgroup.subtree_control"
fi

jvm_pids=()
start_jvms() {
  local want="$1" i launch
  for ((i = ${#jvm_pids[@]}; i < want; i++)); do
    launch=()
    if [ -n "$cgroup_parent" ]; then
      mkdir "$cgroup_parent/jvm-$i"; cgroups+=("$cgroup_parent/jvm-$i")
      echo $((256 << 20)) >"$cgroup_parent/jvm-$i/$limit_file"
      launch=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup_parent/jvm-$i")
    fi
    "${launch[@]}" java -Xmx16m -Xms16m -XX:+UseSerialGC -Xss256k -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 \
      -cp "$work/classes" org.apache.spark.executor.CoarseGrainedExecutorBackend \
      --executor-id "$((i + 1))" --app-id app-bench --exit-after-s 3600 >/dev/null 2>&1 &
    jvm_pids+=("$!"); pids+=("$!")
    jvms_started=$SECONDS
  done
  for _ in $(seq 600); do
    [ "$(jvms)" = "$want" ] && return 0
    sleep 0.5
  done
  echo "exporter sees $(jvms) JVMs, want $want" >&2; exit 1
}
jvms_started=$SECONDS


machine() {
  printf '{"kind":"machine","nproc":%s,"mem_total_kib":%s,"kernel":"%s","cpu":"%s","java":"%s","node_exporter":"%s","exporter":"%s","cgroup_per_jvm":%s}\n' \
    "$(nproc)" "$(awk '/MemTotal/ {print $2}' /proc/meminfo)" "$(uname -r)" \
    "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" \
    "$(java -version 2>&1 | head -1 | tr -d '"')" \
    "$(prometheus-node-exporter --version 2>&1 | head -1)" \
    "$(./executor_exporter --version 2>&1 | head -1)" \
    "$([ -n "$cgroup_parent" ] && echo true || echo false)"
}

: >"$out"
machine >>"$out"
# CPU time of a process in ns: the sum over its threads' schedstat (ticks
# of /proc/<pid>/stat are 10 ms, too coarse for 30 s of sampling).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s}'; }
for n in "${counts[@]}"; do
  echo "== $n JVMs" >&2
  start_jvms "$n"
  sleep 2
  # Executors live for minutes to hours; their first 30 s (the young
  # window, read again on every scan on purpose) are not what a node pays.
  while ((SECONDS - extra_started < 35 || SECONDS - jvms_started < 35)); do sleep 1; done
  # All exporters in turn, one scrape each per round (scrape.py), so the
  # machine's other work weighs on them alike.
  targets=(executor_exporter executor_exporter_default node_exporter)
  args=("http://127.0.0.1:$ee_port/metrics" "$ee_pid" "http://127.0.0.1:$default_port/metrics" "$default_pid"
    "http://127.0.0.1:$ne_port/metrics" "$ne_pid")
  if [ -n "${OLD:-}" ]; then
    targets+=(executor_exporter_old executor_exporter_old_default)
    args+=("http://127.0.0.1:${OLD_PORT:-19485}/metrics" "$old_pid" "http://127.0.0.1:${OLD_DEFAULT_PORT:-19486}/metrics" "$old_default_pid")
  fi
  python3 bench/scrape.py "$scrapes" "${args[@]}" >"$work/scrapes.jsonl"
  i=0
  while read -r line; do
    echo "{\"kind\":\"scrape\",\"target\":\"${targets[i]}\",\"jvms\":$n,${line#\{}" >>"$out"
    i=$((i + 1))
  done <"$work/scrapes.jsonl"

  # Latency with a public tool; curl's own start-up is in both.
  hyperfine -N --warmup 10 --runs 100 --export-json "$work/hf.json" \
    "curl -s -o /dev/null http://127.0.0.1:$ee_port/metrics" \
    "curl -s -o /dev/null http://127.0.0.1:$ne_port/metrics" >/dev/null 2>&1
  python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    target = "executor_exporter" if sys.argv[2] in r["command"] else "node_exporter"
    print(json.dumps({"kind": "hyperfine", "target": target, "jvms": int(sys.argv[3]),
                      "mean_seconds": r["mean"], "stddev_seconds": r["stddev"], "median_seconds": r["median"]}))
' "$work/hf.json" ":$ee_port/" "$n" >>"$out"

  # jstat -gc, once per JVM for up to 5 JVMs: CPU (user+sys) and wall time.
  for p in "${jvm_pids[@]:0:5}"; do
    /usr/bin/time -f '%U %S %e' -o "$work/time" jstat -gc "$p" >/dev/null
    read -r u s e <"$work/time"
    printf '{"kind":"jstat","jvms":%s,"pid":%s,"cpu_seconds":%s,"wall_seconds":%s}\n' \
      "$n" "$p" "$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')" "$e" >>"$out"
  done

  # Background sampling: the unscraped exporter's CPU over 30 s.
  c0="$(cpu_ns "$idle_pid")"; sleep 30; c1="$(cpu_ns "$idle_pid")"
  printf '{"kind":"background","jvms":%s,"cpu_seconds_per_second":%s,"rss_bytes":%s,"loadavg":"%s"}\n' \
    "$n" "$(awk -v a="$c0" -v b="$c1" 'BEGIN {print (b - a) / 1e9 / 30}')" \
    "$(awk '/VmRSS/ {print $2 * 1024}' "/proc/$idle_pid/status")" "$(cut -d' ' -f1 /proc/loadavg)" >>"$out"
done

# BUSIER: what more processes that are not JVMs add to a reading, measured
# in the same run (the machine's other work and JVMs stay as they are):
# fresh readings (scrapes of the fresh exporter) and the idle exporter's
# background sampling, without and with BUSIER more sleeping processes,
# each measured once they are older than the young window.
reading() { # reading N EXTRA ROUND
  python3 bench/scrape.py "$scrapes" "http://127.0.0.1:$ee_port/metrics" "$ee_pid" |
    sed "s/^{/{\"kind\":\"reading\",\"jvms\":$1,\"extra\":$2,\"round\":$3,/" >>"$out"
  c0="$(cpu_ns "$idle_pid")"; sleep 20; c1="$(cpu_ns "$idle_pid")"
  printf '{"kind":"reading_background","jvms":%s,"extra":%s,"round":%s,"cpu_seconds_per_second":%s}\n' \
    "$1" "$2" "$3" "$(awk -v a="$c0" -v b="$c1" 'BEGIN {print (b - a) / 1e9 / 20}')" >>"$out"
}
if [ -n "${BUSIER:-}" ]; then
  n="${counts[${#counts[@]} - 1]}"
  for round in 1 2 3; do
    echo "== $n JVMs, round $round: without and with $BUSIER more processes" >&2
    reading "$n" 0 "$round"
    busy=()
    for ((i = 0; i < BUSIER; i++)); do sleep 7200 & busy+=("$!"); pids+=("$!"); done
    sleep 35
    reading "$n" "$BUSIER" "$round"
    kill "${busy[@]}" 2>/dev/null || true
    wait "${busy[@]}" 2>/dev/null || true
    sleep 5
  done
fi

python3 bench/summarize.py "$out"
