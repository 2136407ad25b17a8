// Package exits decides how a JVM that disappeared ended: killed by the
// kernel OOM killer, out of heap, killed by someone else, stopped because
// the cloud took the machine away, or an ordinary exit. It is pure: the
// evidence comes from the JVM tracker (the hsperfdata file and the JVM's
// last counters), the OOM collector (kernel kills) and the cloud collector
// (interruption notices), and docs/exits.md explains the rule.
package exits

import (
	"fmt"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/jvmend"
)

// Reasons, the values of the reason label.
const (
	ReasonOOMKilled     = "oom_killed"     // the kernel OOM killer took it
	ReasonHeapExhausted = "heap_exhausted" // out of heap: full after collection, collecting hard (Spark's exit 52)
	ReasonInterrupted   = "interrupted"    // the cloud announced it would take the machine away
	ReasonKilled        = "killed"         // SIGKILL from something else (kubelet, YARN, an operator)
	ReasonExited        = "exited"         // any other orderly exit
	ReasonUnknown       = "unknown"        // no hsperfdata file to tell a kill from an exit, and no other evidence
)

// Reasons lists every reason, in the order the rule tries them.
var Reasons = []string{ReasonOOMKilled, ReasonYARNPmem, ReasonYARNVmem, ReasonYARNElastic, ReasonHeapExhausted, ReasonInterrupted, ReasonKilled, ReasonExited, ReasonUnknown}

// File is what became of the JVM's hsperfdata file when the JVM was gone.
type File = jvmend.File

// The fates of the file.
const (
	FileUnknown    = jvmend.FileUnknown
	FileLeftBehind = jvmend.FileLeftBehind
	FileDeleted    = jvmend.FileDeleted
)

// Thresholds of the heap rule.
const (
	// HeapFullShare: the heap is full at this share (jvmend).
	HeapFullShare = jvmend.HeapFullShare
	// GCBusyShare: the JVM collected almost continuously when collections
	// took at least this share of the wall time of the final window.
	GCBusyShare = 0.5
	// MinGCWindow: a shorter window says too little about GC time.
	MinGCWindow = jvmend.MinGCWindow
	// FullGCsBeforeOOME: HotSpot throws OutOfMemoryError after a full
	// collection and then one that clears soft references both fail to
	// free enough. A healthy heap's old generation fills with garbage and
	// is emptied by one full collection, so a fill seen only before the end
	// counts when at least this many ran after it.
	FullGCsBeforeOOME = 2
	// FullGCRecent: a full collection that ended at most this long before
	// the JVM's counters stopped is one the JVM ran on its way out. HotSpot
	// throws OutOfMemoryError right after a full collection that freed too
	// little; Spark's shutdown hooks then run for a few seconds.
	FullGCRecent = 30 * time.Second
)

// Heap is what the JVM's counters said at the end.
type Heap = jvmend.Heap

// heapExhausted reports whether the heap rule holds, and the figures in words.
func heapExhausted(h Heap) (bool, string) {
	if !h.Known || h.Max == 0 {
		return false, "no heap figures"
	}
	share := float64(h.Used) / float64(h.Max)
	desc := fmt.Sprintf("heap used %.0f of %.0f MiB (%.0f%%)", inMiB(h.Used), inMiB(h.Max), 100*share)
	if h.OldMax > 0 {
		old := float64(h.OldUsed) / float64(h.OldMax)
		desc += fmt.Sprintf(", old generation %.0f of %.0f MiB (%.0f%%)", inMiB(h.OldUsed), inMiB(h.OldMax), 100*old)
		share = max(share, old)
	}
	if h.HasFullGC {
		desc += fmt.Sprintf(", last full collection %.1fs before the end", h.FullGCAgo.Seconds())
	}
	if h.GCWindow > 0 {
		desc += fmt.Sprintf(", %.0f%% of the last %.1fs collecting", 100*h.GCShare, h.GCWindow.Seconds())
	}
	desc += " (" + h.Source + ")"
	full := share >= HeapFullShare
	failedFulls := h.FullGCsSince
	if h.LiveAfterFull {
		failedFulls++
	}
	if !full && h.LiveShare >= HeapFullShare && h.LiveAgo <= FullGCRecent && failedFulls >= FullGCsBeforeOOME {
		full = true
		after := ""
		if h.LiveAfterFull {
			after = " right after a full collection"
		}
		desc += fmt.Sprintf(", but %.0f%% full at the last read %.1fs before the end%s, %d full collections since", 100*h.LiveShare, h.LiveAgo.Seconds(), after, h.FullGCsSince)
	}
	busy := (h.HasFullGC && h.FullGCAgo <= FullGCRecent) || (h.GCWindow >= MinGCWindow && h.GCShare >= GCBusyShare)
	return full && busy, desc
}

func inMiB(b uint64) float64 { return float64(b) / (1 << 20) }

// Death is a JVM the tracker saw alive and then found gone: what the
// tracker observed, and what YARN said of its container.
type Death struct {
	jvmend.End
	// YARN is the evidence about its YARN container; nil when it ran in
	// none (yarn.go).
	YARN *YARN
}

// Kill is a kernel OOM kill attributed to a tracked JVM.
type Kill struct {
	PID      int
	Received time.Time // when the exporter read it from the kernel log
	Cause    string    // the OOM verdict's cause, for the log
	Region   string    // what grew most, for a native kill; see oom.Verdict
}

// Interruption is an interruption notice seen pending on this machine
// from First to Last (the times the cloud collector's cache was looked at).
type Interruption struct {
	Event       string
	First, Last time.Time
}

// Verdict is how a JVM ended, and the evidence in words.
type Verdict struct {
	Reason   string
	Evidence string
	// Region is the kill's, for an OOM kill whose cause is native: what
	// grew most outside the heap (oom.Verdict.Region); for a YARN pmem
	// kill, YARN.Region; empty otherwise.
	Region string
	// Advice is what to change, for the YARN reasons; empty otherwise (an
	// OOM kill's is on its oom verdict).
	Advice string
}

// Lookback: a notice pending at most this long before the JVM was last
// seen alive still explains its end (the drain that follows a notice takes
// its time).
const Lookback = time.Minute

// Decide applies the rule to one death, with the kernel kill matched to it
// (nil when none) and the interruption notice that overlapped it (nil when
// none). The first that holds wins:
//
//  1. oom_killed: the kernel OOM killer killed it.
//  2. yarn_pmem_limit, yarn_vmem_limit, yarn_elastic_oom: the NodeManager
//     said its monitor killed the container for memory (exit status -104
//     or -103), or, under elastic control, a JVM in its container's cgroup
//     died of a SIGKILL the NodeManager had not sent (its OOM handler's).
//  3. heap_exhausted: not SIGKILLed (the file was deleted, or cannot
//     tell), and the heap or its old generation was full (HeapFullShare
//     of its max) at the end, or at the last read within FullGCRecent of
//     it with FullGCsBeforeOOME full collections since (the one the read
//     came right after, if it did, among them), while the JVM
//     collected hard (a full collection within FullGCRecent of the end, or
//     GCBusyShare of the final window).
//  4. interrupted: an interruption notice was pending.
//  5. yarn_vmem_limit, yarn_pmem_limit, inferred: with no word from the
//     NodeManager, a sample at most YARNInferWithin before the end had
//     the container's tree over a limit its polling monitor enforces.
//  6. killed: the file was left behind, or the NodeManager saw a SIGKILL
//     it had not sent (exit 137, "Killed by external signal").
//  7. exited: the file was deleted.
//  8. unknown: nothing says whether it was killed or exited.
func Decide(d Death, kill *Kill, notice *Interruption) Verdict {
	file := "hsperfdata file " + d.File.String()
	if d.File == FileUnknown && d.FileNote != "" {
		file = "hsperfdata file unknown: " + d.FileNote
	}
	heapGone, heap := heapExhausted(d.Heap)
	if kill == nil {
		if v, ok := yarnSeen(d, file, heap); ok {
			return v
		}
	}
	if note := yarnNote(d.YARN, kill != nil); note != "" {
		file += "; " + note
	}
	var inferred Verdict
	inferredOK := false
	if kill == nil && notice == nil && (!heapGone || d.File == FileLeftBehind) {
		inferred, inferredOK = yarnInferred(d, file, heap)
	}
	switch {
	case kill != nil:
		cause := kill.Cause
		if kill.Region != "" {
			cause += ", " + kill.Region + " grew most"
		}
		return Verdict{Reason: ReasonOOMKilled, Evidence: fmt.Sprintf("kernel OOM kill (cause %s) read %s after the JVM was last seen alive; %s; %s",
			cause, roundedSince(kill.Received, d.LastAlive), file, heap), Region: kill.Region}
	case heapGone && d.File != FileLeftBehind:
		return Verdict{Reason: ReasonHeapExhausted, Evidence: heap + "; " + file}
	case notice != nil:
		return Verdict{Reason: ReasonInterrupted, Evidence: fmt.Sprintf("%s notice pending from %s to %s; %s; %s",
			notice.Event, notice.First.UTC().Format(time.RFC3339), notice.Last.UTC().Format(time.RFC3339), file, heap)}
	case inferredOK:
		return inferred
	case d.File == FileLeftBehind || yarnSIGKILL(d.YARN):
		return Verdict{Reason: ReasonKilled, Evidence: file + " (SIGKILL) and no kernel OOM kill; " + heap}
	case d.File == FileDeleted:
		return Verdict{Reason: ReasonExited, Evidence: file + " (orderly exit); " + heap}
	default:
		return Verdict{Reason: ReasonUnknown, Evidence: file + "; no kernel OOM kill or interruption notice; " + heap}
	}
}

func roundedSince(t, since time.Time) string {
	return t.Sub(since).Round(100 * time.Millisecond).String()
}

// Matches reports whether a kill belongs to this death: the same pid,
// received no earlier than the process started (a pid is reused only
// after its previous holder is gone) and no later than the decision.
func (k Kill) Matches(d Death, decideAt time.Time) bool {
	return k.PID == d.PID && !k.Received.Before(d.Start) && !k.Received.After(decideAt)
}

// Overlaps reports whether a notice was pending between Lookback before the
// JVM was last seen alive and the decision.
func (n Interruption) Overlaps(d Death, decideAt time.Time) bool {
	return !n.Last.Before(d.LastAlive.Add(-Lookback)) && !n.First.After(decideAt)
}
