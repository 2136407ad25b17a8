package jvm

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
)

// FuzzHeapAtEnd: whatever a dead JVM's file holds, the figures read from it
// are sane — a full collection never ends after the JVM's last tick, a GC
// window is never negative, a share is a number — and the real files of
// the three collectors say what their JVMs did.
func FuzzHeapAtEnd(f *testing.F) {
	for _, name := range []string{"g1.hsperf", "parallel.hsperf", "serial.hsperf", "g1-large.hsperf"} {
		b, err := os.ReadFile(filepath.Join("..", "hsperf", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, int64(0), 0.0)
		f.Add(b, int64(1_000_000), 0.5)
	}
	f.Fuzz(func(t *testing.T, b []byte, markTicks int64, markGC float64) {
		snap, err := hsperf.Parse(b)
		if err != nil {
			return
		}
		stats, err := snap.Stats()
		if err != nil {
			return
		}
		h := heapAtEnd(snap, stats, [2]gcMark{{ticks: markTicks, gcSeconds: markGC}}, gcMark{})
		if h.Used != stats.HeapUsed || h.Max != stats.HeapMax || h.Known != (stats.HeapMax > 0) {
			t.Fatalf("heap %+v from stats %+v", h, stats)
		}
		if h.HasFullGC && h.FullGCAgo < 0 {
			t.Fatalf("a full collection ended after the last tick: %+v", h)
		}
		if h.GCWindow < 0 || (h.GCWindow > 0 && math.IsNaN(h.GCShare)) {
			t.Fatalf("window %v, share %v", h.GCWindow, h.GCShare)
		}
	})
}

func TestProcState(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want byte
		ok   bool
	}{
		{"42 (java) S 1 42 42 0 -1", 'S', true},
		{"42 (java) Z 1 42", 'Z', true},
		{"42 (a) b) (c) X 1", 'X', true}, // the command name may hold ") "
		{"42 (java)", 0, false},
		{"42 (java) ", 0, false},
		{"garbage", 0, false},
	} {
		got, ok := procState([]byte(tc.stat))
		if got != tc.want || ok != tc.ok {
			t.Errorf("procState(%q) = %q, %v; want %q, %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}

// Each fixture's JVM ran one full collection (System.gc in
// ../hsperf/testdata/Alloc.java): its file says how long before the
// clock's last tick it ended, and the old generation's size.
func TestHeapAtEndFixtures(t *testing.T) {
	for _, tc := range []struct {
		file      string
		fullGCAgo time.Duration
	}{
		{"serial.hsperf", 14999408154},
		{"parallel.hsperf", 13393876789},
		{"g1.hsperf", 11147754652},
	} {
		b, err := os.ReadFile(filepath.Join("..", "hsperf", "testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := hsperf.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		stats, err := snap.Stats()
		if err != nil {
			t.Fatal(err)
		}
		h := heapAtEnd(snap, stats, [2]gcMark{}, gcMark{})
		t.Logf("%s: %+v", tc.file, h)
		if !h.Known || h.OldMax == 0 || h.OldUsed > h.OldMax || h.GCWindow != 0 || !h.HasFullGC || h.FullGCAgo != tc.fullGCAgo {
			t.Errorf("%s: heap %+v, want the full collection %v before the end", tc.file, h, tc.fullGCAgo)
		}
	}
}
