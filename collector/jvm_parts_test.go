package collector

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-kit/log"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/executor-exporter/executor_exporter/internal/gzipparts"
)

// A part is kept per family, format and header, and given back while the
// lines' sum is the same; another sum compresses again.
func TestFamilyPartsKeepsAPartWhileItsLinesStay(t *testing.T) {
	p := newFamilyParts()
	comp, _ := gzipparts.NewCompressor(1)
	made := 0
	compress := func(s string) func() gzipparts.Part {
		return func() gzipparts.Part { made++; return comp.Compress([]byte(s)) }
	}
	key := familyPartKey{family: 3, openMetrics: true, header: true}
	sum := familyPartSum{count: 2, sum: 42}
	first := p.get(key, sum, compress("a\n"))
	if again := p.get(key, sum, compress("b\n")); made != 1 || again.Size() != first.Size() {
		t.Fatalf("same key and sum: compressed %d times", made)
	}
	for _, other := range []struct {
		key familyPartKey
		sum familyPartSum
	}{
		{key, familyPartSum{count: 2, sum: 43}},
		{key, familyPartSum{count: 3, sum: 43}},
		{familyPartKey{family: 3, openMetrics: false, header: true}, familyPartSum{count: 3, sum: 43}},
		{familyPartKey{family: 3, openMetrics: true, header: false}, familyPartSum{count: 3, sum: 43}},
		{familyPartKey{family: 4, openMetrics: true, header: true}, familyPartSum{count: 3, sum: 43}},
	} {
		before := made
		p.get(other.key, other.sum, compress("c\n"))
		if made != before+1 {
			t.Errorf("%+v %+v: not compressed", other.key, other.sum)
		}
	}
}

// A gzip answer is, view after view, the plain answer of the same view:
// a JVM read again with a value changed, one gone, one new, the same view
// twice.
func TestGzipAnswerFollowsTheView(t *testing.T) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	writers := newTextWriters()
	now := time.Now()
	view := syntheticView(t, 4, now)
	next := func(change func()) {
		view.Time = view.Time.Add(time.Second)
		view.JVMs = append(view.JVMs[:0:0], view.JVMs...)
		change()
	}
	steps := []struct {
		name   string
		change func()
	}{
		{"first", func() {}},
		{"same view", nil},
		{"one read again", func() { view.JVMs[1].Time = view.Time; view.JVMs[1].Stats.HeapUsed += 4096 }},
		{"breakdown moved", func() {
			view.JVMs[2].Time = view.Time
			view.JVMs[2].Native = nil
		}},
		{"one gone", func() { view.JVMs = view.JVMs[1:] }},
		{"one new", func() {
			j := view.JVMs[0]
			j.PID, j.ExecutorID, j.Time = 30000, "30", view.Time
			view.JVMs = append(view.JVMs, j)
		}},
	}
	for _, om := range []bool{false, true} {
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		if om {
			format = expfmt.NewFormat(expfmt.TypeOpenMetrics)
		}
		for _, step := range steps {
			if step.change != nil {
				next(step.change)
			}
			set := c.series(view)
			texts := make([]*jvmText, len(set.jvms))
			for i, e := range set.jvms {
				texts[i] = c.text(e, om)
			}
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			rec := httptest.NewRecorder()
			writers.write(rec, req, format, nil, c.descs.families, texts, nil)
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			if want := renderSet(t, c, set, om); string(got) != want {
				t.Errorf("openMetrics %v, %s: gzip answer differs from the plain one:\n%s\n\nplain:\n%s", om, step.name, got, want)
			}
		}
	}
}

// The registries' families between two per-JVM families, and after the
// last, are compressed again only when their bytes changed: the answer
// stays the plain one, and a run that stands is not compressed twice.
func TestGzipAnswerKeepsTheRegistryRunsThatStand(t *testing.T) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	writers := newTextWriters()
	set := c.series(syntheticView(t, 2, time.Now()))
	texts := make([]*jvmText, len(set.jvms))
	for i, e := range set.jvms {
		texts[i] = c.text(e, false)
	}
	// executor_instance_info sorts between the container and the jvm
	// families, go_goroutines after every per-JVM family.
	registry := func(zone string, goroutines float64) []*dto.MetricFamily {
		return []*dto.MetricFamily{
			{Name: proto.String("executor_instance_info"), Help: proto.String("Instance."), Type: dto.MetricType_GAUGE.Enum(),
				Metric: []*dto.Metric{{Label: []*dto.LabelPair{{Name: proto.String("zone"), Value: proto.String(zone)}}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}}},
			{Name: proto.String("go_goroutines"), Help: proto.String("Goroutines."), Type: dto.MetricType_GAUGE.Enum(),
				Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(goroutines)}}}},
		}
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	answer := func(mfs []*dto.MetricFamily, gz bool) string {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		writers.write(rec, req, format, mfs, c.descs.families, texts, nil)
		if !gz {
			return rec.Body.String()
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	answer(registry("z", 1), true) // the per-JVM families' parts
	for _, step := range []struct {
		name       string
		zone       string
		goroutines float64
		compressed int // registry runs compressed again
	}{
		{"both new", "a", 5, 2},
		{"the same", "a", 5, 0},
		{"the last run moved", "a", 6, 1},
		{"a run between JVM families moved, its length the same", "b", 6, 1},
		{"both moved", "c", 7, 2},
	} {
		before := writers.parts.made
		got := answer(registry(step.zone, step.goroutines), true)
		if made := writers.parts.made - before; made != step.compressed {
			t.Errorf("%s: %d registry runs compressed, want %d", step.name, made, step.compressed)
		}
		if want := answer(registry(step.zone, step.goroutines), false); got != want {
			t.Errorf("%s: gzip answer differs from the plain one:\n%s\n\nplain:\n%s", step.name, got, want)
		}
	}
}
