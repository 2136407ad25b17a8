package collector

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// BenchmarkHTTPScrape is what one Prometheus scrape costs the exporter with
// 20 real JVMs on the machine: the jvm and memory collectors, the Go and
// process collectors, text encoding and gzip, through promhttp as the
// binary serves it. "served" answers from a sample younger than
// --jvm.max-sample-age (the default flags); "fresh" reads every JVM.
func BenchmarkHTTPScrape(b *testing.B) {
	startBenchJVMs(b, 20)
	for _, bc := range []struct {
		name   string
		maxAge time.Duration
	}{{"served", time.Hour}, {"fresh", 0}} {
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
			reg := prometheus.NewRegistry()
			reg.MustRegister(
				NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{
					"jvm": NewJVMCollector(tracker, log.NewNopLogger()), "memory": memory,
				}),
				collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
				collectors.NewGoCollector(),
			)
			handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept-Encoding", "gzip")
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
			cpuBefore := cpuTime(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				scrape()
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpuBefore).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
