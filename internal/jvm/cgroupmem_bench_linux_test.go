package jvm

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// cgroupRead is one way of reading a process's memory cgroup in a scan:
// seen is the scan's, shared by the processes of one cgroup.
type cgroupRead func(t *Tracker, p procmem.Process, seen map[string]procmem.CgroupMemory, now time.Time) (procmem.CgroupMemory, error)

// readCgroupMemoryEachTime is the one-shot read: /proc/<pid>/cgroup read
// again and the cgroup directory found from sysfs, nothing kept.
func readCgroupMemoryEachTime(t *Tracker, p procmem.Process, seen map[string]procmem.CgroupMemory, now time.Time) (procmem.CgroupMemory, error) {
	key, err := t.read.cgroupKey(p, now)
	if err == nil {
		if cg, ok := seen[key]; ok {
			return cg, nil
		}
	}
	cg, err2 := readCgroupOnce(t.cfg.ProcFS, t.cfg.SysFS, p.PID)
	if err2 == nil && err == nil {
		seen[key] = cg
	}
	return cg, err2
}

// readCgroupOnce reads pid's memory cgroup with nothing kept.
func readCgroupOnce(procPath, sysfsPath string, pid int) (procmem.CgroupMemory, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/cgroup", procPath, pid))
	if err != nil {
		return procmem.CgroupMemory{}, err
	}
	r := procmem.NewCgroupReader(procPath, sysfsPath)
	defer func() { _ = r.Close() }()
	return r.Read(pid, string(b))
}

// BenchmarkCgroupMemory is the memory cgroup read of a scan for 20
// processes, each in its own memory cgroup as each executor pod is on
// Kubernetes, so no two share a read. An op is one process's read; every
// 20th also ends the scan (the reader closes what it no longer needs).
// The scans run at a time past procmem.YoungFor after the processes
// started, as settled scans do, so each process's /proc/<pid>/cgroup is
// the one the tracker kept. read-cgroup-memory is a one-shot read;
// kept-dirs is the tracker's read.
func BenchmarkCgroupMemory(b *testing.B) {
	const n = 20
	procs := startInOwnCgroups(b, n)
	now := time.Now().Add(procmem.YoungFor + time.Second)
	for _, v := range []struct {
		name string
		read cgroupRead
	}{
		{"read-cgroup-memory", readCgroupMemoryEachTime},
		{"kept-dirs", func(t *Tracker, p procmem.Process, seen map[string]procmem.CgroupMemory, now time.Time) (procmem.CgroupMemory, error) {
			return t.read.cgroupMemory(p, seen, now)
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			tracker, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
			if err != nil {
				b.Fatal(err)
			}
			defer tracker.Stop()
			seen := map[string]procmem.CgroupMemory{}
			endScan := func() {
				if tracker.read.cgroups != nil {
					tracker.read.cgroups.EndScan(nil)
				}
			}
			for _, p := range procs { // the first scan, which opens what is kept
				if _, err := v.read(tracker, p, seen, now); err != nil {
					b.Fatal(err)
				}
			}
			endScan()
			b.ReportAllocs()
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			i := 0
			for b.Loop() {
				if i == 0 {
					clear(seen)
				}
				if _, err := v.read(tracker, procs[i], seen, now); err != nil {
					b.Fatal(err)
				}
				if i++; i == n {
					endScan()
					i = 0
				}
			}
			reportCPU()
		})
	}
}

// startInOwnCgroups starts n sleeping processes, each in a memory cgroup
// of its own, and returns them as the process table sees them.
func startInOwnCgroups(tb testing.TB, n int) []procmem.Process {
	tb.Helper()
	pids := make([]int, n)
	paths := make([]string, n)
	for i := range pids {
		cg := testenv.NewMemoryCgroup(tb, 64<<20)
		cmd := exec.Command("sh", "-c", fmt.Sprintf("echo $$ > %s && exec sleep 900", cg.Procs()))
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids[i], paths[i] = cmd.Process.Pid, cg.Path
	}
	for i, pid := range pids {
		testenv.WaitFor(tb, time.Minute, fmt.Sprintf("process %d in cgroup %s, running sleep", pid, paths[i]), func() bool {
			cgroup, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			return strings.Contains(string(cgroup), ":"+paths[i]+"\n") && string(comm) == "sleep\n"
		})
	}
	w, err := procmem.NewProcessWatch("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	table, err := w.Scan(time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	procs := make([]procmem.Process, n)
	for i, pid := range pids {
		p, ok := table.Process(pid)
		if !ok {
			tb.Fatalf("process %d not in the table", pid)
		}
		procs[i] = p
	}
	return procs
}
