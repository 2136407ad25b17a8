package collector

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/exposition"
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
	gatherer := ec.Gatherer(prometheus.NewRegistry())
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

// A JVM whose reading did not change since the last view keeps its entry
// and its rendered text; one read again gets a new one; and the set
// renders what a collector that never built before renders of the view.
func TestSeriesOfAnUnchangedJVMReused(t *testing.T) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	view := syntheticView(t, 3, time.Now())
	first := c.series(view)
	text := func(e *jvmEntry) *exposition.Text { return c.texts(&jvmSet{jvms: []*jvmEntry{e}}, true)[0] }
	kept, reread := text(first.jvms[0]), text(first.jvms[1])

	next := view
	next.Time = view.Time.Add(5 * time.Second)
	next.JVMs = slices.Clone(view.JVMs)
	next.JVMs[1].Time = next.Time
	next.JVMs[1].Stats.HeapUsed += 1 << 20
	second := c.series(next)
	if text(second.jvms[0]) != kept || text(second.jvms[1]) == reread {
		t.Errorf("unchanged JVM's text reused: %v (want true); re-read JVM's reused: %v (want false)",
			text(second.jvms[0]) == kept, text(second.jvms[1]) == reread)
	}
	fresh := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	for _, om := range []bool{false, true} {
		if got, want := renderSet(t, c, second, om), renderSet(t, fresh, fresh.series(next), om); got != want {
			t.Errorf("openMetrics %v: a build that reuses entries differs from a fresh one:\n%s\n\nfresh:\n%s", om, got, want)
		}
	}
}

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

// BenchmarkSeries is what the per-JVM series of 100 JVMs cost a scrape
// in OpenMetrics, gzipped, as Prometheus asks for them: after a view in
// which every JVM was read again ("all-read"), half of them ("half-read":
// every JVM is read every 30 s when far from its limit, a scrape comes
// every 15 s), none ("same-view"); and, the anchor, the same series
// served by promhttp from a registry ("promhttp"; what a protobuf scrape
// still takes).
func BenchmarkSeries(b *testing.B) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	view := syntheticView(b, 100, time.Now())
	format := expfmt.NewFormat(expfmt.TypeOpenMetrics)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Accept", string(format))
	var size int
	src := &setSource{c: c}
	h := exposition.Handler(c.table, src, nil, promhttp.HandlerOpts{EnableOpenMetrics: true})
	scrape := func(set *jvmSet) {
		src.set = set
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		size = rec.Body.Len()
	}
	for _, share := range []struct {
		name  string
		every int
	}{{"all-read", 1}, {"half-read", 2}, {"same-view", 0}} {
		b.Run(share.name, func(b *testing.B) {
			b.ReportAllocs()
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for i := 0; b.Loop(); i++ {
				if share.every > 0 {
					view.Time = view.Time.Add(time.Second) // a new view
					for k := range view.JVMs {
						if (k+i)%share.every == 0 {
							view.JVMs[k].Time = view.Time
							view.JVMs[k].Stats.HeapUsed++ // a reading moves some values
						}
					}
				}
				scrape(c.series(view))
			}
			reportCPU()
			b.ReportMetric(float64(size), "gzip-bytes")
		})
	}
	b.Run("promhttp", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(setCollector{c, c.series(view)})
		h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
		b.ReportAllocs()
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			size = rec.Body.Len()
		}
		reportCPU()
		b.ReportMetric(float64(size), "gzip-bytes")
	})
}

// setFamilies is a set's series as a registry gathers them.
func setFamilies(t testing.TB, c *jvmCollector, set *jvmSet) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(setCollector{c, set})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// renderSet is a set's series as the text handler writes them.
func renderSet(t testing.TB, c *jvmCollector, set *jvmSet, openMetrics bool) string {
	t.Helper()
	texts := c.texts(set, openMetrics)
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	if openMetrics {
		format = expfmt.NewFormat(expfmt.TypeOpenMetrics)
	}
	var buf bytes.Buffer
	if err := c.table.Write(&buf, nil, texts, format, nil); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// setSource serves one set's per-JVM series alone, in the text formats.
type setSource struct {
	c   *jvmCollector
	set *jvmSet
}

func (s *setSource) Snapshot(openMetrics bool) ([]*dto.MetricFamily, []*exposition.Text, error) {
	return nil, s.c.texts(s.set, openMetrics), nil
}

// setCollector is an unchecked collector of one set's per-JVM series.
type setCollector struct {
	c   *jvmCollector
	set *jvmSet
}

func (setCollector) Describe(chan<- *prometheus.Desc) {}

func (s setCollector) Collect(ch chan<- prometheus.Metric) { s.c.send(s.set, ch) }

// BenchmarkDeflateView compresses 100 JVMs' series in OpenMetrics with the
// writer the handler uses (klauspost/compress's gzip at its fastest
// level) and, beside it, its stateless and Huffman-only modes, and the
// standard library's at BestSpeed and at the default level (promhttp's).
// The text is written in one piece: stateless compression, which keeps
// no history between writes, is far worse on the handler's many.
func BenchmarkDeflateView(b *testing.B) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	text := []byte(renderSet(b, c, c.series(syntheticView(b, 100, time.Now())), true))
	for _, bc := range []struct {
		name string
		make func(io.Writer) io.WriteCloser
	}{
		{"klauspost-1", func(w io.Writer) io.WriteCloser { z, _ := kgzip.NewWriterLevel(w, kgzip.BestSpeed); return z }},
		{"klauspost-huffman", func(w io.Writer) io.WriteCloser { z, _ := kgzip.NewWriterLevel(w, kgzip.HuffmanOnly); return z }},
		{"klauspost-stateless", func(w io.Writer) io.WriteCloser {
			z, _ := kgzip.NewWriterLevel(w, kgzip.StatelessCompression)
			return z
		}},
		{"stdlib-1", func(w io.Writer) io.WriteCloser { z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed); return z }},
		{"stdlib-default", func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var z bytes.Buffer
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for b.Loop() {
				z.Reset()
				w := bc.make(&z)
				_, _ = w.Write(text)
				_ = w.Close()
			}
			reportCPU()
			b.ReportMetric(float64(len(text)), "bytes")
			b.ReportMetric(float64(z.Len()), "gzip-bytes")
		})
	}
}
