package jvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"
)

// fakeProc builds a procfs-like tree: <dir>/<pid>/status with an NSpid
// line and <dir>/<pid>/root as a plain directory standing for the
// process's root. There are no ns links, so every process is its own group
// and its status is read, which is the path a container takes.
type fakeProc struct {
	t   *testing.T
	dir string
}

func newFakeProc(t *testing.T) *fakeProc {
	f := &fakeProc{t: t, dir: t.TempDir()}
	mustWrite(t, filepath.Join(f.dir, "stat"), []byte(fmt.Sprintf("cpu  1 2 3 4 5 6 7 8 9 10\nbtime %d\n", fixtureBoot)))
	return f
}

func (f *fakeProc) process(pid int, nspids string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, strconv.Itoa(pid))
	if err := os.MkdirAll(filepath.Join(p, "root", "tmp"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "status"), []byte("Name:\tjava\nNSpid:\t"+nspids+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
	// A process table lists it: started 1000 s after boot.
	stat := fmt.Sprintf("%d (java) S 1 %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 100000 1000 100 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", pid, pid, pid)
	if err := os.WriteFile(filepath.Join(p, "stat"), []byte(stat), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return filepath.Join(p, "root")
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestFindCandidates(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run("fallback="+strconv.FormatBool(fallback), func(t *testing.T) {
			openat2Unsupported.Store(fallback)
			defer openat2Unsupported.Store(false)
			testFindCandidates(t)
		})
	}
}

func testFindCandidates(t *testing.T) {
	f := newFakeProc(t)
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "hsperfdata_host", "7"), []byte("host secret"))

	// A container JVM: host pid 1000, pid 7 inside.
	root := f.process(1000, "1000\t7")
	mustWrite(t, filepath.Join(root, "tmp", "hsperfdata_spark", "7"), []byte("x"))
	// Files of other pids and non-numeric names in the same directory.
	mustWrite(t, filepath.Join(root, "tmp", "hsperfdata_spark", "8"), []byte("x"))
	mustWrite(t, filepath.Join(root, "tmp", "hsperfdata_spark", "007"), []byte("x"))
	mustWrite(t, filepath.Join(root, "tmp", "hsperfdata_spark", "7.tmp"), []byte("x"))
	mustWrite(t, filepath.Join(root, "tmp", "unrelated", "7"), []byte("x"))

	// A host JVM whose pid is the same inside and out.
	root = f.process(1001, "1001")
	mustWrite(t, filepath.Join(root, "tmp", "hsperfdata_root", "1001"), []byte("x"))

	// A process whose /tmp/hsperfdata_x is an absolute symlink: followed,
	// it would resolve on the host.
	root = f.process(1002, "1002\t7")
	mustSymlink(t, filepath.Join(outside, "hsperfdata_host"), filepath.Join(root, "tmp", "hsperfdata_evil"))

	// A process whose /tmp itself is a symlink out.
	root = f.process(1003, "1003\t7")
	if err := os.Remove(filepath.Join(root, "tmp")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, outside, filepath.Join(root, "tmp"))

	// A process without /tmp, one without a status, and non-pid entries.
	root = f.process(1004, "1004")
	if err := os.Remove(filepath.Join(root, "tmp")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(f.dir, "1005", "root", "tmp", "hsperfdata_a", "1005"), []byte("x"))
	mustWrite(t, filepath.Join(f.dir, "self", "status"), []byte("NSpid:\t1\n"))
	mustWrite(t, filepath.Join(f.dir, "meminfo"), []byte("MemTotal: 1 kB\n"))

	got, err := FindCandidates(f.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Candidate{
		{PID: 1000, NSPID: 7, Dir: "hsperfdata_spark"},
		{PID: 1001, NSPID: 1001, Dir: "hsperfdata_root"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FindCandidates = %+v, want %+v", got, want)
	}
	// A skipped pid (the tracker skips the kernel's threads) is not looked at.
	skipped, err := FindCandidates(f.dir, func(pid int) bool { return pid == 1001 })
	if err != nil || !reflect.DeepEqual(skipped, want[:1]) {
		t.Fatalf("FindCandidates skipping 1001 = %+v, %v; want %+v", skipped, err, want[:1])
	}

	uid := uint32(os.Geteuid())
	data, err := ReadHsperf(f.dir, want[0], uid, nil)
	if err != nil || string(data) != "x" {
		t.Fatalf("ReadHsperf(%+v) = %q, %v", want[0], data, err)
	}
	if _, err := ReadHsperf(f.dir, want[0], uid+1, nil); !errors.Is(err, ErrUntrusted) {
		t.Errorf("a file owned by another uid: err = %v, want ErrUntrusted", err)
	}
	// Asked directly for the symlinked paths, the reader still refuses.
	for _, c := range []Candidate{{PID: 1002, NSPID: 7, Dir: "hsperfdata_evil"}, {PID: 1003, NSPID: 7, Dir: "hsperfdata_host"}} {
		if data, err := ReadHsperf(f.dir, c, uid, nil); !errors.Is(err, ErrUntrusted) {
			t.Errorf("ReadHsperf(%+v) through a symlink = %q, %v; want ErrUntrusted", c, data, err)
		}
	}
}

func TestReadHsperfRefuses(t *testing.T) {
	f := newFakeProc(t)
	root := f.process(2000, "2000")
	dir := filepath.Join(root, "tmp", "hsperfdata_root")
	c := Candidate{PID: 2000, NSPID: 2000, Dir: "hsperfdata_root"}
	uid := uint32(os.Geteuid())

	// A symlink as the file itself, pointing at a readable host file.
	mustSymlink(t, "/etc/hostname", filepath.Join(dir, "2000"))
	if _, err := ReadHsperf(f.dir, c, uid, nil); !errors.Is(err, ErrUntrusted) {
		t.Errorf("symlinked file: err = %v, want ErrUntrusted", err)
	}
	// A FIFO must be refused, not block the scan.
	os.Remove(filepath.Join(dir, "2000"))
	if err := syscall.Mkfifo(filepath.Join(dir, "2000"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadHsperf(f.dir, c, uid, nil); !errors.Is(err, ErrUntrusted) {
		t.Errorf("FIFO: err = %v, want ErrUntrusted", err)
	}
	// A file larger than the cap.
	os.Remove(filepath.Join(dir, "2000"))
	mustWrite(t, filepath.Join(dir, "2000"), make([]byte, MaxHsperfBytes+1))
	if _, err := ReadHsperf(f.dir, c, uid, nil); err == nil {
		t.Error("a file over the cap was read")
	}
	// Gone.
	os.Remove(filepath.Join(dir, "2000"))
	if _, err := ReadHsperf(f.dir, c, uid, nil); !isGone(err) {
		t.Errorf("missing file: err = %v, want not-exist", err)
	}
}
