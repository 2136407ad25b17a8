#!/usr/bin/env bash
# make demo: executor_exporter + Prometheus + Alertmanager + a demo Spark
# executor JVM whose heap is nearly full, all on 127.0.0.1, so you can watch
# the mixin's alerts go pending and fire. Ctrl-C stops everything.
#
#   DEMO_SECONDS=90 deploy/prometheus/demo.sh   # non-interactive: run 90 s,
#       print the alerts, exit 0 if the demo executor's heap alert reached
#       Alertmanager, else 1
#
# Ports (override if taken): DEMO_EXPORTER_PORT=9482, DEMO_PROMETHEUS_PORT=9090,
# DEMO_ALERTMANAGER_PORT=9093. Uses Debian's prometheus and
# prometheus-alertmanager (installed with apt-get when missing and run as
# root) and OpenJDK 17. The demo shortens every alert's `for:` to 15s so
# they fire within a minute; deploy/prometheus/prometheus.yml keeps the
# mixin's own.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

seconds="${DEMO_SECONDS:-0}"
ee_port="${DEMO_EXPORTER_PORT:-9482}"
prom_port="${DEMO_PROMETHEUS_PORT:-9090}"
am_port="${DEMO_ALERTMANAGER_PORT:-9093}"

# A port already taken (a `make run` still going, a local Prometheus) would
# make the demo's server fail while the readiness checks below talk to the
# other one: refuse to start instead.
for p in "DEMO_EXPORTER_PORT=$ee_port" "DEMO_PROMETHEUS_PORT=$prom_port" "DEMO_ALERTMANAGER_PORT=$am_port"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/${p#*=}") 2>/dev/null; then
    echo "demo: 127.0.0.1:${p#*=} is in use; free it or set ${p%%=*} to another port" >&2
    exit 1
  fi
done

need=()
command -v prometheus >/dev/null || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null || need+=(prometheus-alertmanager)
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "demo: missing ${need[*]}; install them (apt-get install ${need[*]}) or run as root" >&2
    exit 1
  fi
  echo "demo: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
for f in mixin/generated/rules.yaml mixin/generated/alerts.yaml; do
  [ -r "$f" ] || { echo "demo: $f missing: run 'make mixin'" >&2; exit 1; }
done
[ -x ./executor_exporter ] || make -s build

work="$(mktemp -d -t executor-exporter-demo.XXXXXX)"
pids=()
stop() {
  trap - EXIT INT TERM
  echo
  echo "demo: stopping"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

# The demo JVM: Spark's executor main class (the stand-in under test/java),
# a 64 MiB heap holding 58 MiB and churning garbage on top. Serial GC with a
# 4 MiB young generation leaves the old generation room for the 58 MiB; under
# G1 each 1 MiB array is a humongous object taking two regions, and the JVM
# dies of OutOfMemoryError before the demo begins.
javac -d "$work/classes" $(find test/java -name '*.java')
java -Xmx64m -Xmn4m -XX:+UseSerialGC -cp "$work/classes" org.apache.spark.executor.CoarseGrainedExecutorBackend \
  --executor-id 1 --app-id app-demo --heap-mb 58 --churn --exit-after-s 86400 \
  >"$work/jvm.log" 2>&1 &
pids+=("$!")

./executor_exporter --web.listen-address="127.0.0.1:$ee_port" --jvm.sample-interval=5s \
  >"$work/exporter.log" 2>&1 &
pids+=("$!")

# The mixin's rules with short `for:` durations, and the quickstart config
# pointed at them and at the demo's ports, scraping every 5 s.
sed -E 's/^([[:space:]]*"?for"?:[[:space:]]*)"?[0-9]+[smh]"?/\1"15s"/' mixin/generated/alerts.yaml >"$work/alerts.yaml"
cp mixin/generated/rules.yaml "$work/rules.yaml"
sed -e "s#../../mixin/generated/#$work/#" \
    -e "s#127.0.0.1:9482#127.0.0.1:$ee_port#" \
    -e "s#127.0.0.1:9093#127.0.0.1:$am_port#" \
    -e "s#scrape_interval: 15s#scrape_interval: 5s#" \
    -e "s#evaluation_interval: 15s#evaluation_interval: 5s#" \
    deploy/prometheus/prometheus.yml >"$work/prometheus.yml"

prometheus-alertmanager --config.file=deploy/prometheus/alertmanager.yml \
  --storage.path="$work/alertmanager" --web.listen-address="127.0.0.1:$am_port" \
  --cluster.listen-address= >"$work/alertmanager.log" 2>&1 &
pids+=("$!")
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=("$!")

wait_http() {
  local name="$1" url="$2" log="$3"
  for _ in $(seq 150); do
    curl -sf -o /dev/null "$url" && return 0
    sleep 0.2
  done
  echo "demo: $name did not start; its log:" >&2
  tail -20 "$log" >&2
  exit 1
}
wait_http executor_exporter "http://127.0.0.1:$ee_port/metrics" "$work/exporter.log"
wait_http alertmanager "http://127.0.0.1:$am_port/-/ready" "$work/alertmanager.log"
wait_http prometheus "http://127.0.0.1:$prom_port/-/ready" "$work/prometheus.log"

cat <<MSG

  executor_exporter  http://127.0.0.1:$ee_port/metrics
  Prometheus         http://127.0.0.1:$prom_port/alerts     (graph: executor_jvm_memory_used_bytes)
  Alertmanager       http://127.0.0.1:$am_port/

  A demo executor (app-demo, executor 1) holds 58 MiB of its 64 MiB heap:
  ExecutorJVMHeapNearlyFull goes pending, then fires within about a minute.
  Logs: $work
MSG

if [ "$seconds" -eq 0 ]; then
  echo "  Ctrl-C stops everything."
  while sleep 3600; do :; done
fi

sleep "$seconds"
echo
echo "demo: alerts in Prometheus after ${seconds}s:"
curl -sf "http://127.0.0.1:$prom_port/api/v1/alerts" |
  python3 -c 'import json,sys; [print("  %-8s %s %s" % (a["state"], a["labels"]["alertname"], a["labels"].get("app_id", ""))) for a in json.load(sys.stdin)["data"]["alerts"]]'
received="$(curl -sf "http://127.0.0.1:$am_port/api/v2/alerts" |
  python3 -c 'import json,sys; print(" ".join(sorted({a["labels"]["alertname"] + "{app_id=" + a["labels"].get("app_id", "") + "}" for a in json.load(sys.stdin)})))')"
echo "demo: Alertmanager received: ${received:-nothing}"
case " $received " in
  *" ExecutorJVMHeapNearlyFull{app_id=app-demo} "*) exit 0 ;;
esac
echo "demo: ExecutorJVMHeapNearlyFull for app-demo did not reach Alertmanager in ${seconds}s" >&2
exit 1
