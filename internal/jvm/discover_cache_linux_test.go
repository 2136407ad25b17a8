package jvm

import (
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
	scan := func() []Candidate {
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
	all := d.inspected
	if got := scan(); !has(got, first.PID) {
		t.Fatalf("second scan: %+v, want JVM %d", got, first.PID)
	}
	// Other work on the machine starts processes now and then; a scan
	// looks at those, not at the hundreds already known.
	if again := d.inspected - all; again > all/2 {
		t.Errorf("second scan inspected %d processes again (first: %d)", again, all)
	}
	second := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, Args: []string{"--exit-after-s", "300"}})
	if got := scan(); !has(got, second.PID) || !has(got, first.PID) {
		t.Errorf("after a new JVM: %+v, want %d and %d", got, first.PID, second.PID)
	}
}
