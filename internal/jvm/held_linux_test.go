package jvm

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// Once a JVM was read, its hsperfdata is read through the file the tracker
// holds; a file no longer linked is left to the path, as before.
func TestReadHeld(t *testing.T) {
	j := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, Args: []string{"--exit-after-s", "300"}})
	tracker, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer tracker.Stop()
	if _, err := tracker.Refresh(); err != nil {
		t.Fatal(err)
	}
	table, err := tracker.procs.Scan(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	proc, ok := table.Process(j.PID)
	if !ok {
		t.Fatalf("JVM %d not in the table", j.PID)
	}
	cands, err := FindCandidates("/proc", nil)
	if err != nil {
		t.Fatal(err)
	}
	var c Candidate
	for _, cand := range cands {
		if cand.PID == j.PID {
			c = cand
		}
	}
	held := tracker.ends.held(c.PID, proc.StartTime)
	data := readHeld(held, nil, 0)
	if data == nil {
		t.Fatal("no read through the held file")
	}
	whole, err := hsperf.Parse(data)
	if err != nil {
		t.Fatalf("held read does not parse: %v", err)
	}
	// Read up to what the last read found used: the used bytes, never
	// fewer, whatever the hint (the file says when more are used now).
	for _, hint := range []int{int(whole.Used), 100, 1, len(data) + 4096} {
		part := readHeld(held, nil, hint)
		if part == nil || len(part) < int(whole.Used) || len(part) > len(data) {
			t.Fatalf("hint %d: read %d bytes, %d used of %d", hint, len(part), whole.Used, len(data))
		}
		if _, err := hsperf.Parse(part); err != nil {
			t.Errorf("hint %d: a read of %d bytes does not parse: %v", hint, len(part), err)
		}
	}
	// With the used bytes as the hint, the read stops at the end of the
	// page they end in: an idle JVM's file is a third used.
	if part, want := readHeld(held, nil, int(whole.Used)), min(len(data), (int(whole.Used)+4095)&^4095); len(part) != want {
		t.Errorf("with the used bytes (%d of %d) as the hint, read %d bytes, want %d", whole.Used, len(data), len(part), want)
	}
	if err := os.Remove(filepath.Join("/proc", strconv.Itoa(j.PID), "root", "tmp", c.Dir, strconv.Itoa(c.NSPID))); err != nil {
		t.Fatal(err)
	}
	if data := readHeld(held, nil, 0); data != nil {
		t.Error("read through a held file that is no longer linked")
	}
}
