#!/bin/bash
# Dataproc initialization action: installs executor_exporter on every node
# of the cluster as a systemd service (deploy/systemd), for the executors
# YARN runs there. docs/yarn.md describes it.
#
# Upload the release's executor_exporter binary, executor_exporter.service
# and executor_exporter.default to one Cloud Storage prefix, then:
#
#   gcloud dataproc clusters create CLUSTER ... \
#     --initialization-actions=gs://BUCKET/executor_exporter/dataproc-init.sh \
#     --metadata=executor-exporter-source=gs://BUCKET/executor_exporter,executor-exporter-sha256=HEX
#
# Metadata (initialization actions take no arguments):
#   executor-exporter-source   where the three files are: gs://…, https://…,
#                              or a local directory
#   executor-exporter-sha256   the binary's SHA-256; the install stops if it differs
#   executor-exporter-args     more exporter flags, appended to ARGS
#
# Dataproc runs initialization actions as root once its services are
# configured, so /etc/hadoop/conf/yarn-site.xml is already there.
#
# For tests: EXECUTOR_EXPORTER_ROOT installs under another root, SYSTEMCTL
# replaces systemctl, and EXECUTOR_EXPORTER_SOURCE, _SHA256 and _ARGS
# replace the metadata.
set -euo pipefail

root="${EXECUTOR_EXPORTER_ROOT:-}"
systemctl="${SYSTEMCTL:-systemctl}"

metadata() {
  /usr/share/google/get_metadata_value "attributes/$1" 2>/dev/null || true
}
source="${EXECUTOR_EXPORTER_SOURCE:-$(metadata executor-exporter-source)}"
sha256="${EXECUTOR_EXPORTER_SHA256:-$(metadata executor-exporter-sha256)}"
extra="${EXECUTOR_EXPORTER_ARGS:-$(metadata executor-exporter-args)}"
[ -n "$source" ] || { echo "dataproc-init: metadata executor-exporter-source is required" >&2; exit 2; }

fetch() {
  case "$1" in
    gs://*) gcloud storage cp --quiet "$1" "$2" ;;
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
  echo "$sha256  $work/executor_exporter" | sha256sum -c --quiet - || { echo "dataproc-init: executor_exporter's SHA-256 differs from executor-exporter-sha256" >&2; exit 1; }
fi

# The unit's defaults plus the YARN configuration directory, which
# Dataproc writes to /etc/hadoop/conf.
args="--web.listen-address=:9482 --yarn.conf-dir=/etc/hadoop/conf${extra:+ $extra}"
{ grep -v '^ARGS=' "$work/executor_exporter.default" || true; printf 'ARGS="%s"\n' "$args"; } >"$work/default"

install -d -m 0755 "$root/usr/local/bin" "$root/etc/systemd/system" "$root/etc/default"
install -m 0755 "$work/executor_exporter" "$root/usr/local/bin/executor_exporter"
install -m 0644 "$work/executor_exporter.service" "$root/etc/systemd/system/executor_exporter.service"
install -m 0644 "$work/default" "$root/etc/default/executor_exporter"

$systemctl daemon-reload
$systemctl enable --now executor_exporter
