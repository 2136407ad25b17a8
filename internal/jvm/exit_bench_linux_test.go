package jvm

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// BenchmarkExitsWork is what telling JVMs' ends and finding JVMs without
// hsperfdata adds to a scan with 20 real JVMs: the check of each JVM's
// held file (observe), the look for JVMs gone (findExits) and for java
// processes without a file (jvmsIn). Compare with BenchmarkRefresh.
func BenchmarkExitsWork(b *testing.B) {
	for i := range 20 {
		testjvm.Start(b, testjvm.Options{
			JVMArgs: []string{"-Xmx16m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"},
			Args:    []string{"--executor-id", strconv.Itoa(i), "--app-id", "app-bench", "--exit-after-s", "900"},
		})
	}
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tr.Stop)
	view, err := tr.Refresh()
	if err != nil {
		b.Fatal(err)
	}
	tr.refreshMu.Lock()
	defer tr.refreshMu.Unlock()
	now := time.Now()
	table, err := tr.procs.Scan(now)
	if err != nil {
		b.Fatal(err)
	}
	var candidates []Candidate
	for _, j := range view.JVMs {
		if j.Counters == CountersHsperf {
			candidates = append(candidates, Candidate{PID: j.PID, NSPID: j.NSPID})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range view.JVMs {
			j := &view.JVMs[k]
			p, _ := table.Process(j.PID)
			tr.ends.observe(nil, p, 0, procmem.Root{}, j, gcMark{}, now)
		}
		if jvms := jvmsIn(table, candidates); len(jvms) < len(candidates) {
			b.Fatalf("%d JVMs found, %d candidates", len(jvms), len(candidates))
		}
		if gone := tr.ends.find(table, tr.ids, now); len(gone) != 0 {
			b.Fatalf("%d JVMs gone", len(gone))
		}
	}
	b.ReportMetric(float64(len(view.JVMs)), "jvms")
}
