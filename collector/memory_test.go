package collector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newTestMemoryCollector(t testing.TB, fixture string) Collector {
	t.Helper()
	c, err := NewMemoryCollector(Paths{ProcFS: filepath.Join("testdata", "memory", fixture)}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collectorFunc registers a Collector for testutil the way the binary does.
type collectorFunc struct{ c Collector }

func (f collectorFunc) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(f, ch) }
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { _ = f.c.Update(ch) }

func TestMemoryCollectorFixture(t *testing.T) {
	const want = `
# HELP executor_node_memory_available_bytes Memory available for new work without swapping (MemAvailable).
# TYPE executor_node_memory_available_bytes gauge
executor_node_memory_available_bytes 2.287173632e+09
# HELP executor_node_memory_committed_as_bytes Memory promised to processes (Committed_AS).
# TYPE executor_node_memory_committed_as_bytes gauge
executor_node_memory_committed_as_bytes 1.9456e+10
# HELP executor_node_memory_pressure_stall_seconds_total Time some (or all, kind=full) non-idle tasks were stalled waiting for memory (/proc/pressure/memory).
# TYPE executor_node_memory_pressure_stall_seconds_total counter
executor_node_memory_pressure_stall_seconds_total{kind="full"} 23.456789
executor_node_memory_pressure_stall_seconds_total{kind="some"} 123.456789
# HELP executor_node_memory_swap_free_bytes Swap space unused (SwapFree).
# TYPE executor_node_memory_swap_free_bytes gauge
executor_node_memory_swap_free_bytes 2.048e+09
# HELP executor_node_memory_total_bytes Usable RAM (MemTotal).
# TYPE executor_node_memory_total_bytes gauge
executor_node_memory_total_bytes 1.6709943296e+10
# HELP executor_node_oom_kills_total Processes killed by the kernel OOM killer on this node, global and cgroup kills alike (/proc/vmstat oom_kill).
# TYPE executor_node_oom_kills_total counter
executor_node_oom_kills_total 7
`
	c := collectorFunc{newTestMemoryCollector(t, "full")}
	names := []string{
		"executor_node_memory_available_bytes", "executor_node_memory_committed_as_bytes",
		"executor_node_memory_pressure_stall_seconds_total", "executor_node_memory_swap_free_bytes",
		"executor_node_memory_total_bytes", "executor_node_oom_kills_total",
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != len(meminfoFields)+3 {
		t.Fatalf("got %d series, want %d meminfo fields + 2 PSI + 1 oom_kill", n, len(meminfoFields))
	}
}

// scrapeSuccess runs one collector through the framework's fan-out and
// returns executor_scrape_collector_success and the series it produced.
func scrapeSuccess(t *testing.T, name string, c Collector) (float64, map[string]bool) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{name: c}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	success := -1.0
	for _, mf := range families {
		seen[mf.GetName()] = true
		if mf.GetName() == "executor_scrape_collector_success" {
			success = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return success, seen
}

func TestMemoryCollectorDegradesPerSource(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		success float64
		present []string
		absent  []string
	}{
		{
			fixture: "full", success: 1,
			present: []string{"executor_node_memory_total_bytes", "executor_node_memory_pressure_stall_seconds_total", "executor_node_oom_kills_total"},
		},
		{
			// A kernel without PSI: the series are absent and that is no failure.
			fixture: "nopsi", success: 1,
			present: []string{"executor_node_memory_total_bytes", "executor_node_oom_kills_total"},
			absent:  []string{"executor_node_memory_pressure_stall_seconds_total"},
		},
		{
			// A corrupt meminfo fails the collector but costs only its own series.
			fixture: "malformed", success: 0,
			present: []string{"executor_node_memory_pressure_stall_seconds_total", "executor_node_oom_kills_total"},
			absent:  []string{"executor_node_memory_total_bytes"},
		},
		{
			fixture: "badvmstat", success: 0,
			present: []string{"executor_node_memory_total_bytes", "executor_node_memory_pressure_stall_seconds_total"},
			absent:  []string{"executor_node_oom_kills_total"},
		},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			success, seen := scrapeSuccess(t, "memory", newTestMemoryCollector(t, tc.fixture))
			if success != tc.success {
				t.Errorf("executor_scrape_collector_success = %v, want %v", success, tc.success)
			}
			for _, name := range tc.present {
				if !seen[name] {
					t.Errorf("%s missing", name)
				}
			}
			for _, name := range tc.absent {
				if seen[name] {
					t.Errorf("%s present, want absent", name)
				}
			}
		})
	}
}

func TestParseVMStatOOMKill(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    uint64
		found   bool
		wantErr bool
	}{
		{name: "present", in: "nr_free_pages 1\noom_kill 42\npgfault 9\n", want: 42, found: true},
		{name: "old kernel without oom_kill", in: "nr_free_pages 1\npgfault 9\n"},
		{name: "empty", in: ""},
		{name: "prefix is not a match", in: "oom_kill_extra 3\n"},
		{name: "not a number", in: "oom_kill x\n", wantErr: true},
		{name: "negative", in: "oom_kill -1\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := parseVMStatOOMKill([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want || found != tc.found {
				t.Fatalf("got (%d, %v), want (%d, %v)", got, found, tc.want, tc.found)
			}
		})
	}
}

func FuzzParseVMStatOOMKill(f *testing.F) {
	for _, fixture := range []string{"full", "badvmstat"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "memory", fixture, "vmstat")); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{"", "\n", "oom_kill 3\n", "oom_kill A", "oom_kill 0\xff", "oom_kill \x90",
		"oom_kill 18446744073709551616\n", "pgfault 1\noom_kill\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, found, err := parseVMStatOOMKill(data)
		if err != nil && (found || n != 0) {
			t.Fatalf("error %v with a result (%d, %v)", err, n, found)
		}
	})
}

// BenchmarkMemoryScrape measures one full scrape of the memory collector
// against this machine's real /proc.
func BenchmarkMemoryScrape(b *testing.B) {
	c, err := NewMemoryCollector(Paths{ProcFS: "/proc"}, log.NewNopLogger())
	if err != nil {
		b.Fatal(err)
	}
	ch := make(chan prometheus.Metric, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Update(ch); err != nil {
			b.Fatal(err)
		}
		for len(ch) > 0 {
			<-ch
		}
	}
}
