#!/bin/bash
# Dataproc initialization action: installs executor_exporter on every node
# of the cluster as a systemd service, from the release archive for the
# node's architecture (amd64 or arm64), for the executors YARN runs there.
# docs/yarn.md describes it.
#
# Upload this script to Cloud Storage, then:
#
#   gcloud dataproc clusters create CLUSTER ... \
#     --initialization-actions=gs://BUCKET/executor_exporter/dataproc-init.sh
#
# Without internet access, copy the release's archives and sha256sums.txt
# to a Cloud Storage prefix and add
#   --metadata=executor-exporter-release-url=gs://BUCKET/executor_exporter
#
# Metadata (initialization actions take no arguments):
#   executor-exporter-version      the release to install (default below:
#                                  the one this script comes from)
#   executor-exporter-release-url  where that release's archives and
#                                  sha256sums.txt are: https://…, gs://… or
#                                  a local directory (default: the GitHub
#                                  release of the version)
#   executor-exporter-args         more exporter flags, appended to ARGS
#
# The archive is checked against sha256sums.txt before anything is
# installed; the binary, executor_exporter.service and
# executor_exporter.default come from the archive.
#
# Dataproc runs initialization actions as root once its services are
# configured, so /etc/hadoop/conf/yarn-site.xml is already there.
#
# For tests: EXECUTOR_EXPORTER_ROOT installs under another root, SYSTEMCTL
# replaces systemctl, EXECUTOR_EXPORTER_MACHINE the machine `uname -m`
# names, and EXECUTOR_EXPORTER_VERSION, _RELEASE_URL and _ARGS replace the
# metadata.
set -euo pipefail

root="${EXECUTOR_EXPORTER_ROOT:-}"
systemctl="${SYSTEMCTL:-systemctl}"

metadata() {
  /usr/share/google/get_metadata_value "attributes/$1" 2>/dev/null || true
}
version="${EXECUTOR_EXPORTER_VERSION:-$(metadata executor-exporter-version)}"
version="${version:-0.1.0}"
url="${EXECUTOR_EXPORTER_RELEASE_URL:-$(metadata executor-exporter-release-url)}"
url="${url:-https://github.com/executor-exporter/executor_exporter/releases/download/v$version}"
extra="${EXECUTOR_EXPORTER_ARGS:-$(metadata executor-exporter-args)}"

machine="${EXECUTOR_EXPORTER_MACHINE:-$(uname -m)}"
case "$machine" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "dataproc-init: no executor_exporter release for machine $machine" >&2; exit 1 ;;
esac

fetch() {
  case "$1" in
    gs://*) gcloud storage cp --quiet "$1" "$2" ;;
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
grep -q "  $name.tar.gz\$" "$work/sha256sums.txt" || { echo "dataproc-init: sha256sums.txt lists no $name.tar.gz" >&2; exit 1; }
(cd "$work" && grep "  $name.tar.gz\$" sha256sums.txt | sha256sum -c --quiet --strict -) ||
  { echo "dataproc-init: $name.tar.gz does not match its SHA-256 in sha256sums.txt: nothing installed" >&2; exit 1; }
tar -xzf "$work/$name.tar.gz" -C "$work"
files="$work/$name"

# The unit's defaults plus the YARN configuration directory, which
# Dataproc writes to /etc/hadoop/conf.
args="--web.listen-address=:9482 --yarn.conf-dir=/etc/hadoop/conf${extra:+ $extra}"
{ grep -v '^ARGS=' "$files/executor_exporter.default" || true; printf 'ARGS="%s"\n' "$args"; } >"$work/default"

install -d -m 0755 "$root/usr/local/bin" "$root/etc/systemd/system" "$root/etc/default"
install -m 0755 "$files/executor_exporter" "$root/usr/local/bin/executor_exporter"
install -m 0644 "$files/executor_exporter.service" "$root/etc/systemd/system/executor_exporter.service"
install -m 0644 "$work/default" "$root/etc/default/executor_exporter"

"$systemctl" daemon-reload
"$systemctl" enable --now executor_exporter
