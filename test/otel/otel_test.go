package otel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// job is the scrape job's name in the collector's configuration.
const job = "executor_exporter"

// receiverScope is the instrumentation scope the prometheus receiver puts
// every metric under.
const receiverScope = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"

// standIn is a stand-in executor the test runs.
type standIn struct {
	app, executor, pod string
	jvm                *testjvm.JVM
}

func (s standIn) pid() string { return strconv.Itoa(s.jvm.PID) }

// TestCollector scrapes the exporter, watching two stand-in executors (one
// in a Kubernetes-like cgroup, one in a YARN container's), through the
// OpenTelemetry Collector's prometheus receiver, and reads what the
// collector sends on as OTLP: the resource it makes of the target, sums
// for counters, the executor_jvm_info join, staleness when a JVM ends, and
// every executor_ family and label of a scrape.
func TestCollector(t *testing.T) {
	testjvm.RequireJava(t)
	collectorBinary(t)
	testenv.RequireRoot(t)

	// Cgroups whose paths name a pod and its container, and a YARN
	// container: the exporter's uid, container_id and container labels.
	base := testenv.NewMemoryCgroup(t, 2<<30)
	const podUID = "6b1f3c2e-5a4d-4e8f-9b0a-1c2d3e4f5a6b"
	const containerID = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
	const yarnContainer = "container_e01_1764300000000_0002_01_000002"
	kube := base.Child(t, "kubepods", 1<<30).Child(t, "burstable", 1<<30).
		Child(t, "pod"+podUID, 1<<30).Child(t, containerID, 512<<20)
	yarn := base.Child(t, "hadoop-yarn", 1<<30).Child(t, yarnContainer, 512<<20)

	a := standIn{app: "app-20261128000000-0001", executor: "1", pod: "spark-pi-exec-1"}
	b := standIn{app: "application_1764300000000_0002", executor: "2"}
	for _, s := range []struct {
		x      *standIn
		cgroup string
	}{{&a, kube.Procs()}, {&b, yarn.Procs()}} {
		prelude := ""
		if s.x.pod != "" {
			prelude = "export SPARK_EXECUTOR_POD_NAME=" + s.x.pod + "; "
		}
		s.x.jvm = testjvm.Start(t, testjvm.Options{
			JVMArgs: []string{"-Xmx64m", "-XX:+UseG1GC"},
			Args:    []string{"--executor-id", s.x.executor, "--app-id", s.x.app, "--heap-mb", "8", "--exit-after-s", "900"},
			Cgroup:  s.cgroup,
			Prelude: prelude,
		})
	}

	addr := startExporter(t, "--cloud.provider=none", "--jvm.sample-interval=1s", "--jvm.discovery-interval=1s")
	seen := map[string]*dto.MetricFamily{} // every family of every direct scrape
	direct := func(t testing.TB) map[string]*dto.MetricFamily {
		families := scrape(t, addr)
		for name, mf := range families {
			seen[name] = mf
		}
		return families
	}
	testenv.WaitFor(t, 60*time.Second, "the exporter to report both JVMs", func() bool {
		families := direct(t)
		return hasSeries(families, "executor_jvm_info", map[string]string{"pid": a.pid(), "pod": a.pod, "uid": podUID}) &&
			hasSeries(families, "executor_jvm_info", map[string]string{"pid": b.pid(), "container": yarnContainer})
	})

	sink := newOTLPSink(t)
	startCollector(t, collectorConfig(job, addr, "1s", sink.URL))
	testenv.WaitFor(t, 90*time.Second, "the collector to export both JVMs", func() bool {
		pts := sink.Points()
		return len(find(pts, "executor_jvm_info", map[string]string{"pid": a.pid()})) > 0 &&
			len(find(pts, "executor_jvm_info", map[string]string{"pid": b.pid()})) > 0
	})
	if errs := sink.Errors(); len(errs) > 0 {
		t.Fatalf("the OTLP endpoint refused exports: %v", errs)
	}

	// What came out, for a person to read: the last export as received
	// and one line per metric.
	t.Cleanup(func() { saveOutput(t, sink) })

	_, port := splitHostPort(t, addr)
	t.Run("resource", func(t *testing.T) {
		// No server.address: the receiver leaves out loopback hosts.
		checkResource(t, sink.Points(), map[string]string{
			"service.name":        job,
			"service.instance.id": addr,
			"server.port":         port,
			"url.scheme":          "http",
		})
	})
	// The exporter reports every JVM on the machine, other tests' too:
	// series of those may end at any time, so only ours must be there.
	ours := func(attrs map[string]string) bool {
		pid, ok := attrs["pid"]
		return !ok || pid == a.pid() || pid == b.pid()
	}
	t.Run("counters", func(t *testing.T) { checkCounters(t, sink, direct(t), ours) })
	t.Run("join", func(t *testing.T) { checkJoin(t, sink, addr, a, b) })
	t.Run("staleness", func(t *testing.T) { checkStaleness(t, sink, addr, a, b) })
	t.Run("families", func(t *testing.T) { checkFamilies(t, sink, addr, direct(t), seen, ours, func() { direct(t) }) })
}

// find returns the points of metric name (any, when empty) whose
// attributes include match.
func find(pts []point, name string, match map[string]string) []point {
	var out []point
outer:
	for _, p := range pts {
		if name != "" && p.Name != name {
			continue
		}
		for k, v := range match {
			if p.Attrs[k] != v {
				continue outer
			}
		}
		out = append(out, p)
	}
	return out
}

// hasSeries says whether family name has a series whose labels include
// match.
func hasSeries(families map[string]*dto.MetricFamily, name string, match map[string]string) bool {
outer:
	for _, m := range families[name].GetMetric() {
		l := labelsOf(m)
		for k, v := range match {
			if l[k] != v {
				continue outer
			}
		}
		return true
	}
	return false
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// saveOutput writes the last export (indented OTLP JSON) and a summary of
// every metric that came out, one line each, to the test's artifacts.
func saveOutput(t *testing.T, sink *otlpSink) {
	var last bytes.Buffer
	if err := json.Indent(&last, sink.Last(), "", "  "); err != nil {
		last.Reset()
		last.Write(sink.Last())
	}
	lines := map[string]string{}
	for _, p := range sink.Points() {
		if _, ok := lines[p.Name]; !ok || !p.Stale() {
			lines[p.Name] = fmt.Sprintf("%s\t%s\tunit=%q\ttemporality=%d\tmonotonic=%v\tstart=%d\t%s", p.Name, p.Kind, p.Unit, p.Temporality, p.Monotonic, p.Start, labelsKey(p.Attrs))
		}
	}
	var summary strings.Builder
	for _, name := range slices.Sorted(maps.Keys(lines)) {
		summary.WriteString(lines[name] + "\n")
	}
	dir := t.ArtifactDir()
	for file, data := range map[string][]byte{"otlp-last-export.json": last.Bytes(), "otlp-metrics.tsv": []byte(summary.String())} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Error(err)
		}
	}
}
