package procmem

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// BenchmarkNewProcessTableRealProc scans this machine's /proc as it is, and
// again with 500 extra sleeping processes, as on a busy worker node.
func BenchmarkNewProcessTableRealProc(b *testing.B) {
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B) {
		table, err := NewProcessTable(fs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(table.PIDs())), "procs")
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := NewProcessTable(fs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("as-is", run)
	b.Run("plus-500-sleepers", func(b *testing.B) {
		testenv.StartSleepers(b, 500)
		run(b)
	})
}

// BenchmarkScan is one scan's process reading as the tracker does it: the
// table, then the tree of one process (this one) — by reading every
// process (NewProcessTable, procfs) or with a ProcessWatch (what changed
// and the tree). cpu-ns/op is the CPU the process spent, kernel included.
func BenchmarkScan(b *testing.B) {
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		b.Fatal(err)
	}
	self := os.Getpid()
	run := func(b *testing.B) {
		b.Run("table", func(b *testing.B) {
			b.ReportAllocs()
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for b.Loop() {
				table, err := NewProcessTable(fs)
				if err != nil {
					b.Fatal(err)
				}
				table.TreeRSS(self)
			}
			reportCPU()
		})
		b.Run("watch", func(b *testing.B) {
			w, err := NewProcessWatch("/proc")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.Scan(time.Now()); err != nil {
				b.Fatal(err)
			}
			// Far enough from the first scan that nothing is young, never
			// as far as the refresh.
			now := time.Now().Add(YoungFor)
			reads := w.Reads
			b.ReportAllocs()
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for b.Loop() {
				table, err := w.Scan(now)
				if err != nil {
					b.Fatal(err)
				}
				table.TreeRSS(self)
			}
			reportCPU()
			b.ReportMetric(float64(w.Reads-reads)/float64(b.N), "stat-reads/op")
		})
	}
	b.Run("as-is", run)
	b.Run("plus-500-sleepers", func(b *testing.B) {
		testenv.StartSleepers(b, 500)
		run(b)
	})
}

// BenchmarkParseStat reads and parses this process's stat: procfs's
// Proc.Stat against the watch's fast path.
func BenchmarkParseStat(b *testing.B) {
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		b.Fatal(err)
	}
	p, err := fs.Proc(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("procfs", func(b *testing.B) {
		b.ReportAllocs()
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			if _, err := p.Stat(); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU()
	})
	b.Run("fast", func(b *testing.B) {
		w, err := NewProcessWatch("/proc")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			if _, ok := w.read(p.PID); !ok {
				b.Fatal("no stat")
			}
		}
		reportCPU()
	})
}

// BenchmarkNewProcessTableFixture scans a fake /proc of n processes: the
// parsing cost without the kernel's cost of generating stat files.
func BenchmarkNewProcessTableFixture(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			fs := writeFakeProc(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewProcessTable(fs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTreeRSS sums one executor's tree (a JVM with a python daemon and
// 16 workers) in a table of 1000 processes.
func BenchmarkTreeRSS(b *testing.B) {
	fs := writeFakeProc(b, 1000)
	table, err := NewProcessTable(fs)
	if err != nil {
		b.Fatal(err)
	}
	const jvm = 10
	want := uint64(os.Getpagesize()) * 1000
	if got := table.TreeRSS(jvm); got.JVM != want || got.Python != 17*want {
		b.Fatalf("fixture tree: %+v", got)
	}
	b.ReportAllocs()
	for b.Loop() {
		table.TreeRSS(jvm)
	}
}

func BenchmarkReadCgroupMemoryLive(b *testing.B) {
	if _, err := ReadCgroupMemory("/proc", "/sys", os.Getpid()); err != nil {
		b.Skipf("no readable memory cgroup here: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadCgroupMemory("/proc", "/sys", os.Getpid()); err != nil {
			b.Fatal(err)
		}
	}
}

// writeFakeProc writes a /proc with n processes: pid 10 is a JVM, 11 its
// python daemon, 12..27 the daemon's workers, the rest children of pid 1.
func writeFakeProc(b *testing.B, n int) procfs.FS {
	b.Helper()
	dir := b.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(filepath.Join(dir, "stat"), "cpu  1 2 3 4 5 6 7 8 9 10\nbtime 1700000000\n")
	for i := range n {
		pid := i + 1
		comm, ppid := "worker", 1
		switch {
		case pid == 1:
			comm, ppid = "init", 0
		case pid == 10:
			comm = "java"
		case pid == 11:
			comm, ppid = "python3", 10
		case pid >= 12 && pid < 28:
			comm, ppid = "python3", 11
		}
		write(filepath.Join(dir, strconv.Itoa(pid), "stat"), fakeStat(pid, comm, ppid, uint64(1000+pid), 1000))
	}
	fs, err := procfs.NewFS(dir)
	if err != nil {
		b.Fatal(err)
	}
	return fs
}

func fakeStat(pid int, comm string, ppid int, startTicks uint64, rssPages int) string {
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 %d "+strconv.Itoa(fixtureVSize)+" %d "+
		"18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 2 3 4 5 6 7 0\n",
		pid, comm, ppid, pid, pid, startTicks, rssPages)
}

// fixtureVSize is every fixture process's address space (stat field 23).
const fixtureVSize = 3133440
