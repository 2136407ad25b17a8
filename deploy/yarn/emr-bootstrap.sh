#!/bin/bash
# EMR bootstrap action: installs executor_exporter on every node of the
# cluster as a systemd service, from the release archive for the node's
# architecture (amd64 or arm64: Graviton), for the executors YARN runs
# there. docs/yarn.md describes it.
#
# Upload this script to S3, then add the action; the nodes download the
# release from GitHub:
#
#   aws emr create-cluster ... --bootstrap-actions \
#     Path=s3://BUCKET/executor_exporter/emr-bootstrap.sh
#
# Without internet access, copy the release's archives and sha256sums.txt
# to an S3 prefix and add Args=[--release-url,s3://BUCKET/executor_exporter].
#
# Arguments:
#   --version V        the release to install (default below: the one this
#                      script comes from)
#   --release-url URL  where that release's archives and sha256sums.txt are:
#                      https://…, s3://… or a local directory (default: the
#                      GitHub release of --version)
#   --args "FLAGS"     more exporter flags, appended to ARGS
#
# The archive is checked against sha256sums.txt before anything is
# installed; the binary, executor_exporter.service and
# executor_exporter.default come from the archive.
#
# Bootstrap actions run before EMR installs Hadoop, so /etc/hadoop/conf
# does not exist yet: the service is installed and started now, and
# restarted in the background once yarn-site.xml appears (the exporter
# reads it at start-up), for at most 60 minutes.
#
# For tests: EXECUTOR_EXPORTER_ROOT installs under another root, SYSTEMCTL
# replaces systemctl, EXECUTOR_EXPORTER_WAIT_SECONDS the waiter's pause,
# EXECUTOR_EXPORTER_WAIT_LIMIT_SECONDS how long it waits at most,
# EXECUTOR_EXPORTER_MACHINE the machine `uname -m` names.
set -euo pipefail

root="${EXECUTOR_EXPORTER_ROOT:-}"
systemctl="${SYSTEMCTL:-systemctl}"
pause="${EXECUTOR_EXPORTER_WAIT_SECONDS:-10}"
wait_limit="${EXECUTOR_EXPORTER_WAIT_LIMIT_SECONDS:-3600}"
version="0.1.0"
url="" extra=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version="$2"; shift 2 ;;
    --release-url) url="$2"; shift 2 ;;
    --args) extra="$2"; shift 2 ;;
    *) echo "emr-bootstrap: unknown argument $1" >&2; exit 2 ;;
  esac
done
url="${url:-https://github.com/executor-exporter/executor_exporter/releases/download/v$version}"

machine="${EXECUTOR_EXPORTER_MACHINE:-$(uname -m)}"
case "$machine" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "emr-bootstrap: no executor_exporter release for machine $machine" >&2; exit 1 ;;
esac

sudo=""
if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then
  sudo="sudo" # EMR runs bootstrap actions as hadoop, with sudo
fi

fetch() {
  case "$1" in
    s3://*) aws s3 cp --only-show-errors "$1" "$2" ;;
    http://* | https://*) curl -fsSL --retry 3 -o "$2" "$1" ;;
    file://*) cp "${1#file://}" "$2" ;;
    *) cp "$1" "$2" ;;
  esac
}

# The archive, checked against the release's sha256sums.txt, unpacked.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
name="executor_exporter-$version.linux-$arch"
fetch "${url%/}/$name.tar.gz" "$work/$name.tar.gz"
fetch "${url%/}/sha256sums.txt" "$work/sha256sums.txt"
grep -q "  $name.tar.gz\$" "$work/sha256sums.txt" || { echo "emr-bootstrap: sha256sums.txt lists no $name.tar.gz" >&2; exit 1; }
(cd "$work" && grep "  $name.tar.gz\$" sha256sums.txt | sha256sum -c --quiet --strict -) ||
  { echo "emr-bootstrap: $name.tar.gz does not match its SHA-256 in sha256sums.txt: nothing installed" >&2; exit 1; }
tar -xzf "$work/$name.tar.gz" -C "$work"
files="$work/$name"

# The unit's defaults plus the YARN configuration directory, which EMR
# writes to /etc/hadoop/conf.
args="--web.listen-address=:9482 --yarn.conf-dir=/etc/hadoop/conf${extra:+ $extra}"
{ grep -v '^ARGS=' "$files/executor_exporter.default" || true; printf 'ARGS="%s"\n' "$args"; } >"$work/default"

$sudo install -d -m 0755 "$root/usr/local/bin" "$root/etc/systemd/system" "$root/etc/default"
$sudo install -m 0755 "$files/executor_exporter" "$root/usr/local/bin/executor_exporter"
$sudo install -m 0644 "$files/executor_exporter.service" "$root/etc/systemd/system/executor_exporter.service"
$sudo install -m 0644 "$work/default" "$root/etc/default/executor_exporter"

$sudo "$systemctl" daemon-reload
$sudo "$systemctl" enable --now executor_exporter

# Restart once EMR has written yarn-site.xml; the bootstrap action itself
# must return for the cluster to go on.
site="$root/etc/hadoop/conf/yarn-site.xml"
if [ ! -f "$site" ]; then
  (
    deadline=$(($(date +%s) + wait_limit))
    while [ ! -f "$site" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep "$pause"; done
    [ -f "$site" ] && $sudo "$systemctl" restart executor_exporter
  ) >/dev/null 2>&1 </dev/null &
fi
