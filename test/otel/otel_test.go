package otel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
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

// checkResource: every point is under one resource, made of the scrape
// target as want says, and in the receiver's scope; the receiver adds the
// target's health as up (a Gauge of 1) and scrape_* gauges.
func checkResource(t *testing.T, pts []point, want map[string]string) {
	resources, scopes := map[string]bool{}, map[string]bool{}
	added := map[string]bool{}
	for _, p := range pts {
		resources[labelsKey(p.Resource)] = true
		scopes[p.Scope] = true
		if !strings.HasPrefix(p.Name, "executor_") && p.Kind == kindGauge && (p.Name != "up" || p.Value == 1) {
			added[p.Name] = true
		}
	}
	for _, name := range []string{"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling", "scrape_series_added"} {
		if !added[name] {
			t.Errorf("%s: not in the collector's output (up as 1), as a Gauge", name)
		}
	}
	if len(resources) != 1 || !resources[labelsKey(want)] {
		t.Errorf("resources = %v, want only %s", keys(resources), labelsKey(want))
	}
	if len(scopes) != 1 || !scopes[receiverScope] {
		t.Errorf("scopes = %v, want only %s", keys(scopes), receiverScope)
	}
}

// checkCounters: every counter of the scrape is a monotonic cumulative
// Sum; no series goes down or changes its start time from one export to
// the next; and one that grows (the JVM readings) is seen growing across
// two exports. Only series ours says are the test's own are followed.
func checkCounters(t *testing.T, sink *otlpSink, families map[string]*dto.MetricFamily, ours func(map[string]string) bool) {
	testenv.WaitFor(t, 60*time.Second, "executor_jvm_reads_total to grow across two exports", func() bool {
		var first *point
		for _, p := range find(sink.Points(), "executor_jvm_reads_total", map[string]string{}) {
			switch {
			case p.Stale():
			case first == nil:
				first = &p
			case p.Export != first.Export && p.Time > first.Time && p.Value > first.Value:
				return true
			}
		}
		return false
	})
	pts := sink.Points()
	counters := 0
	for name, mf := range families {
		if !strings.HasPrefix(name, "executor_") || mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		counters++
		// A family only other tests' JVMs have may be newer than the
		// collector's last scrape.
		mine := false
		for _, m := range mf.GetMetric() {
			mine = mine || ours(labelsOf(m))
		}
		series := map[string][]point{}
		for _, p := range pts {
			if p.Name != name {
				continue
			}
			if p.Kind != kindSum || !p.Monotonic || p.Temporality != aggregationCumulative {
				t.Errorf("%s: %s monotonic=%v temporality=%d, want a monotonic cumulative Sum", name, p.Kind, p.Monotonic, p.Temporality)
				break
			}
			if !p.Stale() && ours(p.Attrs) {
				series[p.Key()] = append(series[p.Key()], p)
			}
		}
		if len(series) == 0 && mine {
			t.Errorf("%s: no points", name)
		}
		for key, s := range series {
			sort.SliceStable(s, func(i, j int) bool { return s[i].Time < s[j].Time })
			for i := 1; i < len(s); i++ {
				if s[i].Value < s[i-1].Value {
					t.Errorf("%s: went down from %v to %v", key, s[i-1].Value, s[i].Value)
				}
			}
			// The exporter exposes no _created samples: the receiver
			// sets no start time (docs/opentelemetry.md says so).
			for _, p := range s {
				if p.Start != 0 {
					t.Errorf("%s: start time %d, want none (0)", key, p.Start)
					break
				}
			}
		}
	}
	if counters < 5 {
		t.Errorf("only %d executor_ counters in the scrape", counters)
	}
}

// checkJoin joins executor_jvm_info's app_id, executor_id and pod onto the
// heap series by instance and pid, on one scrape of the collector's output,
// as `* on (instance, pid) group_left (...) executor_jvm_info` does.
func checkJoin(t *testing.T, sink *otlpSink, addr string, jvms ...standIn) {
	pts := sink.Points()
	// The latest scrape that has both series for every JVM.
	type scrapeKey struct {
		instance string
		time     uint64
	}
	info := map[scrapeKey]map[string]point{} // by pid
	heap := map[scrapeKey]map[string]point{}
	for _, p := range pts {
		if p.Stale() {
			continue
		}
		var into map[scrapeKey]map[string]point
		switch {
		case p.Name == "executor_jvm_info":
			into = info
		case p.Name == "executor_jvm_memory_max_bytes" && p.Attrs["area"] == "heap":
			into = heap
		default:
			continue
		}
		k := scrapeKey{p.Resource["service.instance.id"], p.Time}
		if into[k] == nil {
			into[k] = map[string]point{}
		}
		into[k][p.Attrs["pid"]] = p
	}
	var at *scrapeKey
	for k, byPID := range heap {
		complete := info[k] != nil
		for _, j := range jvms {
			_, h := byPID[j.pid()]
			_, i := info[k][j.pid()]
			complete = complete && h && i
		}
		if complete && (at == nil || k.time > at.time) {
			at = &k
		}
	}
	if at == nil {
		t.Fatalf("no scrape in the collector's output has executor_jvm_info and the heap max of every JVM")
	}
	if at.instance != addr {
		t.Errorf("service.instance.id = %q, want the target %q", at.instance, addr)
	}
	for _, j := range jvms {
		h, i := heap[*at][j.pid()], info[*at][j.pid()]
		// The join's result: the heap series with the info's labels.
		joined := map[string]string{"heap": fmt.Sprint(h.Value), "app_id": i.Attrs["app_id"],
			"executor_id": i.Attrs["executor_id"], "pod": i.Attrs["pod"]}
		want := map[string]string{"heap": fmt.Sprint(float64(64 << 20)), "app_id": j.app,
			"executor_id": j.executor, "pod": j.pod}
		if labelsKey(joined) != labelsKey(want) {
			t.Errorf("pid %s: joined %v, want %v", j.pid(), joined, want)
		}
		if i.Kind != kindGauge || i.Value != 1 {
			t.Errorf("executor_jvm_info{pid=%q}: %s %v, want a Gauge of 1", j.pid(), i.Kind, i.Value)
		}
	}
}

// checkStaleness: when b's JVM ends, the exporter drops its series and
// the receiver sends each of them once more with the no-recorded-value
// flag (Prometheus's staleness marker), then no more.
func checkStaleness(t *testing.T, sink *otlpSink, addr string, a, b standIn) {
	b.jvm.Kill()
	testenv.WaitFor(t, 60*time.Second, "the exporter to drop the ended JVM", func() bool {
		return !hasSeries(scrape(t, addr), "executor_jvm_info", map[string]string{"pid": b.pid()})
	})
	var marker uint64
	testenv.WaitFor(t, 60*time.Second, "a staleness marker for the ended JVM's executor_jvm_info", func() bool {
		for _, p := range find(sink.Points(), "executor_jvm_info", map[string]string{"pid": b.pid()}) {
			if p.Stale() {
				marker = p.Time
				return true
			}
		}
		return false
	})
	// Two more scrapes of the collector, seen by a's series.
	testenv.WaitFor(t, 60*time.Second, "two more scrapes after the marker", func() bool {
		n := 0
		for _, p := range find(sink.Points(), "executor_jvm_info", map[string]string{"pid": a.pid()}) {
			if p.Time > marker && !p.Stale() {
				n++
			}
		}
		return n >= 2
	})
	stale := map[string]uint64{} // series key -> time of its marker
	live := map[string]uint64{}  // series key -> time of its last value
	for _, p := range find(sink.Points(), "", map[string]string{"pid": b.pid()}) {
		if p.Stale() {
			stale[p.Key()] = p.Time
		} else {
			live[p.Key()] = max(live[p.Key()], p.Time)
		}
	}
	for _, name := range []string{"executor_jvm_info", "executor_jvm_memory_used_bytes", "executor_process_resident_memory_bytes"} {
		n := 0
		for key := range stale {
			if strings.Contains(key, " "+name+"{") {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no staleness marker for pid %s", name, b.pid())
		}
	}
	for key, at := range stale {
		if live[key] > at {
			t.Errorf("%s: a value after its staleness marker", key)
		}
	}
	// A series that is stale should never be Gauge points of NaN without
	// the flag: a backend would store those as values.
	for _, p := range find(sink.Points(), "", map[string]string{"pid": b.pid()}) {
		if !p.Stale() && math.IsNaN(p.Value) {
			t.Errorf("%s: NaN without the no-recorded-value flag", p.Key())
		}
	}
}

// checkFamilies: every executor_ family of a direct scrape reaches the
// collector's output under its own name, as the OTLP type its Prometheus
// type maps to, with its HELP as description and its OpenMetrics UNIT (none)
// as unit, and every series of the scrape with exactly its labels as
// attributes (all of the test's own series; other JVMs' may end before
// the collector's next scrape). No executor_ metric comes out that no
// scrape had.
func checkFamilies(t *testing.T, sink *otlpSink, addr string, families, seen map[string]*dto.MetricFamily, ours func(map[string]string) bool, scrapeAgain func()) {
	units := openMetricsUnits(t, addr)
	type want struct {
		name, kind, help, unit string
	}
	wantSeries := map[string]want{} // series key -> its family
	required := map[string]bool{}   // the series that must be there
	res := ""
	for _, p := range sink.Points() {
		res = labelsKey(p.Resource)
		break
	}
	for name, mf := range families {
		if !strings.HasPrefix(name, "executor_") {
			continue
		}
		w := want{name: name, help: mf.GetHelp(), unit: units[strings.TrimSuffix(name, "_total")]}
		switch mf.GetType() {
		case dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			w.kind = kindGauge
		case dto.MetricType_COUNTER:
			w.kind = kindSum
		case dto.MetricType_SUMMARY:
			w.kind = kindSummary
		case dto.MetricType_HISTOGRAM:
			w.kind = kindHistogram
		}
		for _, m := range mf.GetMetric() {
			key := res + " " + name + labelsKey(labelsOf(m))
			wantSeries[key] = w
			if ours(labelsOf(m)) {
				required[key] = true
			}
		}
	}
	if len(required) < 50 {
		t.Fatalf("only %d executor_ series of the test's in the scrape", len(required))
	}
	// Wait up to a minute, then say which are missing.
	var missing []string
	deadline := time.Now().Add(time.Minute)
	testenv.WaitFor(t, 2*time.Minute, "every series of the scrape in the collector's output", func() bool {
		have := map[string]bool{}
		for _, p := range sink.Points() {
			have[p.Key()] = true
		}
		missing = missing[:0]
		for key := range required {
			if !have[key] {
				missing = append(missing, key)
			}
		}
		return len(missing) == 0 || time.Now().After(deadline)
	})
	// One line per family: how many of its series are missing, and one.
	sort.Strings(missing)
	byFamily := map[string][]string{}
	for _, key := range missing {
		byFamily[wantSeries[key].name] = append(byFamily[wantSeries[key].name], key)
	}
	for _, name := range slices.Sorted(maps.Keys(byFamily)) {
		t.Errorf("%s: %d series not in the collector's output, e.g. %s", name, len(byFamily[name]), byFamily[name][0])
	}
	// A family new since the scrape above (another test's JVM ended) is
	// in seen after one more scrape, later than these points.
	pts := sink.Points()
	scrapeAgain()
	checked := map[string]bool{}
	for _, p := range pts {
		w, ok := wantSeries[p.Key()]
		if !ok {
			if strings.HasPrefix(p.Name, "executor_") && seen[p.Name] == nil && !checked[p.Name] {
				checked[p.Name] = true
				t.Errorf("%s: in the collector's output, in no scrape", p.Name)
			}
			continue
		}
		if checked[w.name] {
			continue
		}
		checked[w.name] = true
		got := want{name: p.Name, kind: p.Kind, help: p.Description, unit: p.Unit}
		if got != w {
			t.Errorf("%s: came out as %+v, want %+v", w.name, got, w)
		}
	}
	if len(missing) == 0 {
		t.Logf("%d executor_ families, %d series of the test's: all in the collector's output", len(checked), len(required))
	}
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
