#!/bin/bash
# EMR bootstrap action: installs executor_exporter on every node of the
# cluster as a systemd service (deploy/systemd), for the executors YARN runs
# there. docs/yarn.md describes it.
#
# Upload the release's executor_exporter binary, executor_exporter.service
# and executor_exporter.default to one S3 prefix, then add the action:
#
#   aws emr create-cluster ... --bootstrap-actions \
#     Path=s3://BUCKET/executor_exporter/emr-bootstrap.sh,Args=[--source,s3://BUCKET/executor_exporter,--sha256,HEX]
#
# Arguments:
#   --source PREFIX    where the three files are: s3://…, https://…, or a
#                      local directory
#   --sha256 HEX       the binary's SHA-256; the install stops if it differs
#   --args "FLAGS"     more exporter flags, appended to ARGS
#
# Bootstrap actions run before EMR installs Hadoop, so /etc/hadoop/conf
# does not exist yet: the service is installed and started now, and
# restarted in the background once yarn-site.xml appears (the exporter
# reads it at start-up), for at most 60 minutes.
#
# For tests: EXECUTOR_EXPORTER_ROOT installs under another root, SYSTEMCTL
# replaces systemctl, EXECUTOR_EXPORTER_WAIT_SECONDS the waiter's pause.
set -euo pipefail

root="${EXECUTOR_EXPORTER_ROOT:-}"
systemctl="${SYSTEMCTL:-systemctl}"
pause="${EXECUTOR_EXPORTER_WAIT_SECONDS:-10}"
source="" sha256="" extra=""
while [ $# -gt 0 ]; do
  case "$1" in
    --source) source="$2"; shift 2 ;;
    --sha256) sha256="$2"; shift 2 ;;
    --args) extra="$2"; shift 2 ;;
    *) echo "emr-bootstrap: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$source" ] || { echo "emr-bootstrap: --source is required" >&2; exit 2; }

sudo=""
if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then
  sudo="sudo" # EMR runs bootstrap actions as hadoop, with sudo
fi

fetch() {
  case "$1" in
    s3://*) aws s3 cp --only-show-errors "$1" "$2" ;;
    http://*|https://*) curl -fsSL --retry 3 -o "$2" "$1" ;;
    file://*) cp "${1#file://}" "$2" ;;
    *) cp "$1" "$2" ;;
  esac
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for f in executor_exporter executor_exporter.service executor_exporter.default; do
  fetch "${source%/}/$f" "$work/$f"
done
if [ -n "$sha256" ]; then
  echo "$sha256  $work/executor_exporter" | sha256sum -c --quiet - || { echo "emr-bootstrap: executor_exporter's SHA-256 differs from --sha256" >&2; exit 1; }
fi

# The unit's defaults plus the YARN configuration directory, which EMR
# writes to /etc/hadoop/conf.
args="--web.listen-address=:9482 --yarn.conf-dir=/etc/hadoop/conf${extra:+ $extra}"
{ grep -v '^ARGS=' "$work/executor_exporter.default" || true; printf 'ARGS="%s"\n' "$args"; } >"$work/default"

$sudo install -d -m 0755 "$root/usr/local/bin" "$root/etc/systemd/system" "$root/etc/default"
$sudo install -m 0755 "$work/executor_exporter" "$root/usr/local/bin/executor_exporter"
$sudo install -m 0644 "$work/executor_exporter.service" "$root/etc/systemd/system/executor_exporter.service"
$sudo install -m 0644 "$work/default" "$root/etc/default/executor_exporter"

$sudo $systemctl daemon-reload
$sudo $systemctl enable --now executor_exporter

# Restart once EMR has written yarn-site.xml; the bootstrap action itself
# must return for the cluster to go on.
site="$root/etc/hadoop/conf/yarn-site.xml"
if [ ! -f "$site" ]; then
  (
    deadline=$(( $(date +%s) + 3600 ))
    while [ ! -f "$site" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep "$pause"; done
    [ -f "$site" ] && $sudo $systemctl restart executor_exporter
  ) >/dev/null 2>&1 </dev/null &
fi
