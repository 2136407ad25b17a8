package jvm

import (
	"errors"
	"fmt"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// reader reads one JVM at a time: its hsperfdata, its process tree's
// resident memory and its memory cgroup, keeping from read to read what
// makes the next one cheaper (the read buffer, each JVM's hsperf.Plan and
// last strings, the cgroup files and directories). Used under the
// tracker's scan lock.
type reader struct {
	procPath, sysfsPath string
	recs                records               // what is kept of each JVM, the tracker's
	buf                 []byte                // hsperfdata read buffer, reused across JVMs and scans
	cgBuf               []byte                // /proc/<pid>/cgroup read buffer
	cgroups             *procmem.CgroupReader // made by the first read; keeps cgroup directories open
	status              *procmem.PeakReader
}

func newReader(procPath, sysfsPath string, recs records) *reader {
	return &reader{procPath: procPath, sysfsPath: sysfsPath, recs: recs, status: procmem.NewPeakReader(procPath)}
}

// read reads the candidate c, the process proc, whose identity is id,
// through held (its hsperfdata file held open, or -1). A failure returns
// the reason to count, or an empty reason when the process simply exited
// or is not a JVM we own. The cgroup is read apart (cgroup).
func (r *reader) read(c Candidate, proc procmem.Process, id identityEntry, held int, table *procmem.ProcessTable, now time.Time) (JVM, gcMark, string, error) {
	rec := r.recs.of(c.PID, proc.StartTime)
	prev, had := rec.ticks, rec.hasTicks
	data := readHeld(held, r.buf)
	if data == nil {
		var err error
		if data, err = ReadHsperf(r.procPath, c, id.euid, r.buf); err != nil {
			return JVM{}, gcMark{}, classify(err), err
		}
	}
	r.buf = data // reused by the next read; ParseStats copies what it keeps
	// The last read's strings (command line, flags, collector names) are
	// reused when unchanged; Stats are never modified once read.
	// The plan checks the file against what it learned before, so one
	// kept for a pid now reused by another JVM costs a full parse, no more.
	plan := prev.plan
	if plan == nil {
		plan = new(hsperf.Plan)
	}
	stats, ticks, err := hsperf.ParseStats(data, &prev.stats, plan)
	if err != nil {
		return JVM{}, gcMark{}, parseFailure(err, proc.StartTime, now), err
	}
	mark := tickMark{ticks: ticks, at: now, stats: stats, plan: plan}
	if had && ticks == prev.ticks {
		mark.at = prev.at // since when it stands still
	}
	rec.ticks, rec.hasTicks = mark, true
	if isStale(stats.StartTime, proc.StartTime, prev, had, ticks, now) {
		return JVM{}, gcMark{}, ReasonStale, fmt.Errorf("hsperfdata of a JVM created at %v (timer %d, before %d), the process started at %v",
			stats.StartTime, ticks, prev.ticks, proc.StartTime)
	}

	var prevStats *hsperf.Stats
	if had {
		prevStats = &prev.stats
	}
	live, _ := heapLive(&stats, prevStats)
	j := newJVM(proc, id, table.TreeRSS(c.PID), now)
	j.NSPID, j.Stats, j.Counters, j.Peaks = c.NSPID, stats, CountersHsperf, Peaks{HeapLive: live}
	j.HeapUsed, j.HeapCommitted, j.HeapMax, j.NonHeapCommitted = stats.HeapUsed, stats.HeapCommitted, stats.HeapMax, stats.NonHeapCommitted
	return j, gcMark{ticks: ticks, gcSeconds: gcSeconds(stats), liveShare: liveShare(&stats, live), afterFull: lastCollectionFull(&stats), fullGCs: fullCollections(&stats)}, "", nil
}

// newJVM is a reading of the process p, who is id, with its tree's
// resident memory: what every reading has, with hsperfdata or without.
func newJVM(p procmem.Process, id identityEntry, rss procmem.TreeRSS, now time.Time) JVM {
	return JVM{
		Sample: Sample{
			Identity:      Identity{PID: p.PID, Role: id.cmd.Role, AppID: id.cmd.AppID, ExecutorID: id.cmd.ExecutorID},
			Time:          now,
			RSSJVM:        rss.JVM,
			RSSPython:     rss.Python,
			RSSOther:      rss.Other,
			YARNContainer: id.cmd.YARNContainer,
			TreeVSize:     rss.VSize,
		},
		MainClass:    id.cmd.MainClass,
		Xmx:          id.cmd.Xmx,
		Pod:          id.pod,
		ProcessStart: p.StartTime,
	}
}

// bare reads a JVM without hsperfdata: what needs no counters, the
// process tree's resident memory (the cgroup is read apart).
func (r *reader) bare(p procmem.Process, id identityEntry, table *procmem.ProcessTable, now time.Time) (JVM, string, error) {
	counters := id.noCounters
	if counters == "" {
		if now.Sub(p.StartTime) < startupGrace {
			// Its file is on its way: HotSpot creates it early in start-up.
			return JVM{}, "", errors.New("starting")
		}
		counters = CountersNoFile
	}
	j := newJVM(p, id, table.TreeRSS(p.PID), now)
	j.Counters = counters
	return j, "", nil
}

// cgroup fills in the memory cgroup holding the JVM. An error costs only
// the container series; the JVM is still reported.
func (r *reader) cgroup(j *JVM, p procmem.Process, cgroups map[string]procmem.CgroupMemory, now time.Time) error {
	cg, err := r.cgroupMemory(p, cgroups, now)
	if err != nil {
		return err
	}
	j.Cgroup, j.HasCgroup = cg, true
	j.CgroupPath, j.CgroupLimit, j.CgroupUsage = cg.Path, cg.Limit, cg.Usage
	return nil
}

// close closes the cgroup directories kept open.
func (r *reader) close() {
	if r.cgroups != nil {
		_ = r.cgroups.Close()
		r.cgroups = nil
	}
}

func gcSeconds(s hsperf.Stats) float64 {
	var sum float64
	for _, g := range s.GCs {
		sum += g.Seconds
	}
	return sum
}

// tickMark is a JVM's high-resolution timer as last read: a live JVM's
// StatSampler moves it every PerfDataSamplingInterval (50 ms by default); a
// dead JVM's file keeps it frozen.
type tickMark struct {
	ticks int64
	at    time.Time    // when ticks took this value
	stats hsperf.Stats // the last read's, whose strings the next read reuses
	plan  *hsperf.Plan // where the last read found the counters, for the next
}

// frozenAfter is how long a timer may stand still before its file is taken
// for a dead JVM's. The sampler runs on HotSpot's WatcherThread, not held
// by GC pauses; the margin is for JVMs that sample less often than the
// default and for stalls of the whole machine.
const frozenAfter = time.Minute

// isStale decides whether an hsperfdata file belongs to a JVM that is gone,
// its pid reused by the process now there. The file records the wall-clock
// time the VM was created, and a JVM is created after its process starts,
// so a file older than the process is stale — the process start rests on
// /proc/stat's btime, whole seconds rounded down, so it is up to 1s early,
// never late. A wall clock stepped forward after the JVM started makes a
// live JVM look older than its process too; a timer seen moving since the
// last scan overrules the clocks, so such a JVM is missed for one scan, not
// until it restarts. A timer standing still for frozenAfter is stale
// whatever the clocks say.
func isStale(created, procStart time.Time, prev tickMark, had bool, ticks int64, now time.Time) bool {
	if had && ticks == prev.ticks && now.Sub(prev.at) >= frozenAfter {
		return true
	}
	moving := had && ticks > prev.ticks
	return !moving && (created.IsZero() || created.Before(procStart.Add(-startSlack)))
}

// startupGrace is how long a JVM may take to publish its counters: HotSpot
// creates the file empty, zeroed, then with accessible=0, and fills it in
// while the VM initialises.
const startupGrace = 30 * time.Second

// parseFailure says why hsperfdata did not parse: a young JVM still writing
// its counters is no failure (it is read on the next scan); anything else,
// including a file that stays inaccessible, is corrupt.
func parseFailure(err error, started, now time.Time) string {
	if errors.Is(err, hsperf.ErrNotAccessible) && now.Sub(started) < startupGrace {
		return ""
	}
	return ReasonCorrupt
}

func classify(err error) string {
	switch {
	case isGone(err):
		return ""
	case errors.Is(err, ErrUntrusted):
		return ReasonUntrusted
	case errors.Is(err, ErrTooLarge):
		return ReasonCorrupt
	case isPermission(err):
		return ReasonPermission
	default:
		return ReasonRead
	}
}
