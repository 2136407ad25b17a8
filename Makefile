# executor_exporter. `make run` runs it on this machine; `make test` runs
# every test, as CI does (.ci/run).

GO          ?= go
GOFMT       ?= gofmt
PREFIX      ?= $(shell pwd)
BIN         := executor_exporter
PKG         := github.com/executor-exporter/executor_exporter
VERSION     ?= $(shell cat VERSION 2>/dev/null || echo 0.0.0)
REVISION    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH      ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
BUILD_USER  ?= $(shell whoami)@$(shell hostname)
BUILD_DATE  ?= $(shell date -u +%Y%m%d-%H:%M:%S)
LISTEN      ?= :9482
GOLANGCI_LINT_VERSION ?= v2.15.0

# The same -X flags .promu.yml gives promu, so `make build` and a release
# build report the same executor_exporter_build_info.
VERSION_PKG := github.com/prometheus/common/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) \
           -X $(VERSION_PKG).Revision=$(REVISION) \
           -X $(VERSION_PKG).Branch=$(BRANCH) \
           -X $(VERSION_PKG).BuildUser=$(BUILD_USER) \
           -X $(VERSION_PKG).BuildDate=$(BUILD_DATE)

# Real-JVM, real-OOM and real-Prometheus tests take minutes; bound a hang.
TEST_TIMEOUT ?= 30m
# Tests save what a person should look at (the status page's screenshot)
# under $(ARTIFACTS)/_artifacts, one directory per test.
ARTIFACTS   ?= $(PREFIX)/.artifacts

# Prometheus 3, as users run it today, beside Debian's 2.x: promtool for the
# rule lint and tests, the server for the live tests and the scenarios.
# Built from the Go module at a pinned version (v0.316.0 is Prometheus
# 3.16) into a cache outside the repository, once.
PROMETHEUS3_VERSION ?= v0.316.0
TOOLS_DIR   ?= $(HOME)/.cache/executor_exporter
PROMETHEUS3_DIR := $(TOOLS_DIR)/prometheus-$(PROMETHEUS3_VERSION)
PROMETHEUS3 := $(PROMETHEUS3_DIR)/prometheus
PROMTOOL3   := $(PROMETHEUS3_DIR)/promtool

# helm, for the chart's lint and renders (deploy/helm_test.go): built from
# its Go module at a pinned version into the same cache, once; about 5
# minutes cold.
HELM_VERSION ?= v4.3.1
HELM_DIR := $(TOOLS_DIR)/helm-$(HELM_VERSION)
HELM     := $(HELM_DIR)/helm

# An OpenTelemetry Collector with the prometheus receiver and the OTLP/HTTP
# exporter, for test/otel: built by the OpenTelemetry Collector Builder from
# test/otel/builder.yaml (every component at the builder's version) into the
# cache, once per version and manifest; cold, about 6 minutes of CPU (12 on
# two cores shared with another build).
OTELCOL_VERSION ?= v0.165.0
OTELCOL_DIR := $(TOOLS_DIR)/otelcol-$(OTELCOL_VERSION)-$(shell sha256sum test/otel/builder.yaml 2>/dev/null | cut -c1-12)
OTELCOL     := $(OTELCOL_DIR)/build/otelcol-executor

# A real Kubernetes API server for test/kube: kube-apiserver and kubectl from
# k8s.io/kubernetes with its staging modules at their published versions,
# etcd, and prometheus-operator's CRDs, by scripts/build-kube.sh from pinned
# modules into the cache, once: 13 minutes cold on two cores shared with other
# builds (8 minutes of CPU); nothing to do once cached.
KUBE_VERSION         ?= v1.37.2
KUBE_STAGING_VERSION ?= v0.37.2
ETCD_VERSION         ?= v3.7.3
PROMETHEUS_OPERATOR_VERSION ?= v0.85.0
KUBE_DIR := $(TOOLS_DIR)/kube-$(KUBE_VERSION)-etcd-$(ETCD_VERSION)-promop-$(PROMETHEUS_OPERATOR_VERSION)

.PHONY: all build run test test-unit test-vm test-deps check-metrics fmt vet lint fuzz mixin mixin-check mixin-linters prometheus3 helm otelcol kube systemd-root test-systemd kubelet pause-image scenarios fleet demo clean
.PHONY: release-tools release release-check-tag image image-archive image-push chart-package chart-push registry-login github-release lint-workflows

all: fmt vet build test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/executor_exporter

# Runs on any Linux machine: no cloud, no Kubernetes, no JVM needed.
run: build
	./$(BIN) --web.listen-address=$(LISTEN)

# Everything CI checks: Debian test dependencies, formatting, vet, the
# mixin's generated files and rule tests, and every Go test (unit, fuzz
# seeds, real JVMs, real OOM kill, real Prometheus + Alertmanager) with -race.
test: test-deps fmt-check vet build prometheus3 helm otelcol kube kubelet pause-image mixin-check lint-workflows release image systemd-root
	mkdir -p $(ARTIFACTS)
	EXPORTER_BIN=$(PREFIX)/$(BIN) PROMETHEUS3=$(PROMETHEUS3) HELM=$(HELM) OTELCOL=$(OTELCOL) KUBE_DIR=$(KUBE_DIR) \
	  $(RELEASE_TEST_ENV) $(NODE_TEST_ENV) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -artifacts -outputdir $(ARTIFACTS) ./...

# Unit tests only: no binary, no root, no packages to install.
test-unit:
	$(GO) test -race -count=1 -short ./internal/... ./collector/... ./cmd/...

# The VM tests alone (test/vm, also part of `make test`): Debian's kernel
# under qemu with cgroup v2, real JVMs, container and machine-wide OOM
# kills; a few minutes without KVM (docs/testing-kernels.md).
test-vm: test-deps build
	mkdir -p $(ARTIFACTS)
	$(GO) vet -tags vmguest ./test/vm/...
	EXPORTER_BIN=$(PREFIX)/$(BIN) TOOLS_DIR=$(TOOLS_DIR) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -artifacts -outputdir $(ARTIFACTS) -v ./test/vm/

test-deps:
	./scripts/install-test-deps.sh

check-metrics: build
	./scripts/check-metrics.sh ./$(BIN)

fmt:
	$(GOFMT) -w $$(git ls-files '*.go')

fmt-check:
	@out=$$($(GOFMT) -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# Linux-only code is in _linux.go files and the parsers under internal/
# build anywhere; vetting internal/ for another system keeps it so.
vet:
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./internal/...
	cd tools && $(GO) vet ./...

# golangci-lint is not vendored; `go run` fetches the pinned version.
lint: vet
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...

# Every fuzz target for FUZZTIME each. `make test` runs their seeds (f.Add)
# and the inputs that once failed (testdata/fuzz) as ordinary tests; a new
# failing input lands in testdata/fuzz: commit it with the fix.
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

mixin:
	$(MAKE) -C mixin generate

# The mixin's formatting, lint, freshness of generated/ and dashboards/,
# promtool's rule checks and tests, with Debian's promtool and Prometheus 3's
# (--lint=all --lint-fatal), and pint (below).
mixin-check: prometheus3 mixin-linters
	$(MAKE) -C mixin check PROMTOOL3=$(PROMTOOL3) PINT=$(PINT)

# ---- The community's mixin linters -------------------------------------
# pint, for `make mixin-check`: built from its Go module at a pinned version
# into the tools cache, once. The Go module proxy serves this version but
# lists none, and `go install module@version` refuses a module whose list
# it cannot read (it looks for a deprecation notice there), so it is built
# in a module of its own in the cache that requires it; its dependencies are
# at the versions of pint's own go.mod. Cold (empty module and build caches):
# 264 s of CPU (201 s user, 63 s sys), 18.5 min of wall clock on two cores
# shared with four other builds. The other two linters cannot be built from
# the proxy: mixtool is served at no version (deploy/mixin_guidelines_test.go
# applies its alert rules), grafana's dashboard-linter v0.2.0 imports a
# Grafana module the proxy refuses (mixin/README.md).
PINT_VERSION ?= v0.87.0
PINT_DIR     := $(TOOLS_DIR)/pint-$(PINT_VERSION)
PINT         := $(PINT_DIR)/pint

mixin-linters: $(PINT)

$(PINT):
	mkdir -p $(PINT_DIR)/src
	printf 'module tools\n\ngo 1.26\n\nrequire github.com/cloudflare/pint $(PINT_VERSION)\n' >$(PINT_DIR)/src/go.mod
	cd $(PINT_DIR)/src && GOFLAGS=-mod=mod nice -n 10 $(GO) build -trimpath -o $(PINT).tmp github.com/cloudflare/pint/cmd/pint
	mv $(PINT).tmp $(PINT)
# ---- end of the community's mixin linters -------------------------------

prometheus3: $(PROMETHEUS3) $(PROMTOOL3)

$(PROMETHEUS3) $(PROMTOOL3) &:
	GOBIN=$(PROMETHEUS3_DIR) GOFLAGS=-mod=mod $(GO) install \
	  github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS3_VERSION) \
	  github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS3_VERSION)

helm: $(HELM)

$(HELM):
	GOBIN=$(HELM_DIR) GOFLAGS=-mod=mod $(GO) install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

otelcol: $(OTELCOL)

# The builder writes its own Go module (go.mod, sources) beside the binary,
# in the cache: the repository's go.mod is untouched.
$(OTELCOL):
	GOBIN=$(OTELCOL_DIR) GOFLAGS=-mod=mod $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OTELCOL_VERSION)
	cd $(OTELCOL_DIR) && nice -n 10 ./builder --config=$(PREFIX)/test/otel/builder.yaml

kube: $(KUBE_DIR)/kube-apiserver

# The script writes kube-apiserver last: its presence means the rest is
# there. The directory is named after every pinned version.
$(KUBE_DIR)/kube-apiserver:
	GO=$(GO) ./scripts/build-kube.sh $(KUBE_DIR) $(KUBE_VERSION) $(KUBE_STAGING_VERSION) $(ETCD_VERSION) $(PROMETHEUS_OPERATOR_VERSION)

##### Release: archives, image, publishing (docs/releasing.md) #####
# promu, crane and actionlint at the versions tools/go.mod pins (its `tool`
# lines), and tools/ociimage, which writes the image with
# go-containerregistry: built from that module into the cache, in a
# directory named after its contents; cold, with the downloads, 2 min 50 s
# of CPU (25 minutes on two cores shared with five other builds).
RELEASE_TOOLS_DIR := $(TOOLS_DIR)/release-tools-$(shell cat tools/go.mod tools/go.sum tools/ociimage/*.go 2>/dev/null | sha256sum | cut -c1-12)
PROMU      := $(RELEASE_TOOLS_DIR)/promu
CRANE      := $(RELEASE_TOOLS_DIR)/crane
ACTIONLINT := $(RELEASE_TOOLS_DIR)/actionlint
OCIIMAGE   := $(RELEASE_TOOLS_DIR)/ociimage

# The commit's time: every date in a release build (the binaries' build
# date, the image's timestamps), so one commit gives the same image.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_NAME  ?= ghcr.io/executor-exporter/executor_exporter
IMAGE_TAG   ?= v$(VERSION)
OCI_ARCHIVE ?= .tarballs/$(BIN)-$(VERSION).oci.tar
# Where image-push and chart-push publish: $(REGISTRY)/executor_exporter
# and oci://$(REGISTRY)/charts. HELM_PUSH_FLAGS=--plain-http for a local
# registry over HTTP (crane speaks HTTP to 127.0.0.1 and localhost itself).
REGISTRY    ?= ghcr.io/executor-exporter
HELM_PUSH_FLAGS ?=
CHART_DIR     := deploy/helm/executor-exporter
CHART_PACKAGE := .tarballs/executor-exporter-$(VERSION).tgz
RELEASE_ARCHIVES := $(foreach p,$(RELEASE_PLATFORMS),.tarballs/$(BIN)-$(VERSION).$(subst /,-,$(p)).tar.gz)
# What the GitHub release carries; DRY_RUN=1 lists it instead of uploading.
GITHUB_RELEASE_FILES := $(RELEASE_ARCHIVES) .tarballs/sha256sums.txt
DRY_RUN ?=
# What `make test` hands test/release and deploy/yarn_test.go.
RELEASE_TEST_ENV = RELEASE_DIR=$(PREFIX)/.tarballs OCI_ARCHIVE=$(abspath $(OCI_ARCHIVE)) CRANE=$(CRANE) \
  TOOLS_DIR=$(TOOLS_DIR) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH)

# promu names the archives after the git remote's repository; a clone of a
# clone, a worktree or a fork would name them otherwise. Its git commands
# see the project's URL as origin's, and origin as the branch's remote.
PROMU_ENV := GIT_CONFIG_COUNT=2 \
  GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/executor-exporter/executor_exporter \
  GIT_CONFIG_KEY_1=branch.$(BRANCH).remote GIT_CONFIG_VALUE_1=origin

release-tools: $(OCIIMAGE)

$(OCIIMAGE):
	cd tools && GOBIN=$(RELEASE_TOOLS_DIR) $(GO) install tool ./ociimage

# promu builds each platform without Docker (its crossbuild runs in
# containers), then makes the archives and sha256sums.txt as a crossbuild
# would: .tarballs/executor_exporter-$(VERSION).linux-<arch>.tar.gz. Starts
# .build and .tarballs afresh.
release: release-tools
	rm -rf .build .tarballs
	@set -e; for p in $(RELEASE_PLATFORMS); do \
	  echo ">> promu build $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(PROMU_ENV) $(PROMU) build --prefix .build/$${p%/*}-$${p#*/}; \
	done
	$(PROMU_ENV) $(PROMU) crossbuild tarballs
	$(PROMU_ENV) $(PROMU) checksum .tarballs

# The multi-arch image of the binaries `make release` built, as an OCI
# archive (tools/ociimage); image-archive alone rewrites it from .build.
image: release
	$(MAKE) image-archive

image-archive: release-tools
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(OCIIMAGE) -name $(IMAGE_NAME):$(IMAGE_TAG) \
	  $(foreach p,$(RELEASE_PLATFORMS),-binary $(p)=.build/$(subst /,-,$(p))/$(BIN)) \
	  -label org.opencontainers.image.title=$(BIN) \
	  -label org.opencontainers.image.description="Prometheus exporter for JVM / Spark executor memory, cloud identity and OOM kills" \
	  -label org.opencontainers.image.source=https://github.com/executor-exporter/executor_exporter \
	  -label org.opencontainers.image.version=$(VERSION) \
	  -label org.opencontainers.image.revision=$(REVISION) \
	  -label org.opencontainers.image.licenses=Apache-2.0 \
	  -o $(OCI_ARCHIVE)

# Pushes the OCI archive's index, both platforms, as
# $(REGISTRY)/executor_exporter:$(IMAGE_TAG), with the credentials in
# ~/.docker/config.json.
image-push: release-tools
	@test -f $(OCI_ARCHIVE) || { echo "$(OCI_ARCHIVE) missing: run make image" >&2; exit 1; }
	dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && tar -xf $(OCI_ARCHIVE) -C "$$dir" && \
	  $(CRANE) push "$$dir" $(REGISTRY)/executor_exporter:$(IMAGE_TAG)

# The chart, versioned as the release (chart and appVersion: the image tag
# follows), into .tarballs.
chart-package: helm
	mkdir -p .tarballs
	$(HELM) package $(CHART_DIR) --version $(VERSION) --app-version $(VERSION) --destination .tarballs

chart-push: helm
	@test -f $(CHART_PACKAGE) || { echo "$(CHART_PACKAGE) missing: run make chart-package" >&2; exit 1; }
	$(HELM) push $(CHART_PACKAGE) oci://$(REGISTRY)/charts $(HELM_PUSH_FLAGS)

# The release workflow's tag must be the VERSION file's.
release-check-tag:
	@test "$(TAG)" = "v$(VERSION)" || { echo "tag $(TAG) is not v$(VERSION) (the VERSION file): bump VERSION or tag v$(VERSION)" >&2; exit 1; }

# Stores REGISTRY_USER's REGISTRY_PASSWORD for $(REGISTRY)'s host, where
# crane (~/.docker/config.json) and helm (its registry config) read it;
# helm logs in, over HTTPS (HELM_LOGIN_FLAGS=--insecure: any certificate).
REGISTRY_HOST = $(firstword $(subst /, ,$(REGISTRY)))
HELM_LOGIN_FLAGS ?=
registry-login: release-tools helm
	@test -n "$$REGISTRY_USER" && test -n "$$REGISTRY_PASSWORD" || { echo "REGISTRY_USER and REGISTRY_PASSWORD must be set" >&2; exit 1; }
	@printf '%s' "$$REGISTRY_PASSWORD" | $(CRANE) auth login $(REGISTRY_HOST) -u "$$REGISTRY_USER" --password-stdin
	@printf '%s' "$$REGISTRY_PASSWORD" | $(HELM) registry login $(REGISTRY_HOST) -u "$$REGISTRY_USER" --password-stdin $(HELM_LOGIN_FLAGS)

# The GitHub release of tag v$(VERSION) with the archives and
# sha256sums.txt, by GitHub's CLI (gh: Debian's package in the workflow;
# GH_TOKEN).
github-release:
	@for f in $(GITHUB_RELEASE_FILES); do test -f $$f || { echo "$$f missing: run make release" >&2; exit 1; }; done
	@if [ -n "$(DRY_RUN)" ]; then printf '%s\n' $(GITHUB_RELEASE_FILES); else \
	  gh release create v$(VERSION) --verify-tag --title "executor_exporter $(VERSION)" --generate-notes $(GITHUB_RELEASE_FILES); fi

# The workflows under .github/workflows, with shellcheck for their run:
# scripts when it is installed (scripts/install-test-deps.sh installs it).
lint-workflows: release-tools
	$(ACTIONLINT) -no-color
##### end of release #####

##### Where users run it: the unit under Debian's systemd (test/systemd) #####
# A Debian root with Debian's systemd, which test/systemd boots with
# systemd-nspawn (Debian's systemd-container) and installs the release
# archive into: debootstrap from the mirror apt uses, into the cache, once
# per suite and version of the script. Cold: about 2 minutes of CPU, 155
# MiB; 5.5 and 27 minutes measured on two cores shared with other builds
# (load 18 and 38).
SYSTEMD_ROOT_SUITE ?= bookworm
SYSTEMD_ROOT := $(TOOLS_DIR)/debian-$(SYSTEMD_ROOT_SUITE)-systemd-$(shell sha256sum scripts/build-systemd-root.sh 2>/dev/null | cut -c1-12)
# The release archive of this machine's architecture.
RELEASE_ARCHIVE := $(PREFIX)/.tarballs/$(BIN)-$(VERSION).linux-$(shell $(GO) env GOARCH).tar.gz

systemd-root: $(SYSTEMD_ROOT)/etc/os-release

# The script moves the root into place last: its presence means it is whole.
$(SYSTEMD_ROOT)/etc/os-release:
	./scripts/build-systemd-root.sh $(SYSTEMD_ROOT) $(SYSTEMD_ROOT_SUITE)

# What `make test` hands test/systemd (and test-systemd).
NODE_TEST_ENV = SYSTEMD_ROOT=$(SYSTEMD_ROOT) RELEASE_ARCHIVE=$(RELEASE_ARCHIVE) KUBELET=$(KUBELET) PAUSE_IMAGE=$(PAUSE_IMAGE)

# test/systemd alone (also part of `make test`).
test-systemd: test-deps systemd-root release
	mkdir -p $(ARTIFACTS)
	$(NODE_TEST_ENV) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -v ./test/systemd/
##### end of where users run it #####

##### Where users run it: a real node for test/kube (TestRealNode) #####
# The kubelet of test/kube's node (node_linux_test.go), registered with the
# suite's API server, running pods with Debian's containerd 1.6 and runc on
# this machine's cgroup v1. Not KUBE_VERSION's: from 1.35 the kubelet
# refuses cgroup v1 unless failCgroupV1 is false, and 1.35 is the last to
# support containerd 1.x; the version skew policy allows a kubelet three
# minors older than the API server. (The VM of test/vm has cgroup v2, but
# runs without KVM here: too slow for a node.) Built from k8s.io/kubernetes
# by scripts/build-kube.sh into the cache, once: 17 minutes of CPU cold.
KUBELET_VERSION         ?= v1.35.4
KUBELET_STAGING_VERSION ?= v0.35.4
KUBELET := $(TOOLS_DIR)/kubelet-$(KUBELET_VERSION)/kubelet
# The pod sandbox image (test/kube/pause packed by umoci), an OCI archive
# named after its sources.
PAUSE_IMAGE := $(TOOLS_DIR)/pause-$(shell cat test/kube/pause/main.go scripts/build-pause-image.sh 2>/dev/null | sha256sum | cut -c1-12).oci.tar

kubelet: $(KUBELET)

$(KUBELET):
	GO=$(GO) ./scripts/build-kube.sh kubelet $(dir $(KUBELET)) $(KUBELET_VERSION) $(KUBELET_STAGING_VERSION)

pause-image: $(PAUSE_IMAGE)

$(PAUSE_IMAGE):
	GO=$(GO) ./scripts/build-pause-image.sh $(PAUSE_IMAGE)
##### end of a real node #####

# The alert scenarios (test/e2e/scenarios_test.go): real JVMs in memory
# cgroups, the exporter, Prometheus 3 with the shipped rules, Alertmanager;
# about 15 minutes. Writes the results table, mixin/scenarios.md.
scenarios: test-deps build prometheus3
	SCENARIOS=all SCENARIOS_REPORT=$(PREFIX)/mixin/scenarios.md EXPORTER_BIN=$(PREFIX)/$(BIN) PROMETHEUS3=$(PROMETHEUS3) \
	  $(GO) test -race -count=1 -parallel 16 -timeout 40m -run '^TestScenario(s|YARNPmemBudgetAlert)$$' -v ./test/e2e/

# A simulated fleet of NODES nodes (internal/fleetsim, served from one
# process) with 6 h of history, scraped by Prometheus 3 with the mixin's
# rules and alerts and measured: head series, samples/s, memory, each rule
# group's evaluation time, each dashboard query over 1 h and 6 h
# (test/fleet/measure_test.go). The report goes to FLEET_REPORT; the
# figures are in docs/cardinality.md. 1,000 nodes take about an hour.
NODES ?= 100
FLEET_REPORT ?= $(ARTIFACTS)/fleet-$(NODES).md
fleet: prometheus3
	mkdir -p $(ARTIFACTS)
	FLEET_NODES=$(NODES) FLEET_REPORT=$(FLEET_REPORT) PROMETHEUS3=$(PROMETHEUS3) \
	  $(GO) test -count=1 -timeout 4h -run '^TestFleetMeasure$$' -v ./test/fleet/

demo: build
	./deploy/prometheus/demo.sh

clean:
	rm -rf $(BIN) .build .tarballs
