package procmem

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// A fake /proc whose processes all started at boot (btime 1700000000),
// long before the scans below.
func writeWatchFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustWrite(t, dir+"/stat", "btime 1700000000\n")
	for _, p := range []struct {
		pid, ppid int
		comm      string
	}{{1, 0, "init"}, {10, 1, "java"}, {11, 10, "python3"}, {12, 11, "python3"}, {20, 1, "sleep"}, {21, 1, "sleep"}} {
		mustWrite(t, filepath.Join(dir, strconv.Itoa(p.pid), "stat"), fakeStat(p.pid, p.comm, p.ppid, 100, 10))
	}
	return dir
}

func TestWatchReadsWhatChanged(t *testing.T) {
	dir := writeWatchFixture(t)
	w, err := NewProcessWatch(dir)
	if err != nil {
		t.Fatal(err)
	}
	boot := time.Unix(1700000000, 0)
	now := boot.Add(time.Hour)
	scan := func(now time.Time) *ProcessTable {
		t.Helper()
		table, err := w.Scan(now)
		if err != nil {
			t.Fatal(err)
		}
		return table
	}
	reads := func(want uint64, what string) {
		t.Helper()
		if w.Reads != want {
			t.Fatalf("%s: %d stat reads in all, want %d", what, w.Reads, want)
		}
	}

	changed := func(table *ProcessTable, want bool, what string) {
		t.Helper()
		if table.Changed() != want {
			t.Errorf("%s: Changed() = %v, want %v", what, table.Changed(), want)
		}
	}
	table := scan(now)
	reads(6, "first scan reads every process")
	changed(table, true, "first scan")
	if got := table.PIDs(); !slices.Equal(got, []int{1, 10, 11, 12, 20, 21}) {
		t.Fatalf("PIDs() = %v", got)
	}

	table = scan(now.Add(5 * time.Second))
	reads(6, "second scan reads nothing")
	changed(table, false, "second scan, nothing new")
	if p, ok := table.Seen(20); !ok || p.Comm != "sleep" || table.recheck[20] {
		t.Errorf("Seen(20) = %+v, %v, recheck %v: want the last read, no recheck", p, ok, table.recheck[20])
	}
	page := uint64(os.Getpagesize())
	if got, want := table.TreeRSS(10), (TreeRSS{JVM: 10 * page, Python: 20 * page, VSize: 3 * fixtureVSize}); got != want {
		t.Errorf("TreeRSS(10) = %+v, want %+v", got, want)
	}
	reads(9, "TreeRSS reads the tree (3 processes), not the machine")
	table.Process(10)
	reads(9, "a process read in this scan is not read again")

	// A new process, a pid reused by another process (new directory, new
	// inode), a process gone, and one that left the tree.
	mustWrite(t, dir+"/13/stat", fakeStat(13, "python3", 10, 100, 5))
	// Made before the old one goes, so that the file system cannot hand
	// out the old inode number again (procfs never does).
	mustWrite(t, dir+"/21.new/stat", fakeStat(21, "java", 1, 200, 7))
	if err := os.RemoveAll(dir + "/21"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+"/21.new", dir+"/21"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir + "/20"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, dir+"/12/stat", fakeStat(12, "python3", 1, 100, 10)) // re-parented to init
	table = scan(now.Add(10 * time.Second))
	reads(11, "the new process and the reused pid are read")
	changed(table, true, "a new process, a reused pid, one gone")
	if !table.recheck[13] || !table.recheck[21] || table.recheck[1] {
		t.Errorf("recheck 13 %v, 21 %v, 1 %v: want true, true, false", table.recheck[13], table.recheck[21], table.recheck[1])
	}
	if p, ok := table.Seen(21); !ok || p.Comm != "java" {
		t.Errorf("reused pid 21: %+v, %v; want the new java", p, ok)
	}
	if _, ok := table.Process(20); ok {
		t.Error("pid 20 is gone but Process found it")
	}
	if got, want := table.TreeRSS(10), (TreeRSS{JVM: 10 * page, Python: 15 * page, VSize: 3 * fixtureVSize}); got != want {
		t.Errorf("TreeRSS(10) after the changes = %+v, want %+v (13 joined, 12 left)", got, want)
	}

	// A process started just now is read on every scan while young: an
	// exec changes its command name.
	young := boot.Add(time.Hour + 14*time.Second)
	mustWrite(t, dir+"/30/stat", fakeStat(30, "bash", 1, uint64(young.Sub(boot)/(time.Second/userHZ)), 1))
	scan(now.Add(15 * time.Second))
	mustWrite(t, dir+"/30/stat", fakeStat(30, "java", 1, uint64(young.Sub(boot)/(time.Second/userHZ)), 1))
	before := w.Reads
	table = scan(now.Add(20 * time.Second))
	changed(table, true, "a young process, read again")
	if p, _ := table.Seen(30); p.Comm != "java" || w.Reads != before+1 {
		t.Errorf("young process after exec: %+v after %d reads; want java after 1", p, w.Reads-before)
	}
	before = w.Reads
	changed(scan(now.Add(time.Minute)), false, "nothing young any more")
	if w.Reads != before {
		t.Errorf("%d reads once nothing is young", w.Reads-before)
	}
	if err := os.RemoveAll(dir + "/13"); err != nil {
		t.Fatal(err)
	}
	changed(scan(now.Add(time.Minute+time.Second)), true, "a process gone")
	changed(scan(now.Add(time.Minute+2*time.Second)), false, "after the process gone")
	// The refresh reads every process and flags only those it finds
	// changed: an old process that exec'd (11) and one with a new parent
	// (21).
	mustWrite(t, dir+"/11/stat", fakeStat(11, "java", 10, 100, 10))
	mustWrite(t, dir+"/21/stat", fakeStat(21, "java", 10, 200, 7))
	// A kernel thread (PF_KTHREAD), new here, then passed by.
	mustWrite(t, dir+"/3/stat", strings.Replace(fakeStat(3, "kworker/0:1", 2, 100, 0), " 4194304 ", " 2097152 ", 1))
	before = w.Reads
	table = scan(now.Add(RefreshEvery + time.Minute))
	if got := w.Reads - before; got != 7 {
		t.Errorf("refresh: %d reads, want every process (6) and the new kernel thread", got)
	}
	if p, ok := table.Seen(3); !ok || !p.KernelThread {
		t.Fatalf("Seen(3) = %+v, %v: want a kernel thread", p, ok)
	}
	changed(table, true, "a refresh that found an exec and a new parent")
	for _, pid := range table.PIDs() {
		if want := pid == 11 || pid == 21 || pid == 3; table.recheck[pid] != want {
			t.Errorf("refresh: recheck[%d] = %v, want %v", pid, table.recheck[pid], want)
		}
	}
	if p, _ := table.Seen(11); p.Comm != "java" {
		t.Errorf("refresh: Seen(11) = %+v, want the exec'd java", p)
	}
	before = w.Reads
	table = scan(now.Add(2*RefreshEvery + 2*time.Minute))
	if got := w.Reads - before; got != 6 {
		t.Errorf("second refresh: %d reads, want every process but the kernel thread (6)", got)
	}
	changed(table, false, "a refresh that found nothing changed")
}

// The watch's parser is a fast path beside procfs's: on every process of
// this machine it must say what procfs says.
func TestWatchAgreesWithProcfsLive(t *testing.T) {
	w, err := NewProcessWatch("/proc")
	if err != nil {
		t.Fatal(err)
	}
	watched, err := w.Scan(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ref := liveTable(t)
	compared := 0
	for _, pid := range ref.PIDs() {
		want, _ := ref.Process(pid)
		got, ok := watched.Process(pid)
		if !ok {
			continue // exited between the two reads
		}
		// A kworker names itself after the work it runs (kworker/1:2-events,
		// then -cgroup_offline), so between the two reads its name may move.
		sameComm := got.Comm == want.Comm || got.KernelThread && strings.HasPrefix(got.Comm, "kworker/") && strings.HasPrefix(want.Comm, "kworker/")
		if got.PPID != want.PPID || !sameComm || !got.StartTime.Equal(want.StartTime) || got.KernelThread != want.KernelThread {
			t.Errorf("pid %d: watch %+v, procfs %+v", pid, got, want)
		}
		compared++
	}
	if compared < 2 {
		t.Fatalf("compared %d processes", compared)
	}
}

// A child started after a scan is in the next scan's tree; a child that
// exited is not. The test process is the root.
func TestWatchTreeFollowsChildrenLive(t *testing.T) {
	requireLive(t, false, "python3")
	w, err := NewProcessWatch("/proc")
	if err != nil {
		t.Fatal(err)
	}
	root := os.Getpid()
	scan := func() TreeRSS {
		t.Helper()
		table, err := w.Scan(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return table.TreeRSS(root)
	}
	if got := scan(); got.Python != 0 {
		t.Fatalf("before the child: %+v, want no python", got)
	}
	child := exec.Command("python3", "-c", holdPython(20))
	startUntilReady(t, child)
	if got := scan(); got.Python < 20<<20 {
		t.Errorf("with the child: %+v, want >= 20 MiB of python", got)
	}
	_ = child.Process.Kill()
	testenv.WaitFor(t, 30*time.Second, "the killed child to leave the tree", func() bool { return scan().Python == 0 })
}

func TestForEachDirent(t *testing.T) {
	var buf []byte
	add := func(name string, ino uint64) {
		reclen := (19 + len(name) + 1 + 7) &^ 7
		rec := make([]byte, reclen)
		binary.NativeEndian.PutUint64(rec[0:], ino)
		binary.NativeEndian.PutUint16(rec[16:], uint16(reclen))
		copy(rec[19:], name)
		buf = append(buf, rec...)
	}
	add(".", 1)
	add("42", 1000)
	add("self", 2)
	add("007", 3)
	add("4294967296", 4)
	add("2147483647", 5)
	var got []int
	forEachDirent(buf, func(name []byte, ino uint64) {
		if pid, ok := parsePID(name); ok {
			got = append(got, pid, int(ino))
		}
	})
	if want := []int{42, 1000, 2147483647, 5}; !slices.Equal(got, want) {
		t.Errorf("pids and inodes = %v, want %v", got, want)
	}
	// A truncated or corrupt buffer ends the walk; it never panics.
	for n := range buf {
		forEachDirent(buf[:n], func([]byte, uint64) {})
	}
	bad := slices.Clone(buf)
	binary.NativeEndian.PutUint16(bad[16:], 3)
	forEachDirent(bad, func([]byte, uint64) { t.Error("record with a reclen below the header") })
}

// On this machine's procfs a scan lists only the pids above the last one
// it saw; a process that exited stays known (and reads as gone) until the
// full listing.
func TestWatchListsNewPidsLive(t *testing.T) {
	w, err := NewProcessWatch("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if !w.seekable {
		t.Fatal("/proc is this process's procfs, but the watch cannot list from a pid")
	}
	now := time.Now()
	scan := func() *ProcessTable {
		t.Helper()
		now = now.Add(time.Second)
		table, err := w.Scan(now)
		if err != nil {
			t.Fatal(err)
		}
		return table
	}
	scan()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := child.Process.Pid
	table := scan()
	if w.sinceFull != 1 {
		t.Fatalf("second scan: %d scans since the full listing, want 1 (a partial one)", w.sinceFull)
	}
	if p, ok := table.Process(pid); !ok || p.Comm != "sleep" || !slices.Contains(table.PIDs(), pid) {
		t.Fatalf("new child %d: %+v, %v; PIDs has it: %v", pid, p, ok, slices.Contains(table.PIDs(), pid))
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	table = scan()
	if _, ok := table.Process(pid); ok {
		t.Errorf("exited child %d still read", pid)
	}
	for w.sinceFull != 0 {
		table = scan()
	}
	if _, known := w.known[pid]; known || slices.Contains(table.PIDs(), pid) {
		t.Errorf("exited child %d still known after the full listing", pid)
	}
}

// A listing up to a pid lists exactly the pids of the full listing in its
// range, however many calls it takes with its small buffer.
func TestWatchListsUpToAPidLive(t *testing.T) {
	w, err := NewProcessWatch("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if !w.seekable {
		t.Fatal("/proc is this process's procfs, but the watch cannot list from a pid")
	}
	// Enough processes that the range needs several calls.
	for range 80 {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	var all []int
	if err := w.listFrom(0, 0, func(pid int, _ uint64) { all = append(all, pid) }); err != nil {
		t.Fatal(err)
	}
	if len(all) < 100 {
		t.Fatalf("%d processes listed, want at least the 80 started here", len(all))
	}
	from, to := all[len(all)/4], all[3*len(all)/4]
	var want, got []int
	for _, pid := range all {
		if pid >= from && pid <= to {
			want = append(want, pid)
		}
	}
	if err := w.listFrom(from, to, func(pid int, _ uint64) { got = append(got, pid) }); err != nil {
		t.Fatal(err)
	}
	// A process may end between the two listings.
	missing := 0
	for _, pid := range want {
		if !slices.Contains(got, pid) {
			missing++
		}
	}
	if missing > 2 || len(got) == 0 || got[0] < from || got[len(got)-1] > to {
		t.Errorf("listed %d pids from %d to %d (%v … %v), the full listing has %d there; %d missing",
			len(got), from, to, got[0], got[len(got)-1], len(want), missing)
	}
}
