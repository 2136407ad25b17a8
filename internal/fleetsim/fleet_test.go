package fleetsim

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"
)

func loadTemplate(t testing.TB) *Template {
	t.Helper()
	f, err := os.Open("testdata/node.prom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tmpl, err := ParseTemplate(f)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

var origin = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFleet(t testing.TB, nodes int, seed uint64) *Fleet {
	return New(Config{Nodes: nodes, Seed: seed, Origin: origin}, loadTemplate(t))
}

func TestTemplateHoldsAnExecutorAKillAndAnExit(t *testing.T) {
	tmpl := loadTemplate(t)
	if len(tmpl.JVM) < 40 || len(tmpl.Node) < 30 {
		t.Errorf("template has %d executor series and %d node series; want a whole executor and node", len(tmpl.JVM), len(tmpl.Node))
	}
	for _, s := range tmpl.JVM {
		if label(s, "pid") == "" {
			t.Errorf("executor series without pid: %v", s)
		}
	}
	if label(tmpl.Kill, "cause") == "" || label(tmpl.Exit, "reason") == "" {
		t.Errorf("kill %v or exit %v without its cause or reason", tmpl.Kill, tmpl.Exit)
	}
}

func scrape(t testing.TB, f *Fleet, n int, at time.Time) string {
	t.Helper()
	var b bytes.Buffer
	if err := f.WriteText(&b, f.Nodes()[n], at); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSameSeedSameFleet(t *testing.T) {
	at := origin.Add(90 * time.Minute)
	a, b, c := newFleet(t, 10, 1), newFleet(t, 10, 1), newFleet(t, 10, 2)
	// b is asked in another order first: the answer depends on time only.
	scrape(t, b, 3, origin.Add(5*time.Hour))
	if scrape(t, a, 3, at) != scrape(t, b, 3, at) {
		t.Error("two fleets of the same seed differ")
	}
	if scrape(t, a, 3, at) == scrape(t, c, 3, at) {
		t.Error("fleets of different seeds are the same")
	}
}

// TestScrapeIsTheExportersFormat parses every node's scrape as Prometheus
// would and checks it carries every family of the template, each series
// once.
func TestScrapeIsTheExportersFormat(t *testing.T) {
	f := newFleet(t, 8, 1)
	seen := map[string]bool{}
	for step := range 16 {
		at := origin.Add(time.Duration(step) * 20 * time.Minute)
		for n := range f.Nodes() {
			parser := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := parser.TextToMetricFamilies(strings.NewReader(scrape(t, f, n, at)))
			if err != nil {
				t.Fatalf("node %d at %v: %v", n, at, err)
			}
			for name, mf := range mfs {
				seen[name] = true
				// Prometheus drops all but one of the samples of a series
				// repeated in a scrape.
				series := map[string]bool{}
				for _, m := range mf.GetMetric() {
					var id strings.Builder
					for _, l := range m.GetLabel() {
						fmt.Fprintf(&id, "%s=%q,", l.GetName(), l.GetValue())
					}
					if series[id.String()] {
						t.Fatalf("node %d at %v: %s{%s} twice", n, at, name, id.String())
					}
					series[id.String()] = true
				}
			}
		}
	}
	for name := range f.tmpl.Families {
		// A node that is told of an interruption is rare; TestNotices has it.
		if !seen[name] && strings.HasPrefix(name, "executor_") && name != "executor_instance_interruption_timestamp_seconds" {
			t.Errorf("no simulated node ever exports %s", name)
		}
	}
}

// TestChurn checks the executors' turnover and how they end: about one
// executor per slot and mean lifetime, every exit reason the mixin reads.
func TestChurn(t *testing.T) {
	const nodes, hours = 40, 6
	f := newFleet(t, nodes, 7)
	pids := map[string]bool{}
	reasons := map[string]int{}
	slots := 0
	for _, n := range f.Nodes() {
		slots += n.Type.Executors
		// Every 2 minutes: an exit counter lasts an hour, an executor 15 min at least.
		for m := 0; m <= hours*60; m += 2 {
			f.Samples(n, origin.Add(time.Duration(m)*time.Minute), func(s Sample) {
				switch s.Name {
				case "executor_jvm_info":
					pids[n.Instance+label(s, "pid")] = true
				case exitFamily:
					reasons[label(s, "reason")+"/"+label(s, "region")]++
				}
			})
		}
	}
	want := float64(slots * (hours + 1))
	if got := float64(len(pids)); math.Abs(got-want)/want > 0.3 {
		t.Errorf("%v executors over %d h on %d slots, want about %v", got, hours, slots, want)
	}
	for _, r := range []string{"exited/", "killed/", "oom_killed/", "heap_exhausted/", "interrupted/"} {
		if reasons[r] == 0 {
			t.Errorf("no executor ended %s; reasons: %v", r, reasons)
		}
	}
	native := 0
	for _, region := range nativeRegions {
		native += reasons["oom_killed/"+region]
	}
	if native == 0 {
		t.Errorf("no native OOM kill with a region; reasons: %v", reasons)
	}
}

// TestEndCounters: an exit counter reads 0 for one interval, then 1, and
// is gone after the retention.
func TestEndCounters(t *testing.T) {
	f := newFleet(t, 4, 3)
	n := f.Nodes()[0]
	var j jvm
	n.mu.Lock()
	j = f.history(n, 0, origin.Add(3*time.Hour))[1]
	n.mu.Unlock()
	value := func(at time.Time) (float64, bool) {
		v, ok := 0.0, false
		f.Samples(n, at, func(s Sample) {
			if s.Name == exitFamily && label(s, "pid") == fmt.Sprint(j.pid) {
				v, ok = s.Value, true
			}
		})
		return v, ok
	}
	if _, ok := value(j.end.Add(-time.Second)); ok {
		t.Error("exit counter before the end")
	}
	if v, ok := value(j.end); !ok || v != 0 {
		t.Errorf("at the end: %v %v, want 0", v, ok)
	}
	if v, ok := value(j.end.Add(f.cfg.Interval)); !ok || v != 1 {
		t.Errorf("an interval later: %v %v, want 1", v, ok)
	}
	if _, ok := value(j.end.Add(f.cfg.Retention)); ok {
		t.Error("exit counter kept past the retention")
	}
}

func TestEncodeWriteRequest(t *testing.T) {
	f := newFleet(t, 2, 1)
	series := f.History(f.Nodes()[0], origin, 3, 30*time.Second, []Label{{"job", "executor_exporter"}})
	body, err := snappy.Decode(nil, EncodeWriteRequest(series))
	if err != nil {
		t.Fatal(err)
	}
	n, points := 0, 0
	for len(body) > 0 {
		num, typ, l := protowire.ConsumeTag(body)
		if num != 1 || typ != protowire.BytesType {
			t.Fatalf("field %d type %d, want timeseries", num, typ)
		}
		ts, m := protowire.ConsumeBytes(body[l:])
		body = body[l+m:]
		n++
		for len(ts) > 0 {
			num, _, l := protowire.ConsumeTag(ts)
			_, m := protowire.ConsumeBytes(ts[l:])
			ts = ts[l+m:]
			if num == 2 {
				points++
			}
		}
	}
	want := 0
	for _, s := range series {
		want += len(s.Points)
	}
	if n != len(series) || points != want || points < 3*len(f.tmpl.Node) {
		t.Errorf("decoded %d series and %d points, want %d and %d", n, points, len(series), want)
	}
}

// TestNotices: about 4 % of a spot node's hours have a notice, during which
// it says when it will be interrupted.
func TestNotices(t *testing.T) {
	f := newFleet(t, 200, 5)
	spot, notices := 0, 0
	for _, n := range f.Nodes() {
		if n.Lifecycle == "spot" {
			spot++
		}
		for h := range 24 {
			if from, to, ok := f.notice(n, int64(h)); ok {
				notices++
				until, pending := f.Pending(n, from.Add(time.Second))
				if !pending || !until.Equal(to) {
					t.Errorf("node %d at %v: pending %v until %v, want until %v", n.Index, from, pending, until, to)
				}
				if n.Lifecycle != "spot" {
					t.Errorf("on-demand node %d has a spot notice", n.Index)
				}
			}
		}
	}
	if want := float64(spot*24) * 0.04; math.Abs(float64(notices)-want) > want/2 {
		t.Errorf("%d notices on %d spot nodes in 24 h, want about %v", notices, spot, want)
	}
}

func BenchmarkScrape(b *testing.B) {
	f := newFleet(b, 100, 1)
	at := origin.Add(time.Hour)
	var buf bytes.Buffer
	for i := 0; b.Loop(); i++ {
		buf.Reset()
		_ = f.WriteText(&buf, f.Nodes()[i%100], at.Add(time.Duration(i)*time.Second))
	}
}
