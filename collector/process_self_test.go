package collector

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"
)

func newTestProcessCollector(t testing.TB, paths Paths, opts ProcessCollectorOpts) *ProcessCollector {
	t.Helper()
	c, err := NewProcessCollector(paths, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// gatherProcess gathers c alone through a pedantic registry, which also
// holds what it collects to what it describes.
func gatherProcess(t testing.TB, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

// processValue is a family's one unlabelled value, NaN when it has another
// shape.
func processValue(mf *dto.MetricFamily) float64 {
	if len(mf.GetMetric()) != 1 || len(mf.GetMetric()[0].GetLabel()) != 0 {
		return math.NaN()
	}
	m := mf.GetMetric()[0]
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	return math.NaN()
}

// processFixture is a procfs root for the collector: the kernel's boot
// time, and the files of "self".
func processFixture(t *testing.T, stat, netstat string, fds int) Paths {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "self", "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "self", "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"stat":             "cpu  1 2 3 4 5 6 7 8 9 10\nbtime 1700000000\n",
		"self/stat":        stat,
		"self/net/netstat": netstat,
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range fds {
		if err := os.WriteFile(filepath.Join(root, "self", "fd", fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Paths{ProcFS: root}
}

const (
	fixtureSelfStat = "4242 (executor_export) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1234 567 0 0 20 0 12 0 360000 1262010368 7001 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n"
	fixtureNetstat  = "TcpExt: SyncookiesSent TW\nTcpExt: 0 5\nIpExt: InNoRoutes InOctets OutOctets\nIpExt: 0 123456789 98765\n"
)

// The values a fixture gives: CPU (1234+567)/100 s, start 1700000000 +
// 360000/100 s, rss 7001 pages, five entries under fd; the limits are
// this process's, which no fixture holds.
func TestProcessCollectorFixture(t *testing.T) {
	paths := processFixture(t, fixtureSelfStat, fixtureNetstat, 5)
	c := newTestProcessCollector(t, paths, ProcessCollectorOpts{ReportErrors: true})
	var files, as unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &files); err != nil {
		t.Fatal(err)
	}
	if err := unix.Getrlimit(unix.RLIMIT_AS, &as); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 18.01
# HELP process_max_fds Maximum number of open file descriptors.
# TYPE process_max_fds gauge
process_max_fds %v
# HELP process_network_receive_bytes_total Number of bytes received by the process over the network.
# TYPE process_network_receive_bytes_total counter
process_network_receive_bytes_total 1.23456789e+08
# HELP process_network_transmit_bytes_total Number of bytes sent by the process over the network.
# TYPE process_network_transmit_bytes_total counter
process_network_transmit_bytes_total 98765
# HELP process_open_fds Number of open file descriptors.
# TYPE process_open_fds gauge
process_open_fds 5
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes %v
# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7000036e+09
# HELP process_virtual_memory_bytes Virtual memory size in bytes.
# TYPE process_virtual_memory_bytes gauge
process_virtual_memory_bytes 1.262010368e+09
# HELP process_virtual_memory_max_bytes Maximum amount of virtual memory available in bytes.
# TYPE process_virtual_memory_max_bytes gauge
process_virtual_memory_max_bytes %v
`, formatFloat(float64(files.Cur)), formatFloat(float64(7001*os.Getpagesize())), formatFloat(float64(as.Cur)))
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}

	// Rewritten in place, the files are read anew through the kept
	// descriptors.
	if err := os.WriteFile(filepath.Join(paths.ProcFS, "self", "stat"), []byte(strings.Replace(fixtureSelfStat, " 1234 567 ", " 1300 600 ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(paths.ProcFS, "self", "net", "netstat"), []byte(strings.Replace(fixtureNetstat, "98765", "98766", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	got := gatherProcess(t, c)
	if v := processValue(got["process_cpu_seconds_total"]); v != 19 {
		t.Errorf("cpu after the rewrite: %v, want 19", v)
	}
	if v := processValue(got["process_network_transmit_bytes_total"]); v != 98766 {
		t.Errorf("transmitted after the rewrite: %v, want 98766", v)
	}
}

// formatFloat writes v as the text format does.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// A file that fails loses the families it gives, as in client_golang: an
// invalid metric that fails the Gather with ReportErrors, nothing
// otherwise. The start time, known from the start, stays.
func TestProcessCollectorReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(root string) error
		lost    []string
		wantErr string
	}{
		{
			name: "stat",
			breakIt: func(root string) error {
				return os.WriteFile(filepath.Join(root, "self", "stat"), []byte("4242 (x) S 1\n"), 0o644)
			},
			lost:    []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes"},
			wantErr: "stat: 2 fields after the command name",
		},
		{
			name: "netstat",
			breakIt: func(root string) error {
				return os.WriteFile(filepath.Join(root, "self", "net", "netstat"), []byte("IpExt: InOctets OutOctets\nIpExt: 1\n"), 0o644)
			},
			lost:    []string{"process_network_receive_bytes_total", "process_network_transmit_bytes_total"},
			wantErr: `"IpExt:" has 2 names and 1 values`,
		},
		{
			name:    "netstat gone",
			breakIt: func(root string) error { return os.RemoveAll(filepath.Join(root, "self", "net")) },
			wantErr: "", // the kept descriptor still reads the file it opened
		},
		{
			name:    "fd",
			breakIt: func(root string) error { return os.RemoveAll(filepath.Join(root, "self", "fd")) },
			lost:    []string{"process_open_fds"},
			wantErr: "no such file or directory",
		},
	} {
		for _, report := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/report=%v", tc.name, report), func(t *testing.T) {
				paths := processFixture(t, fixtureSelfStat, fixtureNetstat, 3)
				c := newTestProcessCollector(t, paths, ProcessCollectorOpts{ReportErrors: report})
				if n := testutil.CollectAndCount(c); n != 9 {
					t.Fatalf("%d metrics before, want 9", n)
				}
				if err := tc.breakIt(paths.ProcFS); err != nil {
					t.Fatal(err)
				}
				reg := prometheus.NewPedanticRegistry()
				reg.MustRegister(c)
				mfs, err := reg.Gather()
				if tc.wantErr == "" {
					if err != nil || len(mfs) != 9 {
						t.Fatalf("Gather: %d families, %v; want 9 and no error", len(mfs), err)
					}
					return
				}
				switch {
				case report && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
					t.Fatalf("Gather error %v, want containing %q", err, tc.wantErr)
				case !report && err != nil:
					t.Fatalf("Gather error %v without ReportErrors", err)
				}
				var names []string
				for _, mf := range mfs {
					names = append(names, mf.GetName())
				}
				if len(names) != 9-len(tc.lost) || !slices.Contains(names, "process_start_time_seconds") {
					t.Fatalf("families %q, want all but %q", names, tc.lost)
				}
				for _, lost := range tc.lost {
					if slices.Contains(names, lost) {
						t.Errorf("%s still there", lost)
					}
				}
			})
		}
	}
}

func TestProcessCollectorNeedsStatAndBootTime(t *testing.T) {
	paths := processFixture(t, fixtureSelfStat, fixtureNetstat, 1)
	if err := os.WriteFile(filepath.Join(paths.ProcFS, "stat"), []byte("cpu  1 2 3 4 5 6 7 8 9 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewProcessCollector(paths, ProcessCollectorOpts{}); err == nil || !strings.Contains(err.Error(), "boot time") {
		t.Errorf("without btime: %v", err)
	}
	paths = processFixture(t, "4242 (x)\n", fixtureNetstat, 1)
	if _, err := NewProcessCollector(paths, ProcessCollectorOpts{}); err == nil || !strings.Contains(err.Error(), "fields after the command name") {
		t.Errorf("with a short stat: %v", err)
	}
	if _, err := NewProcessCollector(Paths{ProcFS: t.TempDir()}, ProcessCollectorOpts{}); err == nil {
		t.Error("an empty root: no error")
	}
}

// Scrapes run at once (more than one Prometheus, the status page): the
// kept files' buffers are shared.
func TestProcessCollectorConcurrentScrapes(t *testing.T) {
	c := newTestProcessCollector(t, Paths{ProcFS: "/proc"}, ProcessCollectorOpts{ReportErrors: true})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := gatherProcess(t, c); len(got) != 9 || processValue(got["process_resident_memory_bytes"]) <= 0 {
					t.Errorf("%d families, rss %v", len(got), processValue(got["process_resident_memory_bytes"]))
					return
				}
			}
		})
	}
	wg.Wait()
}
