package otel

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

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
