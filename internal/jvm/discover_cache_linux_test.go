package jvm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// The cached discovery finds what FindCandidates finds, looking at the
// roots of new processes only; a JVM started between two scans is found
// by the second.
func TestDiscoveryCachesRoots(t *testing.T) {
	first := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, Args: []string{"--exit-after-s", "300"}})
	w, err := procmem.NewProcessWatch("/proc")
	if err != nil {
		t.Fatal(err)
	}
	d := newDiscovery("/proc")
	// Scans a minute apart in the watch's clock, so that only processes
	// that are new count as young.
	clock := time.Now()
	find := func() (*procmem.ProcessTable, []Candidate) {
		t.Helper()
		clock = clock.Add(time.Minute)
		table, err := w.Scan(clock)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.find(table)
		if err != nil {
			t.Fatal(err)
		}
		return table, got
	}
	scan := func() []Candidate {
		t.Helper()
		table, got := find()
		want, err := FindCandidates("/proc", func(pid int) bool { p, ok := table.Seen(pid); return ok && p.KernelThread })
		if err != nil {
			t.Fatal(err)
		}
		pids := func(cs []Candidate) []int {
			var out []int
			for _, c := range cs {
				out = append(out, c.PID)
			}
			return out
		}
		// A process may start or end between the two listings: compare
		// the JVMs of this test.
		for _, j := range []int{first.PID} {
			if slices.Contains(pids(want), j) != slices.Contains(pids(got), j) {
				t.Errorf("JVM %d: cached discovery found %v, FindCandidates %v", j, pids(got), pids(want))
			}
		}
		return got
	}
	has := func(cs []Candidate, pid int) bool {
		return slices.ContainsFunc(cs, func(c Candidate) bool { return c.PID == pid })
	}
	if got := scan(); !has(got, first.PID) {
		t.Fatalf("first scan: %+v, want JVM %d", got, first.PID)
	}
	all := w.RootReads
	if got := scan(); !has(got, first.PID) {
		t.Fatalf("second scan: %+v, want JVM %d", got, first.PID)
	}
	// Other work on the machine starts processes now and then; a scan
	// looks at those, not at the hundreds already known.
	if again := w.RootReads - all; again > all/2 {
		t.Errorf("second scan inspected %d processes again (first: %d)", again, all)
	}
	second := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, Args: []string{"--exit-after-s", "300"}})
	if got := scan(); !has(got, second.PID) || !has(got, first.PID) {
		t.Errorf("after a new JVM: %+v, want %d and %d", got, first.PID, second.PID)
	}

	// A scan whose process table did not change finds what the last one
	// found without looking at a root or a directory. Other work on the
	// machine may start a process between two scans: the first scan that
	// saw none is the one checked.
	last := scan()
	for try := 0; ; try++ {
		inspected, relisted, reused := w.RootReads, d.relisted, d.reused
		table, got := find()
		if table.Changed() {
			last = got
			if try == 600 {
				t.Fatal("every one of 600 scans, 30 s, saw the process table change")
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if d.reused != reused+1 || w.RootReads != inspected || d.relisted != relisted {
			t.Errorf("unchanged table: reused %d→%d, inspected %d→%d, relisted %d→%d; want reused +1, nothing looked at",
				reused, d.reused, inspected, w.RootReads, relisted, d.relisted)
		}
		if !slices.Equal(got, last) || !has(got, first.PID) || !has(got, second.PID) {
			t.Errorf("unchanged table: %+v, want the last scan's %+v", got, last)
		}
		break
	}
}

// A root's hsperfdata directories are listed again when their
// modification times move, and only then.
func TestDiscoveryListsChangedRootsOnly(t *testing.T) {
	dir := t.TempDir()
	fsroot := dir + "/root"
	mkfile := func(name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(fsroot+name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fsroot+name, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	age := func(name string, ago time.Duration) {
		t.Helper()
		at := time.Now().Add(-ago)
		if err := os.Chtimes(fsroot+name, at, at); err != nil {
			t.Fatal(err)
		}
	}
	mkfile("/tmp/hsperfdata_u/100")
	mkfile("/tmp/unrelated/file")
	age("/tmp/hsperfdata_u", time.Minute)
	age("/tmp", time.Minute)
	if err := os.MkdirAll(dir+"/proc/100", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fsroot, dir+"/proc/100/root"); err != nil {
		t.Fatal(err)
	}
	d := newDiscovery(dir + "/proc")
	root := procmem.Root{MountNS: "mnt:[1]"}
	check := func(what string, want map[int][]string, relisted int) {
		t.Helper()
		got, err := d.list(100, root)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || d.relisted != relisted {
			t.Errorf("%s: files %v after %d listings, want %v after %d", what, got, d.relisted, want, relisted)
		}
	}
	check("first", map[int][]string{100: {"hsperfdata_u"}}, 1)
	check("unchanged", map[int][]string{100: {"hsperfdata_u"}}, 1)

	mkfile("/tmp/hsperfdata_u/101")
	age("/tmp/hsperfdata_u", 30*time.Second)
	check("a JVM's file added", map[int][]string{100: {"hsperfdata_u"}, 101: {"hsperfdata_u"}}, 2)
	check("unchanged again", map[int][]string{100: {"hsperfdata_u"}, 101: {"hsperfdata_u"}}, 2)

	mkfile("/tmp/hsperfdata_v/102")
	age("/tmp/hsperfdata_v", 20*time.Second)
	age("/tmp", 20*time.Second)
	check("another user's directory", map[int][]string{100: {"hsperfdata_u"}, 101: {"hsperfdata_u"}, 102: {"hsperfdata_v"}}, 3)

	if err := os.Remove(fsroot + "/tmp/hsperfdata_u/100"); err != nil {
		t.Fatal(err)
	}
	age("/tmp/hsperfdata_u", 10*time.Second)
	check("a file removed", map[int][]string{101: {"hsperfdata_u"}, 102: {"hsperfdata_v"}}, 4)

	// Modified just now: not trusted, listed on every call until it is old.
	mkfile("/tmp/hsperfdata_v/103")
	want := map[int][]string{101: {"hsperfdata_u"}, 102: {"hsperfdata_v"}, 103: {"hsperfdata_v"}}
	check("recent change", want, 5)
	check("still recent", want, 6)
	age("/tmp/hsperfdata_v", 5*time.Second)
	check("old enough", want, 7)
	check("cached", want, 7)
}
