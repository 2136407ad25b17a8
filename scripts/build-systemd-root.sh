#!/bin/sh
# Builds a Debian root with Debian's systemd into OUT, for test/systemd: the
# tests boot it with `systemd-nspawn --boot --volatile=overlay` (the root is
# never written: each boot's changes go to a tmpfs) and install the release
# archive's unit into it.
#
#   scripts/build-systemd-root.sh OUT SUITE
#
# The packages come from the mirror this machine's apt uses for SUITE.
# debootstrap's minbase variant (apt, dpkg, coreutils, util-linux, passwd)
# plus systemd as init and dbus, for systemctl and systemd-analyze. The JDK
# is not installed: the tests bind the host's (the same Debian release's)
# read-only. The Makefile keys the cache by this file's checksum.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 OUT SUITE" >&2
	exit 2
fi
out=$1 suite=$2

command -v debootstrap >/dev/null || { echo "debootstrap is missing: scripts/install-test-deps.sh installs it" >&2; exit 1; }
mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Created-By: Packages' "Release: $suite" | head -n 1)
[ -n "$mirror" ] || { echo "apt has no source for $suite: run apt-get update" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
work=$(mktemp -d "$out.build.XXXXXX")
trap 'rm -rf "$work"' EXIT

nice -n 10 debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus "$suite" "$work/root" "$mirror"

# An empty machine-id: systemd makes one at each boot, as on a new VM.
: >"$work/root/etc/machine-id"
echo node >"$work/root/etc/hostname"
# Nothing to log in to, nothing to sync: a quiet boot.
chroot "$work/root" systemctl mask console-getty.service getty@.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer >/dev/null 2>&1 || true
rm -rf "$work/root/var/cache/apt/archives"/*.deb "$work/root/var/lib/apt/lists"/*_Packages

# Last: its presence means the root is complete.
rm -rf "$out"
mv "$work/root" "$out"
