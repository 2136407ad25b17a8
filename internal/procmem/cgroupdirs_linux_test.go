package procmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// sleepIn starts a process in the memory cgroup whose cgroup.procs file
// is procs, waits until /proc/<pid>/cgroup names path, and kills it when
// the test ends.
func sleepIn(t *testing.T, procs, path string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", fmt.Sprintf("echo $$ > %s && exec sleep 600", procs))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	testenv.WaitFor(t, time.Minute, fmt.Sprintf("process %d in cgroup %s", pid, path), func() bool {
		return strings.Contains(cgroupFileOf(t, pid), ":"+path+"\n")
	})
	return pid
}

func cgroupFileOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readLive(t *testing.T, r *CgroupReader, pid int) CgroupMemory {
	t.Helper()
	m, err := r.Read(pid, cgroupFileOf(t, pid))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A directory stays open while a scan reads it, and is closed at the end
// of the first scan that does not.
func TestCgroupReaderClosesUnusedDirs(t *testing.T) {
	a, b := testenv.NewMemoryCgroup(t, 64<<20), testenv.NewMemoryCgroup(t, 64<<20)
	pa, pb := sleepIn(t, a.Procs(), a.Path), sleepIn(t, b.Procs(), b.Path)
	r := NewCgroupReader("/proc", "/sys")
	defer r.Close()

	readLive(t, r, pa)
	readLive(t, r, pb)
	r.EndScan(nil)
	if na, nb := testenv.OpenFDsOn(t, a.Dir), testenv.OpenFDsOn(t, b.Dir); na != 1 || nb != 1 {
		t.Fatalf("after a scan that read both: %d and %d descriptors open on their directories, want 1 and 1", na, nb)
	}
	// The files a reading takes are closed after it.
	if files := testenv.OpenFDsBeneath(t, a.Dir); files != 0 {
		t.Fatalf("%d descriptors left on the files of %s", files, a.Dir)
	}
	if m := readLive(t, r, pa); m.Limit != 64<<20 {
		t.Fatalf("read again: %+v", m)
	}
	readLive(t, r, pa)
	if nb := testenv.OpenFDsOn(t, b.Dir); nb != 1 {
		t.Fatalf("closed before the scan ended: %d descriptors on %s", nb, b.Dir)
	}
	r.EndScan(nil)
	if na, nb := testenv.OpenFDsOn(t, a.Dir), testenv.OpenFDsOn(t, b.Dir); na != 1 || nb != 0 {
		t.Errorf("after a scan that read only %s: %d and %d descriptors open, want 1 and 0", a.Path, na, nb)
	}
	if nb := testenv.OpenFDsBeneath(t, b.Dir); nb != 0 {
		t.Errorf("%d descriptors left on the files of the closed %s", nb, b.Dir)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if na, files := testenv.OpenFDsOn(t, a.Dir), testenv.OpenFDsBeneath(t, a.Dir); na != 0 || files != 0 {
		t.Errorf("after Close: %d descriptors open on %s and %d on its files", na, a.Dir, files)
	}
	// Used again after Close, it opens what it needs.
	if m := readLive(t, r, pb); m.Path != b.Path || m.Limit != 64<<20 {
		t.Errorf("after Close: %+v", m)
	}
}

// Beyond its cap the reader reads a cgroup without keeping it.
func TestCgroupReaderCap(t *testing.T) {
	a, b := testenv.NewMemoryCgroup(t, 32<<20), testenv.NewMemoryCgroup(t, 48<<20)
	pa, pb := sleepIn(t, a.Procs(), a.Path), sleepIn(t, b.Procs(), b.Path)
	r := NewCgroupReader("/proc", "/sys")
	r.maxDirs = 1
	defer r.Close()
	for range 2 {
		if ma, mb := readLive(t, r, pa), readLive(t, r, pb); ma.Limit != 32<<20 || mb.Limit != 48<<20 {
			t.Errorf("limits %d, %d; want %d, %d", ma.Limit, mb.Limit, 32<<20, 48<<20)
		}
		if na, nb := testenv.OpenFDsOn(t, a.Dir), testenv.OpenFDsOn(t, b.Dir); na != 1 || nb != 0 {
			t.Errorf("%d and %d descriptors open, want 1 (kept) and 0 (over the cap)", na, nb)
		}
		r.EndScan(nil)
	}
}

// A cgroup removed and made again under the same path, as a pod restarted
// with the same uid, is read from the new directory; one removed while its
// process lives is a misconfiguration, not a process gone.
func TestCgroupReaderRecreatedCgroup(t *testing.T) {
	parent := testenv.NewMemoryCgroup(t, 256<<20)
	child := parent.Child(t, "pod", 32<<20)
	pid := sleepIn(t, child.Procs(), child.Path)
	r := NewCgroupReader("/proc", "/sys")
	defer r.Close()
	file := cgroupFileOf(t, pid)
	if m := readLive(t, r, pid); m.Limit != 32<<20 {
		t.Fatalf("limit %d, want %d", m.Limit, 32<<20)
	}
	r.EndScan(nil)

	move := func(to string) {
		t.Helper()
		if err := os.WriteFile(to, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	move(parent.Procs())
	if err := syscall.Rmdir(child.Dir); err != nil {
		t.Fatal(err)
	}
	// The caller's contents are as old as they may be: the process's
	// cgroup file read before the removal.
	_, err := r.Read(pid, file)
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no such cgroup under sysfs") {
		t.Fatalf("removed cgroup of a live process: %v; want a plain error saying so", err)
	}

	if err := os.Mkdir(child.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(child.Dir, "memory.limit_in_bytes"), []byte(strconv.Itoa(48<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	move(child.Procs())
	if got := cgroupFileOf(t, pid); got != file {
		t.Fatalf("the process's cgroup file changed: %q, was %q", got, file)
	}
	r.EndScan(nil)
	if m := readLive(t, r, pid); m.Limit != 48<<20 {
		t.Fatalf("after the cgroup was made again: limit %d, want the new one's %d", m.Limit, 48<<20)
	}
	r.EndScan(nil)

	// Made again while the reader still holds the old directory.
	move(parent.Procs())
	if err := syscall.Rmdir(child.Dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(child.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(child.Dir, "memory.limit_in_bytes"), []byte(strconv.Itoa(40<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	move(child.Procs())
	if m := readLive(t, r, pid); m.Limit != 40<<20 {
		t.Errorf("recreated under a kept directory: limit %d, want the new one's %d", m.Limit, 40<<20)
	}
}

// On live cgroups a CgroupReader, first and from its kept directories,
// reads what a lookup from scratch (ReadCgroupMemory) reads.
func TestCgroupReaderMatchesReadCgroupMemoryLive(t *testing.T) {
	var pids []int
	for i := range 3 {
		cg := testenv.NewMemoryCgroup(t, uint64(32+16*i)<<20)
		pids = append(pids, sleepIn(t, cg.Procs(), cg.Path))
	}
	pids = append(pids, os.Getpid(), 1)
	r := NewCgroupReader("/proc", "/sys")
	defer r.Close()
	for scan := range 3 {
		for _, pid := range pids {
			// Usage moves with the machine; a read between two equal
			// ReadCgroupMemory reads must equal them.
			testenv.WaitFor(t, time.Minute, fmt.Sprintf("scan %d, pid %d: equal reads", scan, pid), func() bool {
				before, err := ReadCgroupMemory("/proc", "/sys", pid)
				if err != nil {
					t.Fatal(err)
				}
				got := readLive(t, r, pid)
				after, err := ReadCgroupMemory("/proc", "/sys", pid)
				if err != nil {
					t.Fatal(err)
				}
				if before != after {
					return false
				}
				if got != before {
					t.Fatalf("scan %d, pid %d: CgroupReader %+v, ReadCgroupMemory %+v", scan, pid, got, before)
				}
				return true
			})
		}
		r.EndScan(nil)
	}
}
