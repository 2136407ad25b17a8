package jvm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

const fixtureBoot = 1700000000 // btime of the fixture procfs

// fixtureProcFS is a procfs directory whose files the test rewrites: the
// cache must follow them exactly when its policy says.
func fixtureProcFS(t *testing.T) (string, *Tracker) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "stat"), fmt.Sprintf("cpu  1 2 3 4 5 6 7 8 9 10\nbtime %d\n", fixtureBoot))
	tr, err := NewTracker(Config{ProcFS: dir, SysFS: dir, Retention: time.Minute, MaxProcesses: 10}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	return dir, tr
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupFileReadAgainWhileYoungAndEveryRefresh(t *testing.T) {
	dir, tr := fixtureProcFS(t)
	file := filepath.Join(dir, "42", "cgroup")
	start := time.Unix(fixtureBoot+1000, 0)
	p := procmem.Process{PID: 42, StartTime: start}
	steps := []struct {
		write string // written before the step; "" keeps the file
		at    time.Time
		want  string
	}{
		{"0::/a\n", start.Add(time.Second), "0::/a\n"},
		// Young: every scan reads it (a launcher moving itself into a cgroup).
		{"0::/b\n", start.Add(procmem.YoungFor - time.Nanosecond), "0::/b\n"},
		// No longer young: kept, until the refresh period has passed.
		{"0::/c\n", start.Add(procmem.YoungFor), "0::/b\n"},
		{"", start.Add(procmem.YoungFor - time.Nanosecond + procmem.RefreshEvery - time.Nanosecond), "0::/b\n"},
		{"", start.Add(procmem.YoungFor - time.Nanosecond + procmem.RefreshEvery), "0::/c\n"},
		{"0::/d\n", start.Add(procmem.YoungFor + procmem.RefreshEvery), "0::/c\n"},
	}
	for i, s := range steps {
		if s.write != "" {
			writeFile(t, file, s.write)
		}
		got, err := tr.read.cgroupKey(p, s.at)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != s.want {
			t.Errorf("step %d at start+%v: got %q, want %q", i, s.at.Sub(start), got, s.want)
		}
	}
}

func TestCgroupFileNotServedToAReusedPID(t *testing.T) {
	dir, tr := fixtureProcFS(t)
	file := filepath.Join(dir, "42", "cgroup")
	now := time.Unix(fixtureBoot+10000, 0)
	old := procmem.Process{PID: 42, StartTime: now.Add(-time.Hour)}
	writeFile(t, file, "0::/old\n")
	if got, err := tr.read.cgroupKey(old, now); err != nil || got != "0::/old\n" {
		t.Fatalf("first read: %q, %v", got, err)
	}
	writeFile(t, file, "0::/new\n")
	// Started well before now: only its start tells it from the old one.
	reused := procmem.Process{PID: 42, StartTime: now.Add(-time.Minute)}
	if got, err := tr.read.cgroupKey(reused, now.Add(time.Second)); err != nil || got != "0::/new\n" {
		t.Errorf("reused pid: %q, %v; want the new process's contents", got, err)
	}
}

func TestCgroupFilesOfGoneProcessesForgotten(t *testing.T) {
	dir, tr := fixtureProcFS(t)
	for _, pid := range []int{42, 43} {
		// Started 1000 s after boot (starttime in clock ticks).
		writeFile(t, filepath.Join(dir, fmt.Sprint(pid), "stat"),
			fmt.Sprintf("%d (java) S 1 %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 100000 1000 100 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", pid, pid, pid))
		writeFile(t, filepath.Join(dir, fmt.Sprint(pid), "cgroup"), "0::/a\n")
	}
	w, err := procmem.NewProcessWatch(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(fixtureBoot+2000, 0)
	table, err := w.Scan(now)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{42, 43} {
		p, ok := table.Process(pid)
		if !ok {
			t.Fatalf("pid %d not in the fixture's table", pid)
		}
		if _, err := tr.read.cgroupKey(p, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "43")); err != nil {
		t.Fatal(err)
	}
	if table, err = w.Scan(now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	tr.recs.forget(table, now, time.Hour, 100)
	if _, ok := tr.recs.m[42]; !ok {
		t.Error("the entry of a live process was dropped")
	}
	if _, ok := tr.recs.m[43]; ok {
		t.Error("the entry of a gone process is kept")
	}
}

// The tracker keeps a JVM's cgroup directory open from scan to scan, and
// closes it after the first scan that reads no process in it, and on Stop.
func TestCgroupDirClosedWhenNoJVMUsesIt(t *testing.T) {
	procs := startInOwnCgroups(t, 2)
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 10}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Stop()
	w, err := procmem.NewProcessWatch("/proc")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dirOf := func(p procmem.Process) string {
		m, err := tr.read.cgroupMemory(p, map[string]procmem.CgroupMemory{}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if m.Version == 2 {
			return filepath.Join("/sys/fs/cgroup", m.Path)
		}
		return filepath.Join("/sys/fs/cgroup/memory", m.Path)
	}
	scan := func(read ...procmem.Process) {
		t.Helper()
		table, err := w.Scan(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]procmem.CgroupMemory{}
		for _, p := range read {
			if _, err := tr.read.cgroupMemory(p, seen, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		tr.recs.forget(table, time.Now(), time.Hour, 100)
		tr.read.closeUnusedCgroups(nil)
	}
	a, b := dirOf(procs[0]), dirOf(procs[1])
	scan(procs...)
	if na, nb := testenv.OpenFDsOn(t, a), testenv.OpenFDsOn(t, b); na != 1 || nb != 1 {
		t.Fatalf("after a scan that read both: %d, %d descriptors open on their cgroups, want 1, 1", na, nb)
	}
	scan(procs[0])
	if na, nb := testenv.OpenFDsOn(t, a), testenv.OpenFDsOn(t, b); na != 1 || nb != 0 {
		t.Errorf("after a scan that read only the first: %d, %d descriptors open, want 1, 0", na, nb)
	}
	tr.Stop()
	if na := testenv.OpenFDsOn(t, a); na != 0 {
		t.Errorf("after Stop: %d descriptors open on %s", na, a)
	}
}
