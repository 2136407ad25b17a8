package procmem

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/prometheus/procfs"
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
		for range 500 {
			cmd := exec.Command("sleep", "600")
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
			})
		}
		run(b)
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
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 %d 3133440 %d "+
		"18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 2 3 4 5 6 7 0\n",
		pid, comm, ppid, pid, pid, startTicks, rssPages)
}
