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

.PHONY: all build run test test-unit test-deps check-metrics fmt vet lint fuzz mixin mixin-check demo clean

all: fmt vet build test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/executor_exporter

# Runs on any Linux machine: no cloud, no Kubernetes, no JVM needed.
run: build
	./$(BIN) --web.listen-address=$(LISTEN)

# Everything CI checks: Debian test dependencies, formatting, vet, the
# mixin's generated files and rule tests, and every Go test (unit, fuzz
# seeds, real JVMs, real OOM kill, real Prometheus + Alertmanager) with -race.
test: test-deps fmt-check vet build mixin-check
	mkdir -p $(ARTIFACTS)
	EXPORTER_BIN=$(PREFIX)/$(BIN) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -artifacts -outputdir $(ARTIFACTS) ./...

# Unit tests only: no binary, no root, no packages to install.
test-unit:
	$(GO) test -race -count=1 -short ./internal/... ./collector/... ./cmd/...

test-deps:
	./scripts/install-test-deps.sh

check-metrics: build
	./scripts/check-metrics.sh ./$(BIN)

fmt:
	$(GOFMT) -w $$(git ls-files '*.go')

fmt-check:
	@out=$$($(GOFMT) -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

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

# The mixin's formatting, lint, freshness of generated/ and dashboards/, and
# promtool rule tests.
mixin-check:
	$(MAKE) -C mixin check

demo: build
	./deploy/prometheus/demo.sh

clean:
	rm -f $(BIN)
