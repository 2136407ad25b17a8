package jvm

import (
	"slices"
	"sync"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// record is what the tracker keeps of one JVM, a process named by its pid
// and its start time, from its first reading to its forgetting. Its
// states:
//
//   - live: made at the JVM's first reading (records.of), it carries what
//     makes the next reading cheaper and its plan (ticks, cgroupFile,
//     peaks, plan), the JVM's life (the hsperfdata file and pidfd held to
//     tell its end, exit_linux.go), its breakdown by region and its last
//     sample.
//   - ended: a scan found the process gone (ends.find): its life is
//     closed and its end handed over; it keeps its last sample, for
//     LastSample (Config.Retention) and View.Ended (Config.EndedRetention).
//   - forgotten: records.forget, the one place a record is deleted, drops
//     a live record whose process the table no longer has (or whose pid
//     another process has now), and an ended one once both retentions ran
//     out, or the oldest ended ones beyond MaxProcesses. A pid reused by a
//     new JVM starts a new record in its place (records.of).
//
// Its breakdown by region (native) is read by a loop of its own
// (nativeReader). What is known of every process, JVM or not (its root,
// its pid in its namespace), the process table keeps.
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
	// life is followed by ends until the JVM's end is found; nil before
	// the first complete reading and once ended.
	life *life
	// last is the last sample and endedAt when the JVM was found gone
	// (zero while it lives), guarded by records.mu: LastSample reads them
	// without waiting for a scan.
	last    Sample
	hasLast bool
	endedAt time.Time
	// native is its breakdown by region, which the native loop reads
	// (nativeReader), guarded by nativeReader.mu.
	native *nativeState
	// id is who the process is (identityReader.identity); nil until read.
	id *identityEntry
}

// records are the tracker's records by pid. The scans own them: only the
// scanning goroutine writes, taking mu for what others read (the map, and
// each record's last sample and end), so that LastSample never waits for a
// scan.
type records struct {
	mu *sync.RWMutex
	m  map[int]*record
}

func newRecords() records { return records{mu: &sync.RWMutex{}, m: map[int]*record{}} }

// of returns the live record of pid started at start: the one kept, or a
// new one when there is none, the pid belongs to another process now, or
// the JVM it had ended.
func (rs records) of(pid int, start time.Time) *record {
	r := rs.m[pid]
	if r == nil || !r.start.Equal(start) || !r.endedAt.IsZero() {
		if r != nil && r.life != nil {
			// The pid's JVM ended between two scans and another took its
			// pid: its end is not told.
			r.life.close()
		}
		r = &record{start: start}
		rs.mu.Lock()
		rs.m[pid] = r
		rs.mu.Unlock()
	}
	return r
}

// get returns the live record of pid started at start, if one is kept.
func (rs records) get(pid int, start time.Time) (*record, bool) {
	r := rs.m[pid]
	if r == nil || !r.start.Equal(start) || !r.endedAt.IsZero() {
		return nil, false
	}
	return r, true
}

// remember sets the last sample of each JVM of view: a kept reading
// carries the breakdown by region read since.
func (rs records) remember(view View) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := range view.JVMs {
		j := &view.JVMs[i]
		if r, ok := rs.get(j.PID, j.ProcessStart); ok {
			r.last, r.hasLast = j.Sample, true
		}
	}
}

// end moves r to the ended state, with its last sample.
func (rs records) end(r *record, last Sample, now time.Time) {
	rs.mu.Lock()
	r.last, r.hasLast, r.endedAt = last, true, now
	rs.mu.Unlock()
	r.life, r.hasPlan = nil, false
}

// lastSample is pid's last sample, live or ended.
func (rs records) lastSample(pid int) (Sample, bool) {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	if r := rs.m[pid]; r != nil && r.hasLast {
		return r.last, true
	}
	return Sample{}, false
}

// tracked says whether pid has been read: its JVM keeps its place when the
// cap bites.
func (rs records) tracked(pid int) bool {
	r := rs.m[pid]
	return r != nil && r.hasLast
}

// ended returns the last samples of the JVMs that ended within retention,
// by pid.
func (rs records) ended(now time.Time, retention time.Duration) []Sample {
	var out []Sample
	for _, r := range rs.m {
		if !r.endedAt.IsZero() && now.Sub(r.endedAt) <= retention {
			out = append(out, r.last)
		}
	}
	slices.SortFunc(out, func(a, b Sample) int { return a.PID - b.PID })
	return out
}

// forget drops the records the tracker no longer needs (see record): live
// ones whose process the table no longer has, ended ones past keep, and
// the oldest ended beyond maxEnded.
func (rs records) forget(table *procmem.ProcessTable, now time.Time, keep time.Duration, maxEnded int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var ended []int
	for pid, r := range rs.m {
		switch {
		case r.endedAt.IsZero():
			if p, ok := table.Seen(pid); !ok || !p.StartTime.Equal(r.start) {
				if r.life != nil {
					r.life.close()
				}
				delete(rs.m, pid)
			}
		case now.Sub(r.endedAt) > keep:
			delete(rs.m, pid)
		default:
			ended = append(ended, pid)
		}
	}
	if len(ended) <= maxEnded {
		return
	}
	slices.SortFunc(ended, func(a, b int) int { return rs.m[a].endedAt.Compare(rs.m[b].endedAt) })
	for _, pid := range ended[:len(ended)-maxEnded] {
		delete(rs.m, pid)
	}
}
