package procmem

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// tableAt reads the process table of the procfs at root.
func tableAt(t *testing.T, root string) *ProcessTable {
	t.Helper()
	fs, err := procfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	table, err := NewProcessTable(fs)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func fixtureTable(t *testing.T) *ProcessTable { return tableAt(t, "testdata/proc") }

// fixtureTables are the fixture read by procfs (NewProcessTable) and by a
// ProcessWatch's first scan: the two must agree on everything.
func fixtureTables(t *testing.T) map[string]*ProcessTable {
	t.Helper()
	w, err := NewProcessWatch("testdata/proc")
	if err != nil {
		t.Fatal(err)
	}
	watched, err := w.Scan(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*ProcessTable{"procfs": fixtureTable(t), "watch": watched}
}

func TestProcessTableFixture(t *testing.T) {
	for name, table := range fixtureTables(t) {
		t.Run(name, func(t *testing.T) { testProcessTableFixture(t, table) })
	}
}

func testProcessTableFixture(t *testing.T, table *ProcessTable) {
	page := uint64(os.Getpagesize())

	// 201 has an unparsable stat and 300 vanished (no stat): both left out.
	wantPIDs := []int{1, 100, 101, 102, 103, 104, 105, 106, 107, 200}
	if got := table.PIDs(); !slices.Equal(got, wantPIDs) {
		t.Errorf("PIDs() = %v, want %v", got, wantPIDs)
	}
	for _, want := range []Process{
		{PID: 101, PPID: 100, Comm: "java", RSS: 50000 * page, StartTime: time.Unix(1700000010, 500_000_000)},
		{PID: 106, PPID: 101, Comm: "a) b", RSS: 5 * page, StartTime: time.Unix(1700000024, 0)},
		{PID: 1, PPID: 0, Comm: "systemd", RSS: 100 * page, StartTime: time.Unix(1700000000, 10_000_000)},
	} {
		got, ok := table.Process(want.PID)
		if !ok {
			t.Errorf("Process(%d) missing", want.PID)
			continue
		}
		if got.PID != want.PID || got.PPID != want.PPID || got.Comm != want.Comm || got.RSS != want.RSS || !got.StartTime.Equal(want.StartTime) {
			t.Errorf("Process(%d) = %+v, want %+v", want.PID, got, want)
		}
	}
	if p, ok := table.Process(201); ok {
		t.Errorf("Process(201) with garbage stat = %+v, want absent", p)
	}
	table.buildChildren()
	children := slices.Sorted(slices.Values(table.children[101]))
	if want := []int{102, 105, 106}; !slices.Equal(children, want) {
		t.Errorf("children of 101 = %v, want %v", children, want)
	}
}

func TestTreeRSSFixture(t *testing.T) {
	for name, table := range fixtureTables(t) {
		t.Run(name, func(t *testing.T) { testTreeRSSFixture(t, table) })
	}
}

func testTreeRSSFixture(t *testing.T, table *ProcessTable) {
	page := uint64(os.Getpagesize())
	for _, tc := range []struct {
		name string
		pid  int
		want TreeRSS // in pages
	}{
		// 104's comm is renamed: its exe link names python3.10 (deleted).
		// 107 is python under a non-python parent (sleep) and still counts.
		// The fixture gives every process the same address space:
		// VSize counts the tree's processes.
		{"executor JVM", 101, TreeRSS{JVM: 50000, Python: 20000 + 7000 + 3000 + 1000, Other: 100 + 5, VSize: 7}},
		{"launcher shell above the JVM", 100, TreeRSS{JVM: 50000, Python: 31000, Other: 10 + 105, VSize: 8}},
		{"pyspark daemon subtree", 102, TreeRSS{Python: 30000, VSize: 3}},
		{"leaf worker", 103, TreeRSS{Python: 7000, VSize: 1}},
		{"unrelated JVM", 200, TreeRSS{JVM: 90000, VSize: 1}},
		{"whole machine", 1, TreeRSS{JVM: 140000, Python: 31000, Other: 100 + 115, VSize: 10}},
		{"unknown pid", 4242, TreeRSS{}},
		{"pid with unreadable stat", 201, TreeRSS{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := TreeRSS{JVM: tc.want.JVM * page, Python: tc.want.Python * page, Other: tc.want.Other * page,
				VSize: tc.want.VSize * fixtureVSize}
			got := table.TreeRSS(tc.pid)
			if got != want {
				t.Errorf("TreeRSS(%d) = %+v, want %+v (pages: %+v)", tc.pid, got, want, tc.want)
			}
			if got.Total() != want.JVM+want.Python+want.Other {
				t.Errorf("Total() = %d", got.Total())
			}
		})
	}
}

func TestClassifyName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want processKind
	}{
		{"java", kindJVM},
		{"python", kindPython},
		{"python3", kindPython},
		{"python3.11", kindPython},
		{"python2.7", kindPython},
		{"python3.11-config", kindOther},
		{"pythonista", kindOther},
		{"ipython", kindOther},
		{"javac", kindOther},
		{"Java", kindOther},
		{"bash", kindOther},
		{"", kindOther},
	} {
		if got := classifyName(tc.name); got != tc.want {
			t.Errorf("classifyName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewProcessTableErrors(t *testing.T) {
	// A procfs without /proc/stat has no boot time: an error, not a table
	// with start times in 1970.
	dir := t.TempDir()
	mustWrite(t, dir+"/1/stat", "1 (init) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	fs, err := procfs.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewProcessTable(fs); err == nil {
		t.Error("NewProcessTable without /proc/stat: no error")
	}

	mustWrite(t, dir+"/stat", "cpu  1 2 3 4 5 6 7 8 9 10\nctxt 5\n")
	if _, err := NewProcessTable(fs); err == nil || !strings.Contains(err.Error(), "btime") {
		t.Errorf("NewProcessTable with a stat without btime: error = %v, want one naming btime", err)
	}

	mustWrite(t, dir+"/stat", "btime 1700000000\n")
	table, err := NewProcessTable(fs)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := table.Process(1); !ok || !p.StartTime.Equal(time.Unix(1700000000, 10_000_000)) {
		t.Errorf("Process(1) = %+v, %v", p, ok)
	}
}

// The table is read by every collector of a scrape at once.
func TestTreeRSSConcurrent(t *testing.T) {
	table := fixtureTable(t)
	want := table.TreeRSS(1)
	var wg sync.WaitGroup
	errs := make(chan TreeRSS, 8)
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if got := table.TreeRSS(1); got != want {
					errs <- got
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for got := range errs {
		t.Errorf("concurrent TreeRSS(1) = %+v, want %+v", got, want)
	}
}
