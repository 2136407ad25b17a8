#!/bin/sh
# Builds kube-apiserver, kubectl and etcd from pinned Go modules on the module
# proxy into OUT, and copies prometheus-operator's CustomResourceDefinitions
# from its module into OUT/crds, for test/kube; or, with `kubelet` first,
# the kubelet alone, of its own version, for test/kube's node. Nothing from
# those repositories is kept in this one: a throwaway go.mod is written under
# OUT and removed after.
#
#   scripts/build-kube.sh OUT KUBE_VERSION STAGING_VERSION ETCD_VERSION PROMETHEUS_OPERATOR_VERSION
#   scripts/build-kube.sh kubelet OUT KUBELET_VERSION STAGING_VERSION
#
# k8s.io/kubernetes is not meant to be a dependency: its go.mod replaces each
# staging module (k8s.io/api, k8s.io/apiserver, ...) with a directory of its
# own tree, requires them at v0.0.0, and replace directives of a dependency
# are ignored. The build module replaces each of them with the version
# published from the same release (v1.37.2 -> v0.37.2), read from
# kubernetes' own go.mod so a new staging module needs no edit here.
#
# kube-apiserver is the slow one: about 7 minutes on two cores, cold. etcd is
# a module of its own (its version apart from the one kubernetes' client
# requires), built in a second throwaway module. The kubelet is a second
# build of k8s.io/kubernetes at another version: none of it is shared with
# the first but the third-party modules both pin alike.
set -eu

GO=${GO:-go}
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0

# kubemodule DIR KUBE STAGING writes a module in DIR requiring
# k8s.io/kubernetes@KUBE with its staging modules at STAGING, and sets
# goline and ldflags.
kubemodule() {
	# kubernetes' go.mod, from the module cache.
	kubemod=$($GO mod download -json "k8s.io/kubernetes@$2" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[ -s "$kubemod" ] || { echo "no go.mod for k8s.io/kubernetes@$2" >&2; exit 1; }
	replaces=$(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*#\1#p' "$kubemod" | sort -u)
	[ -n "$replaces" ] || { echo "no staging replaces in $kubemod" >&2; exit 1; }
	goline=$(sed -n 's/^go \(.*\)$/\1/p' "$kubemod")
	mkdir -p "$1"
	{
		echo "module kubebuild"
		echo
		echo "go $goline"
		echo
		echo "require k8s.io/kubernetes $2"
		echo
		for m in $replaces; do echo "replace $m => $m $3"; done
	} >"$1/go.mod"
	# Versions reported by --version, as release builds set them.
	kv=k8s.io/component-base/version
	ldflags="-s -w -X $kv.gitVersion=$2 -X $kv.gitMajor=$(echo "$2" | sed 's/^v\([0-9]*\).*/\1/') -X $kv.gitMinor=$(echo "$2" | sed 's/^v[0-9]*\.\([0-9]*\).*/\1/') -X $kv.gitTreeState=clean"
}

if [ $# -eq 4 ] && [ "$1" = kubelet ]; then
	out=$2
	mkdir -p "$out"
	work=$(mktemp -d "$out/build.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	kubemodule "$work/kube" "$3" "$4"
	(
		cd "$work/kube"
		$GO mod download k8s.io/kubernetes
		nice -n 10 $GO build -trimpath -ldflags "$ldflags" -o "$work/kubelet.bin" k8s.io/kubernetes/cmd/kubelet
	)
	mv "$work/kubelet.bin" "$out/kubelet"
	exit 0
fi

if [ $# -ne 5 ]; then
	echo "usage: $0 OUT KUBE_VERSION STAGING_VERSION ETCD_VERSION PROMETHEUS_OPERATOR_VERSION" >&2
	echo "       $0 kubelet OUT KUBELET_VERSION STAGING_VERSION" >&2
	exit 2
fi
out=$1 kube=$2 staging=$3 etcd=$4 promop=$5

mkdir -p "$out"
work=$(mktemp -d "$out/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

kubemodule "$work/kube" "$kube" "$staging"
mkdir "$work/etcd"
printf 'module etcdbuild\n\ngo %s\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$goline" "$etcd" >"$work/etcd/go.mod"

(
	cd "$work/etcd"
	$GO mod download go.etcd.io/etcd/server/v3
	nice -n 10 $GO build -trimpath -ldflags '-s -w' -o "$work/etcd.bin" go.etcd.io/etcd/server/v3
)
(
	cd "$work/kube"
	$GO mod download k8s.io/kubernetes
	nice -n 10 $GO build -trimpath -ldflags "$ldflags" -o "$work/kube-apiserver.bin" k8s.io/kubernetes/cmd/kube-apiserver
	nice -n 10 $GO build -trimpath -ldflags "$ldflags" -o "$work/kubectl.bin" k8s.io/kubernetes/cmd/kubectl
)
# The CRDs as the operator's release ships them (example/prometheus-operator-crd).
promopdir=$($GO mod download -json "github.com/prometheus-operator/prometheus-operator@$promop" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$promopdir/example/prometheus-operator-crd" ] || { echo "no CRDs in github.com/prometheus-operator/prometheus-operator@$promop" >&2; exit 1; }
mkdir "$work/crds"
cp "$promopdir"/example/prometheus-operator-crd/*.yaml "$work/crds/"
chmod -R u+w "$work/crds"
rm -rf "$out/crds"
mv "$work/crds" "$out/crds"
# Last, so an interrupted build leaves no binary that make would take as done.
mv "$work/etcd.bin" "$out/etcd"
mv "$work/kubectl.bin" "$out/kubectl"
mv "$work/kube-apiserver.bin" "$out/kube-apiserver"
