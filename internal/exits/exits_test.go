package exits

import (
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/jvmend"
)

const mib = 1 << 20

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// thrashing is the heap of an executor dying of OutOfMemoryError: full
// after a full collection that ended just before the end.
var thrashing = Heap{Known: true, Source: "final counters", Used: 950 * mib, Max: 1000 * mib, HasFullGC: true, FullGCAgo: time.Second}

// calm is a heap with room and no recent full collection.
var calm = Heap{Known: true, Source: "final counters", Used: 300 * mib, Max: 1000 * mib, GCShare: 0.02, GCWindow: 5 * time.Second}

func death(file File, heap Heap) Death {
	return Death{End: jvmend.End{PID: 42, Start: t0, LastAlive: t0.Add(time.Hour), Noticed: t0.Add(time.Hour + 5*time.Second), File: file, Heap: heap}}
}

func TestDecide(t *testing.T) {
	kill := &Kill{PID: 42, Received: t0.Add(time.Hour + time.Second), Cause: "native"}
	spot := &Interruption{Event: "spot_interruption", First: t0.Add(59 * time.Minute), Last: t0.Add(time.Hour + 10*time.Second)}
	heapAt := func(used uint64, mod func(*Heap)) Heap {
		h := Heap{Known: true, Source: "final counters", Used: used, Max: 1000 * mib}
		mod(&h)
		return h
	}
	fullGCAgo := func(d time.Duration) func(*Heap) {
		return func(h *Heap) { h.HasFullGC, h.FullGCAgo = true, d }
	}
	lastRead := func(share float64, ago time.Duration, fullGCs uint64) func(*Heap) {
		return func(h *Heap) {
			h.HasFullGC, h.FullGCAgo = true, 0
			h.LiveShare, h.LiveAgo, h.FullGCsSince = share, ago, fullGCs
		}
	}
	afterFull := func(mod func(*Heap)) func(*Heap) {
		return func(h *Heap) { mod(h); h.LiveAfterFull = true }
	}
	gcShare := func(share float64, window time.Duration) func(*Heap) {
		return func(h *Heap) { h.GCShare, h.GCWindow = share, window }
	}
	for _, tc := range []struct {
		name   string
		death  Death
		kill   *Kill
		notice *Interruption
		want   string
	}{
		{"kernel kill wins over everything", death(FileLeftBehind, thrashing), kill, spot, ReasonOOMKilled},
		{"kernel kill of a JVM without hsperfdata", death(FileUnknown, Heap{}), kill, nil, ReasonOOMKilled},
		{"exit 52: deleted file, full heap, full GC just before", death(FileDeleted, thrashing), nil, nil, ReasonHeapExhausted},
		{"heap exhaustion beats a pending notice", death(FileDeleted, thrashing), nil, spot, ReasonHeapExhausted},
		{"heap exhaustion with the file gone while it ran", death(FileUnknown, thrashing), nil, nil, ReasonHeapExhausted},
		{"SIGKILL during GC thrash is a kill", death(FileLeftBehind, thrashing), nil, nil, ReasonKilled},
		{"SIGTERM while a notice is pending", death(FileDeleted, calm), nil, spot, ReasonInterrupted},
		{"SIGKILL while a notice is pending", death(FileLeftBehind, calm), nil, spot, ReasonInterrupted},
		{"SIGKILL", death(FileLeftBehind, calm), nil, nil, ReasonKilled},
		{"SIGTERM or the end of the application", death(FileDeleted, calm), nil, nil, ReasonExited},
		{"orderly exit without heap figures", death(FileDeleted, Heap{}), nil, nil, ReasonExited},
		{"no hsperfdata, no kill, no notice", death(FileUnknown, Heap{}), nil, nil, ReasonUnknown},

		// The heap rule's boundaries.
		{"heap exactly at the full share", death(FileDeleted, heapAt(900*mib, fullGCAgo(time.Second))), nil, nil, ReasonHeapExhausted},
		{"heap just below the full share", death(FileDeleted, heapAt(900*mib-1, fullGCAgo(time.Second))), nil, nil, ReasonExited},
		{"full GC exactly FullGCRecent before the end", death(FileDeleted, heapAt(950*mib, fullGCAgo(FullGCRecent))), nil, nil, ReasonHeapExhausted},
		{"full GC just longer ago", death(FileDeleted, heapAt(950*mib, fullGCAgo(FullGCRecent+time.Millisecond))), nil, nil, ReasonExited},
		{"full heap without any collection is a normal exit", death(FileDeleted, heapAt(990*mib, func(*Heap) {})), nil, nil, ReasonExited},
		{"GC share exactly at the busy share", death(FileDeleted, heapAt(950*mib, gcShare(GCBusyShare, 5*time.Second))), nil, nil, ReasonHeapExhausted},
		{"GC share just below", death(FileDeleted, heapAt(950*mib, gcShare(GCBusyShare-0.001, 5*time.Second))), nil, nil, ReasonExited},
		{"full GC 30 s before the end", death(FileDeleted, heapAt(950*mib, fullGCAgo(30*time.Second))), nil, nil, ReasonHeapExhausted},
		{"full GC 31 s before the end", death(FileDeleted, heapAt(950*mib, fullGCAgo(31*time.Second))), nil, nil, ReasonExited},
		{"busy for 0.9 s only", death(FileDeleted, heapAt(950*mib, gcShare(0.9, 900*time.Millisecond))), nil, nil, ReasonExited},
		{"half the time collecting", death(FileDeleted, heapAt(950*mib, gcShare(0.5, 5*time.Second))), nil, nil, ReasonHeapExhausted},
		{"less than half the time collecting", death(FileDeleted, heapAt(950*mib, gcShare(0.49, 5*time.Second))), nil, nil, ReasonExited},
		{"GC share over a window too short to tell", death(FileDeleted, heapAt(950*mib, gcShare(0.9, MinGCWindow-time.Millisecond))), nil, nil, ReasonExited},
		{"GC share over the shortest window", death(FileDeleted, heapAt(950*mib, gcShare(0.9, MinGCWindow))), nil, nil, ReasonHeapExhausted},
		{"busy GC with room in the heap", death(FileDeleted, heapAt(500*mib, gcShare(0.9, 5*time.Second))), nil, nil, ReasonExited},
		{"old generation exactly full, young empty", death(FileDeleted, heapAt(600*mib, func(h *Heap) {
			h.OldUsed, h.OldMax, h.HasFullGC = 630*mib, 700*mib, true
		})), nil, nil, ReasonHeapExhausted},
		{"old generation just below full", death(FileDeleted, heapAt(600*mib, func(h *Heap) {
			h.OldUsed, h.OldMax, h.HasFullGC = 630*mib-1, 700*mib, true
		})), nil, nil, ReasonExited},

		// Full at the last read, emptied on the way out (the handler
		// dropped what the task held, and a collection ran).
		{"full at the last read, two full collections since", death(FileDeleted, heapAt(mib, lastRead(0.95, 3*time.Second, 2))), nil, nil, ReasonHeapExhausted},
		{"full at the last read, one full collection since", death(FileDeleted, heapAt(mib, lastRead(0.95, 3*time.Second, 1))), nil, nil, ReasonExited},
		{"full right after a full collection at the last read, one since", death(FileDeleted, heapAt(mib, afterFull(lastRead(0.95, 3*time.Second, 1)))), nil, nil, ReasonHeapExhausted},
		{"full right after a full collection at the last read, none since", death(FileDeleted, heapAt(mib, afterFull(lastRead(0.95, 3*time.Second, 0)))), nil, nil, ReasonExited},
		{"just below full right after a full collection", death(FileDeleted, heapAt(mib, afterFull(lastRead(HeapFullShare-0.001, 3*time.Second, 1)))), nil, nil, ReasonExited},
		{"just below full at the last read", death(FileDeleted, heapAt(mib, lastRead(HeapFullShare-0.001, 3*time.Second, 2))), nil, nil, ReasonExited},
		{"last read exactly FullGCRecent before the end", death(FileDeleted, heapAt(mib, lastRead(0.95, FullGCRecent, 2))), nil, nil, ReasonHeapExhausted},
		{"last read longer ago", death(FileDeleted, heapAt(mib, lastRead(0.95, FullGCRecent+time.Millisecond, 2))), nil, nil, ReasonExited},
		{"full at the last read, then SIGKILLed", death(FileLeftBehind, heapAt(mib, lastRead(0.95, 3*time.Second, 2))), nil, nil, ReasonKilled},
		{"heap figures without a max", death(FileDeleted, Heap{Known: true, Used: 5, HasFullGC: true}), nil, nil, ReasonExited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.death, tc.kill, tc.notice)
			if v.Reason != tc.want {
				t.Errorf("reason %q, want %q (%s)", v.Reason, tc.want, v.Evidence)
			}
			if v.Evidence == "" {
				t.Error("no evidence")
			}
		})
	}
}

func TestDecideEvidence(t *testing.T) {
	d := death(FileUnknown, thrashing)
	d.FileNote = "the JVM runs with -XX:+PerfDisableSharedMem"
	v := Decide(d, nil, nil)
	for _, want := range []string{"heap used 950 of 1000 MiB (95%)", "last full collection 1.0s", "PerfDisableSharedMem", "final counters"} {
		if !strings.Contains(v.Evidence, want) {
			t.Errorf("evidence %q lacks %q", v.Evidence, want)
		}
	}
	d.Heap = Heap{Known: true, Source: "final counters", Used: mib, Max: 1000 * mib, HasFullGC: true, LiveShare: 0.97, LiveAgo: 2 * time.Second, FullGCsSince: 3}
	v = Decide(d, nil, nil)
	if want := "97% full at the last read 2.0s before the end, 3 full collections since"; !strings.Contains(v.Evidence, want) {
		t.Errorf("evidence %q lacks %q", v.Evidence, want)
	}
}

func TestKillMatches(t *testing.T) {
	d := death(FileLeftBehind, calm)
	decide := d.Noticed.Add(5 * time.Second)
	for _, tc := range []struct {
		name string
		kill Kill
		want bool
	}{
		{"read before the JVM was last seen alive (teardown still under way)", Kill{PID: 42, Received: d.LastAlive.Add(-time.Second)}, true},
		{"read after the JVM vanished", Kill{PID: 42, Received: d.Noticed.Add(time.Second)}, true},
		{"read exactly at the decision", Kill{PID: 42, Received: decide}, true},
		{"read after the decision", Kill{PID: 42, Received: decide.Add(time.Nanosecond)}, false},
		{"a previous process with the pid", Kill{PID: 42, Received: d.Start.Add(-time.Nanosecond)}, false},
		{"at the process start", Kill{PID: 42, Received: d.Start}, true},
		{"another pid", Kill{PID: 43, Received: d.Noticed}, false},
	} {
		if got := tc.kill.Matches(d, decide); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestInterruptionOverlaps(t *testing.T) {
	d := death(FileDeleted, calm)
	decide := d.Noticed.Add(5 * time.Second)
	for _, tc := range []struct {
		name        string
		first, last time.Time
		want        bool
	}{
		{"pending throughout", d.LastAlive.Add(-time.Minute), decide, true},
		{"seen first after the death, before the decision", d.Noticed.Add(time.Second), d.Noticed.Add(time.Second), true},
		{"seen first at the decision", decide, decide, true},
		{"seen first after the decision", decide.Add(time.Nanosecond), decide.Add(time.Minute), false},
		{"ended exactly Lookback before last alive", d.LastAlive.Add(-time.Hour), d.LastAlive.Add(-Lookback), true},
		{"ended longer ago", d.LastAlive.Add(-time.Hour), d.LastAlive.Add(-Lookback - time.Nanosecond), false},
	} {
		n := Interruption{Event: "preemption", First: tc.first, Last: tc.last}
		if got := n.Overlaps(d, decide); got != tc.want {
			t.Errorf("%s: Overlaps = %v, want %v", tc.name, got, tc.want)
		}
	}
}
