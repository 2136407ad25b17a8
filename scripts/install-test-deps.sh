#!/usr/bin/env bash
# Installs what the tests run for real, from Debian's packages, when it is
# missing: promtool + prometheus, alertmanager, the JDK's java/javac/jstat,
# kubectl, chromium, what the VM tests (test/vm) boot a kernel with, and
# what the release tests (test/release) run the image with, what
# test/kube's node runs pods with, and what test/systemd boots Debian's
# systemd with.
# CI machines are fresh, so the package lists are updated first.
set -euo pipefail

need=()
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v jstat >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
# The alert scenarios' node: a memory cgroup that LXCFS shows the exporter
# as the machine's /proc/meminfo.
command -v lxcfs >/dev/null 2>&1 || need+=(lxcfs)
# The manifest tests render kustomize and dry-run the result with kubectl;
# Debian's own client (1.20) does both when the machine has no newer one.
command -v kubectl >/dev/null 2>&1 || need+=(kubernetes-client)
# The status page test opens / in a real headless browser.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# The VM tests boot Debian's kernel under qemu (its package is fetched by
# the tests themselves, with apt-get download) with a busybox initramfs:
# the busybox must be static, as nothing else is in the initramfs.
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
# The release tests run the built image with runc (no daemon); the image
# holds Debian's CA bundle; actionlint checks the workflows' run: scripts
# with shellcheck.
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)

# test/kube's node: Debian's containerd (with ctr and the runc shim) under
# the kubelet, and umoci to pack the pod sandbox image.
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v umoci >/dev/null 2>&1 || need+=(umoci)

# test/systemd builds a Debian root with debootstrap and boots its systemd
# with systemd-nspawn.
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)

if [ ${#need[@]} -eq 0 ]; then
  echo "test dependencies: all present"
  exit 0
fi
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
if [ "$(id -u)" -ne 0 ]; then
  echo "missing ${need[*]}: run this script as root (apt-get install)" >&2
  exit 1
fi
echo "installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
