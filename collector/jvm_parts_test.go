package collector

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/common/expfmt"

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
	sum := familyPartSum{jvms: 2, sum: 42}
	first := p.get(key, sum, compress("a\n"))
	if again := p.get(key, sum, compress("b\n")); made != 1 || again.Size() != first.Size() {
		t.Fatalf("same key and sum: compressed %d times", made)
	}
	for _, other := range []struct {
		key familyPartKey
		sum familyPartSum
	}{
		{key, familyPartSum{jvms: 2, sum: 43}},
		{key, familyPartSum{jvms: 3, sum: 43}},
		{familyPartKey{family: 3, openMetrics: false, header: true}, familyPartSum{jvms: 3, sum: 43}},
		{familyPartKey{family: 3, openMetrics: true, header: false}, familyPartSum{jvms: 3, sum: 43}},
		{familyPartKey{family: 4, openMetrics: true, header: true}, familyPartSum{jvms: 3, sum: 43}},
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
