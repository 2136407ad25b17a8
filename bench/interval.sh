#!/usr/bin/env bash
# What executor_exporter costs a user at the scrape intervals Prometheus
# uses, against node_exporter (Debian's, default collectors, the anchor)
# in the same run: N JVMs (JVMS, 100), the stand-in Spark executor of
# test/java, and 300 other processes. The servers, scraped in turn with
# the headers Prometheus sends: executor_exporter with its default flags
# (risk-following sampling, the native-memory breakdown on); the same
# with the breakdown off (--jvm.native-memory.max-age=0), for what the
# breakdown costs; the same started as the systemd unit starts it (its
# TimerSlackNSec=, through timerslack.py); with BASE=<rev>, that
# revision's build ("base", built from a git worktree), e.g. the build
# before a change; and node_exporter. Each is measured as a whole,
# background work included: CPU time per second of wall-clock time
# (interval.py, from its threads' schedstat) and resident memory. Phases:
#
#   start         the JVMs started fresh while every server is scraped
#                 every 15 s, over their first START seconds (180): what
#                 a JVM's start costs an exporter, its discovery, its
#                 first readings and its base breakdown by region (taken
#                 once its first minute is over) included; beside it, the
#                 JVMs' own CPU time over the same window (utime + stime
#                 of /proc/<pid>/stat)
#   back-to-back  100 scrapes in a row, CPU per scrape (scrape.py)
#   1s            1 s scrapes for 60 s
#   15s, 30s      scrapes every 15 s and 30 s, for WINDOW seconds each
#                 (120): the settled cost, the JVMs past their start
#   15s-churn     15 s scrapes for 120 s while two short-lived processes
#                 start every half second (a node's probes and scripts)
#   marginal      10 JVMs, each in a memory cgroup of its own (256 MiB, as
#                 on Kubernetes), each sampled every second
#                 (--jvm.sample-interval=1s), unscraped, for 60 s, then the
#                 same without them: CPU per JVM per second of sampling at
#                 the fastest interval; and `jstat -gc` on one of them, the
#                 JDK's own reader of the same counters, the anchor
#
# The phases after start keep their order (back-to-back first), so that
# their figures compare with earlier runs': the JVMs are past their
# start-up (sampled more often on purpose) and their base breakdowns (the
# script waits until the exporter's smaps reads stand still). A run takes
# about 10 minutes plus twice WINDOW (a multiple of 30 s): about 14 with
# the defaults, 11 with JVMS=4 WINDOW=20. Needs root (apt-get, cgroups),
# OpenJDK 17 (javac, java, jstat), python3, curl, and Go for BASE.
# PORTS=<n> moves every server's port up by n, for a run beside another
# on a shared machine; a quiet machine gives the figures to publish.
#
#   bench/interval.sh                              # 100 JVMs, WINDOW=120, START=180
#   BASE=<rev> bench/interval.sh                   # and the build at <rev> beside it
#   JVMS=4 WINDOW=20 OUT=/tmp/i.jsonl bench/interval.sh   # does every phase work
#   python3 bench/report.py bench/results/interval.jsonl  # the tables of docs/performance.md
#
# Writes OUT (bench/results/interval.jsonl), one JSON object a line.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
jvms="${JVMS:-100}"
window="${WINDOW:-120}"
start_s="${START:-180}"
out="${OUT:-$root/bench/results/interval.jsonl}"
port() { echo $(($1 + ${PORTS:-0})); }

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
cgroup_parent=""
cgroups=()
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
base_rev=""
if [ -n "${BASE:-}" ]; then
  base_rev="$(git rev-parse --verify "$BASE^{commit}")"
  git worktree add -q --detach "$work/base-tree" "$base_rev"
  (cd "$work/base-tree" && go build -o "$work/ee-base" ./cmd/executor_exporter)
fi
javac -d "$work/classes" $(find test/java -name '*.java')
for ((i = 0; i < 300; i++)); do sleep 7200 & pids+=("$!"); done

java_args=(-Xmx16m -Xms16m -XX:+UseSerialGC -Xss256k -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1
  -cp "$work/classes" org.apache.spark.executor.CoarseGrainedExecutorBackend)
start_jvms() { # count first-id
  for ((i = 0; i < $1; i++)); do
    java "${java_args[@]}" --executor-id "$(($2 + i))" --app-id app-bench --exit-after-s 7200 >/dev/null 2>&1 &
    jvm_pids+=("$!")
  done
}
# start_jvms_in_cgroups count: each JVM in a memory cgroup of its own.
start_jvms_in_cgroups() {
  if [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cgroup_parent=/sys/fs/cgroup/memory/ee-bench-${work##*/} limit_file=memory.limit_in_bytes
  else
    cgroup_parent=/sys/fs/cgroup/ee-bench-${work##*/} limit_file=memory.max
  fi
  mkdir -p "$cgroup_parent"
  [ "$limit_file" = memory.max ] && echo +memory >"$cgroup_parent/cgroup.subtree_control"
  for ((i = 0; i < $1; i++)); do
    mkdir "$cgroup_parent/jvm-$i"; cgroups+=("$cgroup_parent/jvm-$i")
    echo $((256 << 20)) >"$cgroup_parent/jvm-$i/$limit_file"
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup_parent/jvm-$i" \
      java "${java_args[@]}" --executor-id "$((i + 1))" --app-id app-bench --exit-after-s 7200 >/dev/null 2>&1 &
    jvm_pids+=("$!")
  done
}
stop_jvms() {
  for p in "${jvm_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${jvm_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  jvm_pids=()
}
# The JVMs' own CPU time so far (utime + stime, after the command name),
# in seconds, summed.
jvms_cpu() {
  python3 - "${jvm_pids[@]}" <<'PY'
import os, sys
ticks = 0
for pid in sys.argv[1:]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        ticks += int(fields[11]) + int(fields[12])
    except (FileNotFoundError, ProcessLookupError):
        pass
print(f"{ticks / os.sysconf('SC_CLK_TCK'):.2f}")
PY
}

ee_url="http://127.0.0.1:$(port 19482)/metrics"
flags=(--cloud.provider=none --log.level=warn)
./executor_exporter --web.listen-address="127.0.0.1:$(port 19482)" "${flags[@]}" 2>"$work/ee.log" &
ee=$!; pids+=("$ee")
servers=(executor_exporter "$ee_url" "$ee")
# The same without the native-memory breakdown by region: what it costs.
./executor_exporter --web.listen-address="127.0.0.1:$(port 19485)" "${flags[@]}" --jvm.native-memory.max-age=0 2>"$work/off.log" &
off=$!; pids+=("$off")
servers+=(breakdown-off "http://127.0.0.1:$(port 19485)/metrics" "$off")
# The same as the systemd unit starts it: its TimerSlackNSec= (the flags
# stay the defaults; Kubernetes has no way to set a slack).
python3 bench/timerslack.py deploy/systemd/executor_exporter.service \
  ./executor_exporter --web.listen-address="127.0.0.1:$(port 19486)" "${flags[@]}" 2>"$work/unit.log" &
unit=$!; pids+=("$unit")
servers+=(unit-timer-slack "http://127.0.0.1:$(port 19486)/metrics" "$unit")
if [ -n "$base_rev" ]; then
  "$work/ee-base" --web.listen-address="127.0.0.1:$(port 19483)" "${flags[@]}" 2>"$work/base.log" &
  base=$!; pids+=("$base")
  servers+=(base "http://127.0.0.1:$(port 19483)/metrics" "$base")
fi
prometheus-node-exporter --web.listen-address="127.0.0.1:$(port 19100)" 2>"$work/ne.log" &
ne=$!; pids+=("$ne")
servers+=(node_exporter "http://127.0.0.1:$(port 19100)/metrics" "$ne")
sleep 2
for ((i = 0; i < ${#servers[@]}; i += 3)); do
  kill -0 "${servers[i + 2]}" 2>/dev/null || { echo "${servers[i]} did not start (port taken? PORTS=)" >&2; exit 1; }
done

# The bench's own looks at the exporter ask as Prometheus does (scrape.py's
# headers): a second format would make it keep the JVMs' text in both.
scrape() {
  curl -sf --compressed -H 'Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' "$1"
}
counters() { # the exporter's own counts of what it read
  scrape "$ee_url" |
    awk -F'[{}" ]+' '/^executor_jvm_reads_total / {printf "\"jvm_reads\":%s,", $2}
      /^executor_jvm_native_memory_reads_total/ {printf "\"%s_reads\":%s,", $3, $4}'
}
interval() { # phase interval seconds
  before="$(counters)"
  python3 bench/interval.py "$3" "$2" "${servers[@]}" | sed "s/^{/{\"phase\":\"$1\",\"jvms\":$jvms,/"
  printf '{"kind":"reads","phase":"%s","before":{%s"_":0},"after":{%s"_":0}}\n' "$1" "$before" "$(counters)"
}

{
  labels=""
  for ((i = 0; i < ${#servers[@]}; i += 3)); do labels+="\"${servers[i + 1]}\":\"${servers[i]}\","; done
  printf '{"kind":"run","jvms":%s,"window_s":%s,"start_s":%s,"build":"%s","base":"%s","nproc":%s,"loadavg":"%s","servers":{%s"_":""}}\n' \
    "$jvms" "$window" "$start_s" "$(git describe --always --dirty --abbrev=12)" "$base_rev" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$labels"
  # What a JVM's start costs: fresh JVMs, their first START seconds.
  start_jvms "$jvms" 1
  jvm_before="$(jvms_cpu)"
  interval start 15 "$start_s"
  printf '{"phase":"start","kind":"jvms","jvms":%s,"window_s":%s,"cpu_s":%s,"cpu_s_before":%s}\n' \
    "$jvms" "$start_s" "$(echo "$(jvms_cpu) $jvm_before" | awk '{printf "%.2f", $1 - $2}')" "$jvm_before"
} >"$work/start.jsonl"

served() { scrape "$ee_url" | grep -c '^executor_jvm_info' || true; }
for _ in $(seq 600); do [ "$(served)" -ge "$jvms" ] && break; sleep 0.5; done
# Past the base breakdown of each, taken once its first minute is over:
# the smaps reads stand still for 15 s (3 minutes more at most).
smaps_reads() {
  scrape "$ee_url" |
    awk -F'[{}" ]+' '/^executor_jvm_native_memory_reads_total\{file="smaps"\}/ {print $4}'
}
last=""
for _ in $(seq 12); do
  now="$(smaps_reads || true)"
  [ -n "$now" ] && [ "$now" = "$last" ] && break
  last="$now"
  sleep 15
done

{
  cat "$work/start.jsonl"
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
  # open, and it is stopped here, not by cleanup, as are these JVMs.
  marginal_cleanup() {
    kill "${fast:-}" "${jvm_pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    for ((c = ${#cgroups[@]} - 1; c >= 0; c--)); do rmdir "${cgroups[c]}" 2>/dev/null || true; done
    [ -z "$cgroup_parent" ] || rmdir "$cgroup_parent" 2>/dev/null || true
  }
  trap marginal_cleanup EXIT
  fast_url="http://127.0.0.1:$(port 19484)/metrics"
  ./executor_exporter --web.listen-address="127.0.0.1:$(port 19484)" "${flags[@]}" --jvm.sample-interval=1s >/dev/null 2>"$work/fast.log" &
  fast=$!
  start_jvms_in_cgroups 10
  for _ in $(seq 600); do [ "$(scrape "$fast_url" | grep -c '^executor_jvm_info')" -ge 10 ] && break; sleep 0.5; done
  sleep 75
  python3 bench/interval.py 60 60 fast-10 - "$fast" | sed 's/^{/{"phase":"marginal","jvms":10,/'
  # The anchor: the JDK's own reader of the same counters, once per JVM read.
  jstat_cpu="$( { /usr/bin/time -f '%U %S' jstat -gc "${jvm_pids[0]}" >/dev/null; } 2>&1 | tail -1)"
  printf '{"phase":"marginal","kind":"jstat","cpu_s":%s}\n' "$(echo "$jstat_cpu" | awk '{print $1 + $2}')"
  stop_jvms
  sleep 10
  python3 bench/interval.py 60 60 fast-0 - "$fast" | sed 's/^{/{"phase":"marginal","jvms":0,/'
  marginal_cleanup
} | tee "$out"
