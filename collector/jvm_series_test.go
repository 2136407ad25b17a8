package collector

import (
	"bytes"
	"compress/flate"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	kflate "github.com/klauspost/compress/flate"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// encodeText is families in the text format, one line per sample, sorted;
// the scrape duration, which differs between two gathers, reads 0.
func encodeText(t testing.TB, families []*dto.MetricFamily) []string {
	t.Helper()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	// The exposition must parse: one TYPE per family, no duplicate series.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := parser.TextToMetricFamilies(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, buf.String())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.HasPrefix(l, "executor_scrape_collector_duration_seconds{") {
			l = l[:strings.LastIndexByte(l, ' ')] + " 0"
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	return lines
}

// What the HTTP handler serves (ExecutorCollector.Gatherer: the per-JVM
// series as built, merged into the registry's) is what a registry of a
// user's, with the same collectors registered, serves, series for series
// and value for value, with real JVMs.
func TestGathererServesWhatRegistryServes(t *testing.T) {
	j1 := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m", "-XX:+UseSerialGC"}, Args: []string{"--executor-id", "1", "--app-id", "app-series"}})
	j2 := testjvm.Start(t, testjvm.Options{MainClass: testjvm.DriverClass, JVMArgs: []string{"-Xmx32m", "-XX:+UseG1GC"}})
	tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000, MaxAge: time.Hour}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tracker.Refresh(); err != nil {
		t.Fatal(err)
	}
	// One exporter's collectors, served apart by the exporter's handler
	// and, at the same time, registered whole in a registry of a user's.
	ec := NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"jvm": NewJVMCollector(tracker, log.NewNopLogger())})
	apart := prometheus.NewRegistry()
	apart.MustRegister(ec.ServedApart())
	gatherer := ec.Gatherer(apart)
	plain := prometheus.NewRegistry()
	plain.MustRegister(ec)
	gather := func(direct bool) []string {
		t.Helper()
		var families []*dto.MetricFamily
		if direct {
			var done func()
			families, done, err = gatherer.Gather()
			defer done()
		} else {
			families, err = plain.Gather()
		}
		if err != nil {
			t.Fatal(err)
		}
		return encodeText(t, families)
	}
	viaRegistry, viaGatherer := gather(false), gather(true)
	if !slices.Equal(viaRegistry, viaGatherer) {
		t.Errorf("registry and gatherer differ:\nregistry:\n%s\n\ngatherer:\n%s", strings.Join(viaRegistry, "\n"), strings.Join(viaGatherer, "\n"))
	}
	for _, pid := range []int{j1.PID, j2.PID} {
		found := slices.ContainsFunc(viaGatherer, func(l string) bool {
			return strings.HasPrefix(l, "executor_jvm_info{") && strings.Contains(l, `pid="`+strconv.Itoa(pid)+`"`)
		})
		if !found {
			t.Errorf("JVM %d not served", pid)
		}
	}
}

// A view is built once: two Updates of the same view serve the same
// series, not copies.
func TestSeriesBuiltOncePerView(t *testing.T) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	view := syntheticView(t, 3, time.Now())
	first := c.series(view)
	if second := c.series(view); second != first {
		t.Error("the same view was built twice")
	}
	next := view
	next.Time = view.Time.Add(5 * time.Second)
	if c.series(next) == first {
		t.Error("a new view served the old series")
	}
}

// A JVM whose reading did not change since the last view keeps its series
// (the same objects); one read again gets new ones; and the set is what a
// collector that never built before makes of the view.
func TestSeriesOfAnUnchangedJVMReused(t *testing.T) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	view := syntheticView(t, 3, time.Now())
	first := c.series(view)
	firstOf := func(pid string) *dto.Metric {
		for _, f := range first.families {
			if f.GetName() == "executor_jvm_memory_used_bytes" {
				for _, m := range f.Metric {
					for _, l := range m.Label {
						if l.GetName() == "pid" && l.GetValue() == pid {
							return m
						}
					}
				}
			}
		}
		t.Fatalf("no series of pid %s", pid)
		return nil
	}
	kept, reread := firstOf("10000"), firstOf("10001")

	next := view
	next.Time = view.Time.Add(5 * time.Second)
	next.JVMs = slices.Clone(view.JVMs)
	next.JVMs[1].Time = next.Time
	next.JVMs[1].Stats.HeapUsed += 1 << 20
	second := c.series(next)
	var sawKept, sawReread bool
	for _, f := range second.families {
		for _, m := range f.Metric {
			sawKept = sawKept || m == kept
			sawReread = sawReread || m == reread
		}
	}
	if !sawKept || sawReread {
		t.Errorf("unchanged JVM's series reused: %v (want true); re-read JVM's reused: %v (want false)", sawKept, sawReread)
	}
	fresh := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector).series(next)
	if got, want := encodeText(t, second.families), encodeText(t, fresh.families); !slices.Equal(got, want) {
		t.Errorf("a build that reuses series differs from a fresh one:\n%s\n\nfresh:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestMergeFamilies(t *testing.T) {
	fam := func(name string, n int) *dto.MetricFamily {
		f := &dto.MetricFamily{Name: new(name), Type: dto.MetricType_GAUGE.Enum()}
		for range n {
			f.Metric = append(f.Metric, &dto.Metric{Gauge: &dto.Gauge{Value: new(1.0)}})
		}
		return f
	}
	a := []*dto.MetricFamily{fam("a", 1), fam("c", 1), fam("e", 2)}
	b := []*dto.MetricFamily{fam("b", 1), fam("c", 2), fam("f", 1)}
	got := mergeFamilies(a, b)
	var names []string
	var counts []int
	for _, f := range got {
		names, counts = append(names, f.GetName()), append(counts, len(f.Metric))
	}
	if !slices.Equal(names, []string{"a", "b", "c", "e", "f"}) || !slices.Equal(counts, []int{1, 1, 3, 2, 1}) {
		t.Errorf("merged %v with %v series", names, counts)
	}
	if len(a[1].Metric) != 1 {
		t.Error("merging changed an input family")
	}
}

// syntheticView is n JVMs with the counters of a real G1 JVM's hsperfdata.
func syntheticView(t testing.TB, n int, at time.Time) jvm.View {
	t.Helper()
	data, err := os.ReadFile(testenv.RepoRoot() + "/internal/hsperf/testdata/g1.hsperf")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := hsperf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := snap.Stats()
	if err != nil {
		t.Fatal(err)
	}
	view := jvm.View{Time: at}
	for i := range n {
		view.JVMs = append(view.JVMs, jvm.JVM{
			Sample: jvm.Sample{
				Identity: jvm.Identity{PID: 10000 + i, Role: "executor", AppID: "app-20261123150000-0042", ExecutorID: strconv.Itoa(i + 1)},
				Time:     at, RSSJVM: 1 << 30, RSSPython: 1 << 28,
			},
			ProcessStart: at.Add(-time.Hour),
			MainClass:    "org.apache.spark.executor.CoarseGrainedExecutorBackend", Xmx: "4g",
			Stats: stats, Counters: jvm.CountersHsperf,
			Cgroup:    procmem.CgroupMemory{Path: "/kubepods/pod" + strconv.Itoa(i), Limit: 5 << 30, Usage: 2 << 30, WorkingSet: 1 << 30, HasOOMKills: true},
			HasCgroup: true,
		})
	}
	return view
}

// BenchmarkSeries is the per-JVM series of 100 JVMs: built once per view
// (a background sample), then encoded by every scrape.
func BenchmarkSeries(b *testing.B) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	view := syntheticView(b, 100, time.Now())
	set := c.series(view)
	n := 0
	for _, f := range set.families {
		n += len(f.Metric)
	}
	// A new view in which every JVM was read again, and one in which half
	// were: every JVM is read every 30 s when far from its limit, a scrape
	// comes every 15 s.
	for _, share := range []struct {
		name  string
		every int
	}{{"build", 1}, {"build-half", 2}} {
		b.Run(share.name, func(b *testing.B) {
			b.ReportAllocs()
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for i := 0; b.Loop(); i++ {
				view.Time = view.Time.Add(time.Second) // a new view every time
				for k := range view.JVMs {
					if (k+i)%share.every == 0 {
						view.JVMs[k].Time = view.Time
					}
				}
				c.series(view)
			}
			reportCPU()
			b.ReportMetric(float64(n), "series")
		})
	}
	b.Run("encode", func(b *testing.B) {
		// expfmt's OpenMetrics encoder, as promhttp writes families.
		var buf bytes.Buffer
		b.ReportAllocs()
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			buf.Reset()
			enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeOpenMetrics))
			for _, f := range set.families {
				if err := enc.Encode(f); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportCPU()
		b.ReportMetric(float64(buf.Len()), "bytes")
	})
	b.Run("encode-fast", func(b *testing.B) {
		// What a view is encoded with: appendText, expfmt's bytes.
		var buf []byte
		b.ReportAllocs()
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			buf, _ = appendText(buf[:0], set.families, true)
		}
		reportCPU()
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	b.Run("registry", func(b *testing.B) {
		// The same series through a registry's checks and sort, as a
		// scrape served them before they were built ahead.
		reg := prometheus.NewRegistry()
		reg.MustRegister(prebuiltCollector{set})
		b.ReportAllocs()
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU()
	})
}

// BenchmarkDeflateView compresses 100 JVMs' series in OpenMetrics with
// the compressor the exporter uses (klauspost/compress, BestSpeed) and,
// beside it, with the standard library's at BestSpeed and at the default
// level. "writer-bytes" is what one writer keeps on the heap.
func BenchmarkDeflateView(b *testing.B) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, f := range c.series(syntheticView(b, 100, time.Now())).families {
		if err := enc.Encode(f); err != nil {
			b.Fatal(err)
		}
	}
	text := buf.Bytes()
	type writer interface {
		io.Writer
		Reset(io.Writer)
		Flush() error
	}
	for _, bc := range []struct {
		name string
		make func() writer
	}{
		{"klauspost-1", func() writer { w, _ := kflate.NewWriter(nil, kflate.BestSpeed); return w }},
		{"stdlib-1", func() writer { w, _ := flate.NewWriter(nil, flate.BestSpeed); return w }},
		{"stdlib-default", func() writer { w, _ := flate.NewWriter(nil, flate.DefaultCompression); return w }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var z bytes.Buffer
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			w := bc.make()
			w.Reset(&z)
			_, _ = w.Write(text)
			_ = w.Flush()
			runtime.GC()
			runtime.ReadMemStats(&after)
			writerBytes := float64(after.HeapAlloc) - float64(before.HeapAlloc) - float64(z.Cap())
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for b.Loop() {
				z.Reset()
				w.Reset(&z)
				_, _ = w.Write(text)
				_ = w.Flush()
			}
			reportCPU()
			b.ReportMetric(float64(len(text)), "bytes")
			b.ReportMetric(float64(z.Len()), "deflated-bytes")
			b.ReportMetric(writerBytes, "writer-bytes")
		})
	}
}

type prebuiltCollector struct{ set *seriesSet }

func (prebuiltCollector) Describe(chan<- *prometheus.Desc) {}

func (p prebuiltCollector) Collect(ch chan<- prometheus.Metric) {
	p.set.send(ch)
}
