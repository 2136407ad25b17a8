#!/bin/sh
# Builds the pod sandbox image of test/kube's node into OUT, an OCI archive
# that `ctr images import` loads: test/kube/pause built static for this
# machine's architecture, packed with umoci (Debian's) as the only file of
# an image whose entrypoint it is, run as 65535 as Kubernetes' pause is.
#
#   scripts/build-pause-image.sh OUT
#
# The image is named by its ref in the archive's index (pause); the test
# imports it under the name containerd's sandbox_image gives.
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 OUT" >&2
	exit 2
fi
out=$1
GO=${GO:-go}
command -v umoci >/dev/null || { echo "umoci is missing: scripts/install-test-deps.sh installs it" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 $GO build -trimpath -ldflags '-s -w' -o "$work/pause" ./test/kube/pause

umoci init --layout "$work/oci"
umoci new --image "$work/oci:pause"
umoci unpack --image "$work/oci:pause" "$work/bundle"
install -m 0755 "$work/pause" "$work/bundle/rootfs/pause"
umoci repack --image "$work/oci:pause" "$work/bundle"
umoci config --image "$work/oci:pause" --os linux --architecture "$($GO env GOARCH)" \
	--config.entrypoint /pause --config.user 65535:65535 --no-history
umoci gc --layout "$work/oci"
mkdir -p "$(dirname "$out")"
tar -C "$work/oci" -cf "$out.tmp" .
mv "$out.tmp" "$out"
