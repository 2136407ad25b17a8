// Package jvmend holds what the JVM tracker observes of a JVM's end and
// hands to the judge (internal/exits): the fate of its hsperfdata file
// and its heap at the end. A leaf, so that the reader and the judge
// depend on it and not on each other.
package jvmend

import "time"

// End is a JVM the tracker saw alive and then found gone, as observed.
type End struct {
	PID       int
	Start     time.Time // the process's start: kills received before it were a previous process's
	LastAlive time.Time // the last scan that found it alive
	Noticed   time.Time // the scan that found it gone
	File      File
	FileNote  string // why File is unknown
	Heap      Heap
}

// File is what became of the JVM's hsperfdata file when the JVM was gone.
// HotSpot deletes it on every orderly exit (System.exit, the end of main,
// the shutdown on SIGTERM, a crash) and cannot when the process is SIGKILLed.
type File int

const (
	FileUnknown    File = iota // no file was held (see FileNote) or it went away while the JVM ran
	FileLeftBehind             // still linked after the process was gone: SIGKILL
	FileDeleted                // unlinked by the JVM on its way out: an orderly exit
)

func (f File) String() string {
	switch f {
	case FileLeftBehind:
		return "left_behind"
	case FileDeleted:
		return "deleted"
	default:
		return "unknown"
	}
}

// HeapFullShare: the heap is full when used is at least this share of its
// maximum, or the old generation's of its own (the same share as the OOM
// verdict's near-max heap). After a full collection the young generation
// is nearly empty, and with the parallel collector it is a third of the
// heap: the old generation is what is full then.
const HeapFullShare = 0.9

// MinGCWindow: a shorter window says too little about GC time.
const MinGCWindow = time.Second

// Heap is what the JVM's counters said at the end: from the file the
// tracker held open, read after the process was gone (as of the JVM's last
// counter update), or else from the last sample.
type Heap struct {
	Known  bool
	Source string // "final counters" or "last sample", for the log
	Used   uint64
	Max    uint64
	// The old generation (G1 Old Gen, PS Old Gen, Tenured Gen); 0 when
	// the collector has none.
	OldUsed, OldMax uint64
	// FullGCAgo is how long before the counters stopped the last full
	// collection ended; HasFullGC is false when none ran or the collector
	// has none (ZGC).
	HasFullGC bool
	FullGCAgo time.Duration
	// GCShare is the share of GCWindow (wall time) spent collecting, over
	// the window since an earlier sample; GCWindow 0 when unknown.
	GCShare  float64
	GCWindow time.Duration
	// LiveShare is the heap's fill at the last read before the end, or at
	// the last that found it full when a later one found it emptied (the
	// larger of what survived collections over the heap's max and the old
	// generation over its own), LiveAgo before the counters stopped, and
	// FullGCsSince the full collections between that read and the end;
	// LiveShare 0 when unknown. A JVM whose handler drops what a task held
	// before it exits (the task's stack unwinds with the OutOfMemoryError)
	// ends with an empty heap after a full collection: the last read is
	// when it was full.
	LiveShare    float64
	LiveAgo      time.Duration
	FullGCsSince uint64
	// LiveAfterFull: that read came after a full collection and before any
	// other, so the fill it found is what the full collection left, and
	// that collection counts among the ones that freed too little.
	LiveAfterFull bool
}
