package procmem

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

func TestParseStatusHWM(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"Name:\tjava\nVmPeak:\t 4194304 kB\nVmHWM:\t  102400 kB\nVmRSS:\t 51200 kB\n", 102400 << 10, true},
		{"VmHWM:\t0 kB", 0, true},
		{"Name:\tkthreadd\nThreads:\t1\n", 0, false}, // a kernel thread has no memory lines
		{"VmHWM:\t 12 MB\n", 0, false},
		{"VmHWM:\t -1 kB\n", 0, false},
		{"VmHWM:\t 18014398509481984 kB\n", 0, false}, // 2^54 kB does not fit in bytes
		{"VmHWM:\n", 0, false},
		{"XVmHWM:\t 1 kB\n", 0, false},
		{"", 0, false},
	} {
		got, err := parseStatusHWM([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Every live process's status, parsed by procfs (the library this fast
// path stands beside) and by parseStatusHWM, gives the same VmHWM.
func TestParseStatusHWMAgreesWithProcfs(t *testing.T) {
	rfs, files := liveProcFiles(t, "status")
	withPeak := 0
	for pid, data := range files {
		p, err := rfs.Proc(pid)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.NewStatus()
		if err != nil {
			t.Fatalf("pid %d: procfs: %v", pid, err)
		}
		got, err := parseStatusHWM(data)
		if hasLine := strings.Contains(string(data), "\nVmHWM:"); hasLine != (err == nil) {
			t.Errorf("pid %d: %v, though the file has a VmHWM line: %v", pid, err, hasLine)
		}
		if got != want.VmHWM {
			t.Errorf("pid %d: VmHWM %d, procfs %d", pid, got, want.VmHWM)
		}
		if got > 0 {
			withPeak++
		}
	}
	if withPeak == 0 {
		t.Fatal("no process with a VmHWM: nothing compared")
	}
}

// The reader's figure for this process lies between procfs's before and
// after it; a gone pid is an error (a kernel thread's status, which has
// no VmHWM line, is TestParseStatusHWMAgreesWithProcfs's).
func TestPeakReaderLive(t *testing.T) {
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self, err := fs.Self()
	if err != nil {
		t.Fatal(err)
	}
	r := NewPeakReader("/proc")
	for range 2 {
		before, err := self.NewStatus()
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.ResidentPeak(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		after, err := self.NewStatus()
		if err != nil {
			t.Fatal(err)
		}
		if got < before.VmHWM || got > after.VmHWM || got == 0 {
			t.Errorf("VmHWM %d, procfs %d before and %d after", got, before.VmHWM, after.VmHWM)
		}
	}
	if _, err := r.ResidentPeak(1 << 30); err == nil {
		t.Error("a pid beyond pid_max has a resident peak")
	}
}

// A status file reached through a symlink is not read.
func TestPeakReaderFollowsNoSymlink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(outside, []byte("VmHWM:\t 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "7", "status")); err != nil {
		t.Fatal(err)
	}
	r := NewPeakReader(dir)
	if v, err := r.ResidentPeak(7); err == nil {
		t.Errorf("read %d through a symlink", v)
	}
}
