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
	data := readHeld(held, nil)
	if data == nil {
		t.Fatal("no read through the held file")
	}
	if _, err := hsperf.Parse(data); err != nil {
		t.Fatalf("held read does not parse: %v", err)
	}
	if err := os.Remove(filepath.Join("/proc", strconv.Itoa(j.PID), "root", "tmp", c.Dir, strconv.Itoa(c.NSPID))); err != nil {
		t.Fatal(err)
	}
	if data := readHeld(held, nil); data != nil {
		t.Error("read through a held file that is no longer linked")
	}
}
