package collector

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// BenchmarkHTTPScrape is what one Prometheus scrape costs the exporter with
// 20 real JVMs on the machine: the jvm, exits and memory collectors, the Go and
// process collectors, text encoding and gzip, through the handler the
// binary serves. "served" answers from a sample younger than
// --jvm.max-sample-age (the default flags); "fresh" reads every JVM;
// "served-registry" is "served" with the per-JVM series gathered through
// a registry and encoded per scrape by promhttp, the anchor of the
// handler's rendering of each JVM's text once per reading.
func BenchmarkHTTPScrape(b *testing.B) {
	startBenchJVMs(b, *benchJVMs)
	settle(b)
	for _, bc := range []struct {
		name     string
		maxAge   time.Duration
		registry bool
	}{{"served", time.Hour, false}, {"served-registry", time.Hour, true}, {"fresh", 0, false}} {
		b.Run(bc.name, func(b *testing.B) {
			tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute,
				MaxProcesses: 1000, MaxAge: bc.maxAge}, log.NewNopLogger())
			if err != nil {
				b.Fatal(err)
			}
			memory, err := NewMemoryCollector(Paths{ProcFS: "/proc"}, log.NewNopLogger())
			if err != nil {
				b.Fatal(err)
			}
			exitsC, err := newExitsCollector(ExitsConfig{Retention: time.Hour, MaxSeries: 500}, tracker, newExitWitnessOf(nil), log.NewNopLogger())
			if err != nil {
				b.Fatal(err)
			}
			ec := NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{
				"jvm": NewJVMCollector(tracker, log.NewNopLogger()), "memory": memory, "exits": exitsC,
			})
			self := prometheus.NewRegistry()
			self.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
			opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true}
			var handler http.Handler
			if bc.registry {
				reg := prometheus.NewRegistry()
				reg.MustRegister(ec)
				handler = promhttp.HandlerFor(prometheus.Gatherers{reg, self}, opts)
			} else {
				handler = ec.Handler(self, opts)
			}
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
			scrape := func() int {
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
				return rec.Body.Len()
			}
			b.ReportMetric(float64(scrape()), "gzip-bytes")
			b.ReportAllocs()
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				scrape()
			}
			b.StopTimer()
			reportCPU()
		})
	}
}

// benchJVMs sets BenchmarkHTTPScrape's JVM count:
// go test -run '^$' -bench HTTPScrape ./collector/ -args -bench.jvms=100
var benchJVMs = flag.Int("bench.jvms", 20, "real JVMs BenchmarkHTTPScrape starts")

// settle waits until the JVMs just started are past the young window, in
// which the tracker reads a process again on every scan on purpose:
// executors live for minutes to hours, and their first 30 s are not what
// a node pays.
func settle(b *testing.B) {
	b.Helper()
	time.Sleep(31 * time.Second)
}

// startBenchJVMs starts n small real JVMs for the benchmarks.
func startBenchJVMs(b *testing.B, n int) []*testjvm.JVM {
	b.Helper()
	jvms := make([]*testjvm.JVM, n)
	for i := range jvms {
		jvms[i] = testjvm.Start(b, testjvm.Options{
			JVMArgs: []string{"-Xmx32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"},
			Args:    []string{"--executor-id", strconv.Itoa(i), "--app-id", "app-bench", "--exit-after-s", "900"},
		})
	}
	return jvms
}

// BenchmarkJVMScrape is one full jvm-collector scrape (discovery, 20
// hsperfdata files, process table, cgroups, metrics) with 20 real JVMs.
func BenchmarkJVMScrape(b *testing.B) {
	jvms := startBenchJVMs(b, 20)
	_, reg := newLiveJVMCollector(b)
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, j := range jvms {
		if _, identity := scrapeJVM(b, reg, j.PID); identity == nil {
			b.Fatalf("JVM %d not exported", j.PID)
		}
	}
	b.ReportMetric(float64(len(families)), "families")
	reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU()
}

// BenchmarkJstatGC is what the exporter replaces: one `jstat -gc` (a JVM
// of its own) for one JVM. Multiply by the number of JVMs to compare with
// BenchmarkJVMScrape.
func BenchmarkJstatGC(b *testing.B) {
	requireJstat(b)
	jvms := startBenchJVMs(b, 1)
	// jstat is a JVM of its own: count the CPU of the waited-for children
	// (the benchmark's JVMs are still running and not in it).
	reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_CHILDREN)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		jstatGC(b, jvms[0].PID)
	}
	b.StopTimer()
	reportCPU()
}
