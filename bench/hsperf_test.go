// Package bench holds the repository's reproducible benchmarks: run.sh
// (the exporter against node_exporter and jstat on real JVMs) and these Go
// benchmarks of the per-JVM hot path. Results: docs/performance.md.
package bench

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// BenchmarkHsperfParseStats is the CPU part of reading one JVM: parsing its
// hsperfdata (captured from real JDK 17 JVMs, one per GC) and deriving the
// heap, pools, GC and thread figures the collector exports.
func BenchmarkHsperfParseStats(b *testing.B) {
	for _, gc := range []string{"g1", "parallel", "serial", "shenandoah", "z"} {
		raw, err := os.ReadFile(filepath.Join("..", "internal", "hsperf", "testdata", gc+".hsperf"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(gc, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for i := 0; i < b.N; i++ {
				snap, err := hsperf.Parse(raw)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := snap.Stats(); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU()
		})
	}
}
