package jvm

import (
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// record is what the tracker's scans keep about one JVM from reading to
// reading: a process, named by its pid and its start time, so that a pid
// reused by another process starts from nothing. It is made at the JVM's
// first reading (records.of) and forgotten when the process table no
// longer has that process (records.forget), in one place for all it
// holds. Three things about a JVM live elsewhere, each for a reason of its
// own: its life (ends, exit_linux.go), which holds descriptors until its
// end is judged; its breakdown by region (nativeReader), read by a loop
// of its own; its last sample (Tracker.samples), which outlives it for
// the OOM collector.
type record struct {
	start time.Time
	// ticks is the last hsperfdata reading (reader.read); zero before
	// the first.
	ticks    tickMark
	hasTicks bool
	// cgroupFile is /proc/<pid>/cgroup as last read (reader.cgroupKey).
	cgroupFile   string
	cgroupFileAt time.Time
	// peaks are the highest figures read (reader.updatePeaks).
	peaks peakMark
	// plan is when the JVM is next due (schedule).
	plan    plannedRead
	hasPlan bool
}

// records are the tracker's records by pid. Not safe for concurrent use:
// the scans own them.
type records map[int]*record

// of returns the record of pid started at start: the one kept, or a new
// one when there is none or the pid belongs to another process now.
func (rs records) of(pid int, start time.Time) *record {
	r := rs[pid]
	if r == nil || !r.start.Equal(start) {
		r = &record{start: start}
		rs[pid] = r
	}
	return r
}

// get returns the record of pid started at start, if one is kept.
func (rs records) get(pid int, start time.Time) (*record, bool) {
	r := rs[pid]
	if r == nil || !r.start.Equal(start) {
		return nil, false
	}
	return r, true
}

// forget drops the records of the processes the table no longer has, or
// whose pid another process has now.
func (rs records) forget(table *procmem.ProcessTable) {
	for pid, r := range rs {
		if p, ok := table.Seen(pid); !ok || !p.StartTime.Equal(r.start) {
			delete(rs, pid)
		}
	}
}
