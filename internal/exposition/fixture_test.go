package exposition

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fixture is a table shaped like the jvm collector's: identity labels
// out of name order, an info family whose further labels vary by subject,
// families with one label more or none, gauges and counters.
type fixture struct {
	table                     *Table
	info, used, gcs, uptime   *Family
	threads, classes, seconds *Family
}

func newFixture() *fixture {
	t := NewTable("pid", "role", "app_id", "executor_id")
	f := &fixture{
		table:   t,
		used:    t.Family("x_memory_used_bytes", "Memory in use.", "area"),
		info:    t.Family("x_info", "A subject, with \\ and \"quotes\" in its help.", "main_class", "pod"),
		gcs:     t.Family("x_gc_collections_total", "Collections.", "gc"),
		seconds: t.Family("x_gc_seconds_total", "Time in collections."),
		uptime:  t.Family("x_uptime_seconds", "Time since start."),
		threads: t.Family("x_threads", "Threads, by state.", "state"),
		classes: t.Family("x_classes", "Classes loaded."),
	}
	t.Seal()
	return f
}

// subject is one subject's values.
type subject struct {
	identity []string
	pod      map[string]string // further labels of the info family
	values   []float64
}

// subjects are n subjects, their labels and values chosen to need care:
// escapes, Unicode, integral and fractional values, 0, NaN and infinities;
// and some a registry refuses series of: an identity that is not UTF-8,
// further labels that cannot be label names or repeat one.
func (f *fixture) subjects(n int) []subject {
	out := make([]subject, n)
	special := []float64{0, math.Copysign(0, -1), 1e21, 1e-7, math.NaN(), math.Inf(1), math.Inf(-1), 123456789, 1.5}
	for i := range out {
		s := &out[i]
		s.identity = []string{strconv.Itoa(10000 + i*7), "executor", "app \"quoted\" \\ back\nslash", "ünï" + strconv.Itoa(i)}
		switch {
		case i == 5:
			s.identity[3] = "\xff"
		case i%7 == 3:
			s.pod = map[string]string{"bad-name": "x"}
		case i%7 == 4:
			s.pod = map[string]string{"pod": "twice"}
		case i%3 == 1:
			s.pod = map[string]string{"label_team": "data\\eng", "label_app": "etl " + strconv.Itoa(i%2)}
		}
		for k := range 6 {
			s.values = append(s.values, special[(i+k)%len(special)])
		}
	}
	return out
}

// emit adds s's series to sink, as a collector describes a subject's.
func (f *fixture) emit(sink Sink, s subject) {
	sink.Start(s.identity...)
	names := slices.Sorted(maps.Keys(s.pod))
	var values []string
	for _, n := range names {
		values = append(values, s.pod[n])
	}
	sink.Add(f.info.WithLabels(names...), 1, append([]string{"org.example.Main", "pod-" + s.identity[0]}, values...)...)
	sink.Add(f.used, s.values[0], "heap")
	sink.Add(f.used, s.values[1], "nonheap")
	sink.Add(f.gcs, math.Abs(s.values[2]), "G1 Young Generation")
	sink.Add(f.seconds, 0.25)
	if !math.IsNaN(s.values[3]) {
		sink.Add(f.uptime, s.values[3]) // a family some subjects lack
	}
	sink.Add(f.threads, s.values[4], "live")
	sink.Add(f.classes, s.values[5])
}

// texts renders every subject in one format.
func (f *fixture) texts(subjects []subject, openMetrics bool) []*Text {
	out := make([]*Text, len(subjects))
	for i, s := range subjects {
		out[i] = new(Cache).Text(f.table, openMetrics, func(sink Sink) { f.emit(sink, s) })
	}
	return out
}

// collector is the subjects' series as const metrics, for a registry.
func (f *fixture) collector(subjects []subject) prometheus.Collector {
	return collectFunc(func(ch chan<- prometheus.Metric) {
		sink := Metrics(ch)
		for _, s := range subjects {
			f.emit(sink, s)
		}
	})
}

// collectFunc is an unchecked collector.
type collectFunc func(chan<- prometheus.Metric)

func (collectFunc) Describe(chan<- *prometheus.Desc)      {}
func (c collectFunc) Collect(ch chan<- prometheus.Metric) { c(ch) }

func gather(t testing.TB, cs ...prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}
