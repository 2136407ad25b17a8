package procmem

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Until sleep has exec'd and its loader is done, its resident memory
	// moves between two reads: the tests compare readings made apart.
	statm := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "statm")
	var last []byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(statm)
		if err != nil {
			t.Fatal(err)
		}
		comm, _ := os.ReadFile(filepath.Join(filepath.Dir(statm), "comm"))
		if string(comm) == "sleep\n" && bytes.Equal(b, last) {
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep %d did not settle: comm %q, statm %q", cmd.Process.Pid, comm, b)
		}
		last = b
	}
}

// newProcfsWatch is a watch of this machine's /proc, which keeps stat
// files, closed when the test ends.
func newProcfsWatch(t *testing.T) *ProcessWatch {
	t.Helper()
	w, err := NewProcessWatch("/proc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if w.maxStatFDs == 0 {
		t.Fatal("/proc is not procfs here")
	}
	return w
}

// TestWatchKeepsStatOpenForWhatIsAskedEveryScan: a process asked about in
// two scans in a row keeps its stat file open, reads the same through it,
// loses it when a scan passes without it, and once it exits reads as gone
// rather than as whatever has its pid.
func TestWatchKeepsStatOpenForWhatIsAskedEveryScan(t *testing.T) {
	cmd := startSleep(t)
	pid := cmd.Process.Pid
	w := newProcfsWatch(t)
	now := time.Now().Add(YoungFor) // nothing young: only what is asked is read
	scan := func(ask bool) (Process, bool) {
		t.Helper()
		now = now.Add(time.Second)
		table, err := w.Scan(now)
		if err != nil {
			t.Fatal(err)
		}
		if !ask {
			return Process{}, false
		}
		return table.Process(pid)
	}
	kept := func() bool { _, ok := w.statFDs[pid]; return ok }

	for i := range 3 {
		if _, ok := scan(true); !ok {
			t.Fatalf("scan %d: sleep %d not found", i, pid)
		}
	}
	if !kept() {
		t.Fatal("the stat of a process asked about in consecutive scans is not kept open")
	}
	p, ok := scan(true)
	want, err := procfs.NewFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	proc, err := want.Proc(pid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := proc.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if !ok || p.Comm != st.Comm || p.PPID != st.PPID || p.RSS != uint64(st.ResidentMemory()) {
		t.Errorf("read through the kept file: %+v, %v; procfs: comm %q ppid %d rss %d", p, ok, st.Comm, st.PPID, st.ResidentMemory())
	}

	scan(false)
	scan(false)
	if kept() {
		t.Error("the stat file is kept after a scan that did not ask for it")
	}
	for range 3 {
		scan(true)
	}
	if !kept() {
		t.Fatal("not kept open again")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if p, ok := scan(true); ok {
		t.Errorf("a process that exited reads as %+v", p)
	}
	if kept() {
		t.Error("the stat file of a process that exited is kept")
	}
}

// TestWatchKeepsStatOpenBetweenReadingsApart: with KeepAskedFor, a
// process asked about every few scans (a JVM read every 30 s, scans every
// 5 s) keeps its stat file open between its readings, and loses it once
// it goes unasked for longer.
func TestWatchKeepsStatOpenBetweenReadingsApart(t *testing.T) {
	pid := startSleep(t).Process.Pid
	w := newProcfsWatch(t)
	w.KeepAskedFor = 35 * time.Second
	now := time.Now().Add(YoungFor)
	scanEvery5s := func(ask bool) {
		t.Helper()
		now = now.Add(5 * time.Second)
		table, err := w.Scan(now)
		if err != nil {
			t.Fatal(err)
		}
		if ask {
			if _, ok := table.Process(pid); !ok {
				t.Fatalf("sleep %d not found", pid)
			}
		}
	}
	kept := func() bool { _, ok := w.statFDs[pid]; return ok }
	// The first scan reads the new process itself; the caller's first ask
	// is its second reading, and the file is kept from the third on.
	for reading := range 4 {
		scanEvery5s(true)
		for range 5 {
			scanEvery5s(false)
		}
		if reading > 1 && !kept() {
			t.Fatalf("after reading %d, 30 s apart: the stat file is not kept", reading)
		}
	}
	reads := w.Reads
	scanEvery5s(true)
	if w.Reads != reads+1 || !kept() {
		t.Fatalf("the kept file: %d reads, kept %v", w.Reads-reads, kept())
	}
	for range 8 {
		scanEvery5s(false)
	}
	if kept() {
		t.Error("the stat file is kept 40 s after the last ask, with KeepAskedFor 35 s")
	}
}

func TestWatchStatFilesCapped(t *testing.T) {
	a, b := startSleep(t).Process.Pid, startSleep(t).Process.Pid
	w, err := NewProcessWatch("/proc")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.maxStatFDs = 1
	now := time.Now().Add(YoungFor)
	for range 4 {
		now = now.Add(time.Second)
		table, err := w.Scan(now)
		if err != nil {
			t.Fatal(err)
		}
		for _, pid := range []int{a, b} {
			if _, ok := table.Process(pid); !ok {
				t.Fatalf("sleep %d not found", pid)
			}
		}
	}
	if len(w.statFDs) != 1 {
		t.Errorf("%d stat files kept, the cap is 1", len(w.statFDs))
	}
}

// TestWatchKeepsNoStatOpenOutsideProcfs: a kept regular file would read
// the same bytes for ever.
func TestWatchKeepsNoStatOpenOutsideProcfs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte("btime 1700000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := NewProcessWatch(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.maxStatFDs != 0 {
		t.Errorf("a watch over a directory that is not procfs keeps up to %d stat files open", w.maxStatFDs)
	}
}

// TestWatchReadsResidentFromStatm: a process asked for its resident
// memory (Resident) in scans in a row keeps its statm file open, not its
// stat, and reads through it the RSS procfs reads in stat, with the rest
// as its last stat read had it; while young it is read in full; once it
// exits it reads as gone.
func TestWatchReadsResidentFromStatm(t *testing.T) {
	cmd := startSleep(t)
	pid := cmd.Process.Pid
	w := newProcfsWatch(t)
	now := time.Now()
	resident := func() (Process, bool) {
		t.Helper()
		now = now.Add(time.Second)
		table, err := w.Scan(now)
		if err != nil {
			t.Fatal(err)
		}
		return table.Resident(pid)
	}
	for i := range 3 {
		if _, ok := resident(); !ok {
			t.Fatalf("young, scan %d: sleep %d not found", i, pid)
		}
	}
	if w.StatmReads != 0 {
		t.Errorf("a young process was read from statm %d times", w.StatmReads)
	}

	now = now.Add(YoungFor)
	for i := range 3 {
		if _, ok := resident(); !ok {
			t.Fatalf("scan %d: sleep %d not found", i, pid)
		}
	}
	e := w.known[pid]
	if e.statmFD == 0 || e.statFD != 0 {
		t.Fatalf("asked for its resident memory in scans in a row: statm kept %v, stat kept %v", e.statmFD != 0, e.statFD != 0)
	}
	before := w.StatmReads
	p, ok := resident()
	if w.StatmReads != before+1 {
		t.Fatalf("read through the kept statm %d times, want 1", w.StatmReads-before)
	}
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	proc, err := fs.Proc(pid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := proc.Stat()
	if err != nil {
		t.Fatal(err)
	}
	statm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := strconv.ParseUint(strings.Fields(string(statm))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// stat's RSS is the same counters; recent kernels sum them exactly for
	// statm and read stat's from the per-CPU caches, a few pages per CPU
	// apart.
	slack := uint64(256*runtime.NumCPU()) * uint64(os.Getpagesize())
	if !ok || p.Comm != st.Comm || p.PPID != st.PPID || p.RSS != pages*uint64(os.Getpagesize()) || p.RSS == 0 ||
		p.RSS > uint64(st.ResidentMemory())+slack || p.RSS+slack < uint64(st.ResidentMemory()) {
		t.Errorf("read through the kept statm: %+v, %v; statm %q; procfs: comm %q ppid %d rss %d", p, ok, statm, st.Comm, st.PPID, st.ResidentMemory())
	}

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if p, ok := resident(); ok {
		t.Errorf("a process that exited reads as %+v", p)
	}
	if _, kept := w.statFDs[pid]; kept {
		t.Error("the statm file of a process that exited is kept")
	}
}

// ReadProcFile reads what os.ReadFile does, grows a small buffer, and
// fails past its limit or on a missing file.
func TestReadProcFile(t *testing.T) {
	want, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	got, buf, err := ReadProcFile("/proc/self/cmdline", make([]byte, 8), 64<<10)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %q, %v; os.ReadFile %q", got, err, want)
	}
	if len(want) > 8 && len(buf) <= 8 {
		t.Errorf("the buffer to reuse did not grow: %d bytes", len(buf))
	}
	if len(want) > 16 {
		if _, _, err := ReadProcFile("/proc/self/cmdline", make([]byte, 8), 16); err == nil {
			t.Errorf("a %d-byte file read under a 16-byte limit", len(want))
		}
	}
	if _, _, err := ReadProcFile("/proc/self/no-such-file", nil, 4096); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	link := filepath.Join(t.TempDir(), "cgroup")
	if err := os.Symlink("/proc/self/cmdline", link); err != nil {
		t.Fatal(err)
	}
	if data, _, err := ReadProcFile(link, nil, 4096); err == nil {
		t.Errorf("read %q through a symbolic link", data)
	}
}
