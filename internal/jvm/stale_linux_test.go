package jvm

import (
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

func TestIsStale(t *testing.T) {
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	now := start.Add(time.Hour)
	seen := func(ticks int64, ago time.Duration) tickMark {
		return tickMark{ticks: ticks, at: now.Add(-ago)}
	}
	tests := []struct {
		name    string
		created time.Time
		prev    tickMark
		had     bool
		ticks   int64
		want    bool
	}{
		{"first look, created after the process started", start.Add(300 * time.Millisecond), tickMark{}, false, 100, false},
		{"first look, created within the slack before", start.Add(-time.Second), tickMark{}, false, 100, false},
		{"first look, created long before: pid reused", start.Add(-time.Minute), tickMark{}, false, 100, true},
		{"no creation time", time.Time{}, tickMark{}, false, 100, true},
		{"clock stepped forward, timer moving", start.Add(-time.Minute), seen(100, 5*time.Second), true, 200, false},
		{"clock stepped forward, timer not moved since a scan 10ms ago", start.Add(-time.Minute), seen(100, 10*time.Millisecond), true, 100, true},
		{"timer standing still past frozenAfter", start.Add(time.Second), seen(100, frozenAfter), true, 100, true},
		{"timer standing still briefly", start.Add(time.Second), seen(100, frozenAfter-time.Second), true, 100, false},
		{"timer moving", start.Add(time.Second), seen(100, frozenAfter*2), true, 101, false},
	}
	for _, tt := range tests {
		if got := isStale(tt.created, start, tt.prev, tt.had, tt.ticks, now); got != tt.want {
			t.Errorf("%s: isStale = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestTrackerTimerMoves checks the assumption isStale rests on: a live
// JVM's sun.os.hrt.ticks moves between scans, and the tracker sees it.
func TestTrackerTimerMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	j := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, JVMArgs: []string{"-Xmx16m"}, Args: []string{"--exit-after-s", "300"}})
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	mustRefresh(t, tr)
	rec, ok := tr.recs.m[j.PID]
	if !ok || !rec.hasTicks || rec.ticks.ticks <= 0 {
		t.Fatalf("no timer read for JVM %d: %+v", j.PID, rec)
	}
	first := rec.ticks
	time.Sleep(300 * time.Millisecond)
	if _, ok := findJVM(mustRefresh(t, tr), j.PID); !ok {
		t.Fatalf("JVM %d missing on the second scan", j.PID)
	}
	if second := tr.recs.m[j.PID].ticks; second.ticks <= first.ticks {
		t.Errorf("timer of a live JVM did not move in 300ms: %d then %d", first.ticks, second.ticks)
	}
}
