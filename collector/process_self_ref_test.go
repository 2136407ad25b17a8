package collector

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// The process collector held to client_golang's, which it replaces.

// compareProcessFamilies holds own, gathered between before and after
// from client_golang's collector, to what that collector gave: the same
// families (names, help, types), each one unlabelled value, and values
// equal where they cannot move, between the two readings (with a margin)
// where they can. It returns what differs.
func compareProcessFamilies(before, own, after map[string]*dto.MetricFamily) []string {
	var problems []string
	for name := range before {
		if own[name] == nil {
			problems = append(problems, name+": missing")
		}
	}
	for name, mf := range own {
		ref := before[name]
		if ref == nil {
			problems = append(problems, name+": not in client_golang's")
			continue
		}
		if mf.GetHelp() != ref.GetHelp() {
			problems = append(problems, fmt.Sprintf("%s: help %q, client_golang %q", name, mf.GetHelp(), ref.GetHelp()))
		}
		if mf.GetType() != ref.GetType() {
			problems = append(problems, fmt.Sprintf("%s: type %v, client_golang %v", name, mf.GetType(), ref.GetType()))
		}
		got := processValue(mf)
		lo, hi := processValue(ref), processValue(after[name])
		if lo > hi {
			lo, hi = hi, lo
		}
		var margin float64
		switch name {
		case "process_start_time_seconds":
			margin = 0.01
		case "process_max_fds", "process_virtual_memory_max_bytes":
			hi = lo // cannot move
		case "process_cpu_seconds_total":
			margin = 0.05
		case "process_open_fds":
			margin = 2
		case "process_resident_memory_bytes", "process_virtual_memory_bytes":
			margin = max(4<<20, hi*0.05)
		case "process_network_receive_bytes_total", "process_network_transmit_bytes_total":
			// Counters of the network namespace: read between the
			// other two, not beyond them.
		default:
			problems = append(problems, name+": no rule to compare it by")
			continue
		}
		if math.IsNaN(got) || math.IsNaN(lo) || math.IsNaN(hi) || got < lo-margin || got > hi+margin {
			problems = append(problems, fmt.Sprintf("%s: %v, client_golang %v then %v (margin %v)", name, got, lo, hi, margin))
		}
	}
	slices.Sort(problems)
	return problems
}

// The families client_golang's process collector gives this process on
// this machine, and the values, within the moments between the readings.
func TestProcessCollectorMatchesClientGolang(t *testing.T) {
	lib := collectors.NewProcessCollector(collectors.ProcessCollectorOpts{ReportErrors: true})
	own := newTestProcessCollector(t, Paths{ProcFS: "/proc"}, ProcessCollectorOpts{ReportErrors: true})
	// CPU time, so that its comparison is of more than zeros.
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
	}
	for i := range 3 { // the second and third through descriptors kept open
		before := gatherProcess(t, lib)
		got := gatherProcess(t, own)
		after := gatherProcess(t, lib)
		if len(before) != 9 {
			t.Fatalf("client_golang gave %d families, want the 9 of Linux", len(before))
		}
		for _, p := range compareProcessFamilies(before, got, after) {
			t.Errorf("reading %d: %s", i, p)
		}
		if i == 0 && testing.Verbose() {
			for _, name := range slices.Sorted(maps.Keys(got)) {
				t.Logf("%s %v, client_golang %v then %v", name, processValue(got[name]), processValue(before[name]), processValue(after[name]))
			}
		}
	}
}

// The comparison above fails for each way the collectors could differ.
func TestCompareProcessFamiliesFails(t *testing.T) {
	ref := gatherProcess(t, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{ReportErrors: true}))
	if problems := compareProcessFamilies(ref, ref, ref); len(problems) != 0 {
		t.Fatalf("a reading compared to itself: %q", problems)
	}
	for _, tc := range []struct {
		name   string
		change func(map[string]*dto.MetricFamily)
		want   string
	}{
		{"missing family", func(m map[string]*dto.MetricFamily) { delete(m, "process_network_receive_bytes_total") },
			"process_network_receive_bytes_total: missing"},
		{"extra family", func(m map[string]*dto.MetricFamily) {
			m["process_threads"] = proto.Clone(m["process_open_fds"]).(*dto.MetricFamily)
		}, "process_threads: not in client_golang's"},
		{"help", func(m map[string]*dto.MetricFamily) { m["process_max_fds"].Help = proto.String("Max fds.") },
			"process_max_fds: help"},
		{"type", func(m map[string]*dto.MetricFamily) {
			mf := m["process_cpu_seconds_total"]
			mf.Type = dto.MetricType_GAUGE.Enum()
			mf.Metric[0].Gauge = &dto.Gauge{Value: proto.Float64(mf.Metric[0].GetCounter().GetValue())}
		}, "process_cpu_seconds_total: type GAUGE"},
		{"start time", func(m map[string]*dto.MetricFamily) { addProcessValue(m["process_start_time_seconds"], 0.5) },
			"process_start_time_seconds: "},
		{"max fds", func(m map[string]*dto.MetricFamily) { addProcessValue(m["process_max_fds"], 1) },
			"process_max_fds: "},
		{"cpu", func(m map[string]*dto.MetricFamily) { addProcessValue(m["process_cpu_seconds_total"], 0.1) },
			"process_cpu_seconds_total: "},
		{"rss", func(m map[string]*dto.MetricFamily) { addProcessValue(m["process_resident_memory_bytes"], 1<<30) },
			"process_resident_memory_bytes: "},
		{"open fds", func(m map[string]*dto.MetricFamily) { addProcessValue(m["process_open_fds"], -3) },
			"process_open_fds: "},
		{"network", func(m map[string]*dto.MetricFamily) { addProcessValue(m["process_network_transmit_bytes_total"], 1) },
			"process_network_transmit_bytes_total: "},
		{"labels", func(m map[string]*dto.MetricFamily) {
			m["process_open_fds"].Metric[0].Label = []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("b")}}
		}, "process_open_fds: NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own := map[string]*dto.MetricFamily{}
			for name, mf := range ref {
				own[name] = proto.Clone(mf).(*dto.MetricFamily)
			}
			tc.change(own)
			problems := compareProcessFamilies(ref, own, ref)
			if len(problems) != 1 || !strings.HasPrefix(problems[0], tc.want) {
				t.Fatalf("problems %q, want one starting %q", problems, tc.want)
			}
		})
	}
}

func addProcessValue(mf *dto.MetricFamily, d float64) {
	m := mf.GetMetric()[0]
	if m.Counter != nil {
		m.Counter.Value = proto.Float64(m.Counter.GetValue() + d)
	} else {
		m.Gauge.Value = proto.Float64(m.Gauge.GetValue() + d)
	}
}

// BenchmarkProcessCollector is one Collect of each: client_golang's
// (reading /proc/stat, limits and netstat anew, with procfs's parsers)
// beside this package's, metrics drained by another goroutine as a
// registry's Gather does.
func BenchmarkProcessCollector(b *testing.B) {
	own, err := NewProcessCollector(Paths{ProcFS: "/proc"}, ProcessCollectorOpts{ReportErrors: true})
	if err != nil {
		b.Fatal(err)
	}
	defer own.Close()
	for _, bc := range []struct {
		name string
		c    prometheus.Collector
	}{
		{"client_golang", collectors.NewProcessCollector(collectors.ProcessCollectorOpts{ReportErrors: true})},
		{"own", own},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ch := make(chan prometheus.Metric, 16)
			done := make(chan int)
			go func() {
				n := 0
				for range ch {
					n++
				}
				done <- n
			}()
			b.ReportAllocs()
			iterations := 0
			for b.Loop() {
				bc.c.Collect(ch)
				iterations++
			}
			close(ch)
			if n := <-done; n != 9*iterations {
				b.Fatalf("%d metrics in %d collections", n, iterations)
			}
		})
	}
}
