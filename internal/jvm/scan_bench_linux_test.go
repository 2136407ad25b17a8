package jvm

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// BenchmarkRefresh is one whole reading of the machine as the background
// sampling does it (discovery, 20 real JVMs' hsperfdata, process trees,
// cgroups), then the same with 500 more processes that are not JVMs: what
// they add is what a busy node costs beyond its JVMs. The settled readings
// are the steady state, every JVM older than procmem.YoungFor; the
// cgroup-reread one reads every JVM's /proc/<pid>/cgroup on every scan, as
// the tracker did before it kept them.
func BenchmarkRefresh(b *testing.B) {
	for i := range 20 {
		testjvm.Start(b, testjvm.Options{
			JVMArgs: []string{"-Xmx16m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"},
			Args:    []string{"--executor-id", strconv.Itoa(i), "--app-id", "app-bench", "--exit-after-s", "900"},
		})
	}
	started := time.Now() // after the last JVM's start
	run := func(b *testing.B, beforeEach func(*Tracker)) {
		tracker, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
		if err != nil {
			b.Fatal(err)
		}
		view, err := tracker.Refresh()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(view.JVMs)), "jvms")
		b.ReportAllocs()
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			beforeEach(tracker)
			if _, err := tracker.Refresh(); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU()
	}
	asIs := func(*Tracker) {}
	settled := func(b *testing.B, beforeEach func(*Tracker)) {
		time.Sleep(time.Until(started.Add(procmem.YoungFor + time.Second)))
		run(b, beforeEach)
	}
	b.Run("20-jvms", func(b *testing.B) { run(b, asIs) })
	b.Run("20-jvms-settled", func(b *testing.B) { settled(b, asIs) })
	b.Run("20-jvms-settled-cgroup-reread", func(b *testing.B) {
		settled(b, func(t *Tracker) { clear(t.recs.m) })
	})
	b.Run("20-jvms-plus-500-processes", func(b *testing.B) {
		testenv.StartSleepers(b, 500)
		// A process is read on every scan while young (procmem's
		// YoungFor); a node's are not.
		time.Sleep(31 * time.Second)
		run(b, asIs)
	})
}

// BenchmarkDiscovery is finding the JVMs among this machine's processes:
// FindCandidates looks at every process, the tracker's discovery at the
// processes the table says are new.
func BenchmarkDiscovery(b *testing.B) {
	w, err := procmem.NewProcessWatch("/proc")
	if err != nil {
		b.Fatal(err)
	}
	table, err := w.Scan(time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("uncached", func(b *testing.B) {
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			if _, err := FindCandidates("/proc", nil); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU()
	})
	b.Run("cached", func(b *testing.B) {
		d := newDiscovery("/proc")
		if _, err := d.find(table); err != nil {
			b.Fatal(err)
		}
		later, err := w.Scan(time.Now().Add(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			if _, err := d.find(later); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU()
	})
}
