#!/usr/bin/env bash
# Golden-scrape comparison: proves that a change to how the exporter reads
# or serves JVMs keeps every series and every label. Builds the exporter at
# BASE (a git revision, default HEAD) and from the work tree (or NEW), starts a set of
# real JVMs that exercise every kind of series (Serial, Parallel and G1
# collectors; an executor, a driver and a plain JVM; a Python child; a memory
# cgroup with a limit), scrapes both exporters at the same moment, replaces
# every sample value by "V" and compares the two scrapes line by line.
# Needs root (the memory cgroup), OpenJDK 17 and python3.
#
#   bench/golden.sh                 # BASE=HEAD against the work tree
#   BASE=9912dca bench/golden.sh    # against an older revision
#   BASE=abc^ NEW=abc bench/golden.sh   # one commit against its parent
#   KEEP=/tmp/golden-base.txt bench/golden.sh   # also save BASE's normalised scrape
#
# Exits 1 and prints the diff when a series or label differs.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
base="${BASE:-HEAD}"
base_port="${BASE_PORT:-19582}"
new_port="${NEW_PORT:-19583}"

work="$(mktemp -d)"
pids=()
cg=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # The Python child outlives its JVM; it is in the cgroup.
  [ -n "$cg" ] && [ -f "$cg/cgroup.procs" ] && xargs -r kill <"$cg/cgroup.procs" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "$cg" ] && rmdir "$cg" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

mkdir -p "$work/base"
git archive "$base" | tar -x -C "$work/base"
(cd "$work/base" && go build -o "$work/ee-base" ./cmd/executor_exporter)
if [ -n "${NEW:-}" ]; then
  mkdir -p "$work/new"
  git archive "$NEW" | tar -x -C "$work/new"
  (cd "$work/new" && go build -o "$work/ee-new" ./cmd/executor_exporter)
else
  go build -o "$work/ee-new" ./cmd/executor_exporter
fi
javac -d "$work/classes" $(find test/java -name '*.java')

# A memory cgroup with a limit, beside the exporter's own (v2, else v1).
self_cg() { awk -F: -v c="$1" '$2 == c {print $3}' /proc/self/cgroup; }
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  cg="/sys/fs/cgroup$(self_cg '')/ee-golden-$$"
  mkdir "$cg" && echo $((512 << 20)) >"$cg/memory.max"
else
  cg="/sys/fs/cgroup/memory$(self_cg memory)/ee-golden-$$"
  mkdir "$cg" && echo $((512 << 20)) >"$cg/memory.limit_in_bytes"
fi

start() { # start NAME CGROUP? java args...
  local name="$1" group="$2"; shift 2
  if [ -n "$group" ]; then
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$group" java -cp "$work/classes" "$@" >"$work/$name.out" 2>&1 &
  else
    java -cp "$work/classes" "$@" >"$work/$name.out" 2>&1 &
  fi
  pids+=("$!"); jvm_pids+=("$!")
}
jvm_pids=()
start executor "" -Xmx32m -XX:+UseSerialGC org.apache.spark.executor.CoarseGrainedExecutorBackend \
  --executor-id 1 --app-id app-golden --exit-after-s 600
start pyspark "$cg" -Xmx32m -XX:+UseParallelGC org.apache.spark.executor.CoarseGrainedExecutorBackend \
  --executor-id 2 --app-id app-golden --python-child --exit-after-s 600
start driver "" -Xmx64m -XX:+UseG1GC org.apache.spark.deploy.SparkSubmit --app-id app-golden --exit-after-s 600
start idle "" -Xmx16m standin.Idle --exit-after-s 600

"$work/ee-base" --web.listen-address="127.0.0.1:$base_port" --jvm.sample-interval=0 --jvm.max-sample-age=0 \
  --cloud.provider=none --log.level=warn 2>"$work/base.log" &
pids+=("$!")
"$work/ee-new" --web.listen-address="127.0.0.1:$new_port" --jvm.sample-interval=0 --jvm.max-sample-age=0 \
  --cloud.provider=none --log.level=warn 2>"$work/new.log" &
pids+=("$!")

# Ready when both see the four JVMs with their trees (the Python child
# started) and the G1 driver has published its non-heap counters.
scrape() { curl -sf -H 'Accept: text/plain' "http://127.0.0.1:$1/metrics"; }
ready() {
  local s
  s="$(scrape "$1")" || return 1
  [ "$(grep -c '^executor_jvm_info{.*app_id="app-golden"' <<<"$s")" = 2 ] &&
    grep -q "^executor_jvm_info{.*pid=\"${jvm_pids[2]}\"" <<<"$s" &&
    grep -q "^executor_jvm_info{.*pid=\"${jvm_pids[3]}\"" <<<"$s" &&
    grep -q '^executor_process_resident_memory_bytes{.*executor_id="2",kind="python".*} [1-9]' <<<"$s"
}
for _ in $(seq 240); do ready "$base_port" && ready "$new_port" && break; sleep 0.5; done
ready "$base_port" && ready "$new_port" || { echo "exporters do not see the JVMs" >&2; exit 1; }

# Values go; names, labels, HELP and TYPE stay. Series of JVMs other than
# these four (other work on the machine) go too, and the four pids are
# replaced by their rank so that a saved scrape compares across runs.
normalise() {
  python3 -c '
import re, sys
lines = sys.stdin.read().splitlines()
rank = {p: "P%d" % i for i, p in enumerate(sys.argv[1:])}
out = []
for line in lines:
    m = re.search(r"\bpid=\"(\d+)\"", line)
    if m and m.group(1) not in rank:
        continue
    if not line.startswith("#"):
        line = re.sub(r" \S+$", " V", line)
        line = re.sub(r"\bpid=\"(\d+)\"", lambda m: "pid=\"%s\"" % rank[m.group(1)], line)
    out.append(line)
print("\n".join(sorted(out)))
' "${jvm_pids[@]}"
}
for fmt in text openmetrics; do
  accept='text/plain;version=0.0.4'
  [ "$fmt" = openmetrics ] && accept='application/openmetrics-text;version=1.0.0'
  curl -sf -H "Accept: $accept" "http://127.0.0.1:$base_port/metrics" | normalise >"$work/base.$fmt"
  curl -sf -H "Accept: $accept" "http://127.0.0.1:$new_port/metrics" | normalise >"$work/new.$fmt"
done
[ -n "${KEEP:-}" ] && cp "$work/base.text" "$KEEP"

status=0
for fmt in text openmetrics; do
  # The exporter's own build and runtime series (go_*, process_*,
  # promhttp_*, executor_exporter_build_info) differ with the binary.
  if diff -u <(grep -v -E '^(# (HELP|TYPE) )?(go_|process_|promhttp_|executor_exporter_build_info)' "$work/base.$fmt") \
    <(grep -v -E '^(# (HELP|TYPE) )?(go_|process_|promhttp_|executor_exporter_build_info)' "$work/new.$fmt") >"$work/diff.$fmt"; then
    echo "$fmt: identical series and labels ($(grep -vc '^#' "$work/new.$fmt") series)"
  else
    echo "$fmt: DIFFERENT"; cat "$work/diff.$fmt"; status=1
  fi
done
exit "$status"
