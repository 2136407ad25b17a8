package jvm

import (
	"os"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// BenchmarkFindCandidates is the discovery pass over this machine's /proc.
func BenchmarkFindCandidates(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := FindCandidates("/proc", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadOneJVM reads and interprets one real JVM's hsperfdata the
// way a scan does: open beneath its root, read, parse, Stats.
func BenchmarkReadOneJVM(b *testing.B) {
	j := testjvm.Start(b, testjvm.Options{MainClass: testjvm.IdleClass, JVMArgs: []string{"-Xmx32m"}, Args: []string{"--exit-after-s", "300"}})
	cands, err := FindCandidates("/proc", nil)
	if err != nil {
		b.Fatal(err)
	}
	var c Candidate
	for _, cand := range cands {
		if cand.PID == j.PID {
			c = cand
		}
	}
	if c.PID == 0 {
		b.Fatalf("JVM %d not found among %+v", j.PID, cands)
	}
	uid := uint32(os.Geteuid())
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		data, err := ReadHsperf("/proc", c, uid, buf)
		if err != nil {
			b.Fatal(err)
		}
		buf = data
		snap, err := hsperf.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := snap.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}
