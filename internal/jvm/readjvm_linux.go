package jvm

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// readJVM reads one candidate. A failure returns the reason to count, or
// an empty reason when the process simply exited or is not a JVM we own.
func (t *Tracker) readJVM(c Candidate, table *procmem.ProcessTable, cgroups map[string]procmem.CgroupMemory, now time.Time) (JVM, string, error) {
	proc, ok := table.Process(c.PID)
	if !ok {
		return JVM{}, "", errors.New("gone")
	}
	if proc.RSS == 0 {
		// Exiting (a zombie, or its memory already torn down after a
		// kill): a sample now would replace the last real one, which is
		// what OOM attribution needs.
		return JVM{}, "", errors.New("exiting")
	}
	id, err := t.identity(proc)
	if err != nil {
		return JVM{}, classify(err), err
	}
	data := t.readHeld(c, proc, t.buf)
	if data == nil {
		if data, err = ReadHsperf(t.cfg.ProcFS, c, id.euid, t.buf); err != nil {
			return JVM{}, classify(err), err
		}
	}
	t.buf = data // reused by the next read; ParseStats copies what it keeps
	prev, had := t.ticks[c.PID]
	had = had && prev.start.Equal(proc.StartTime)
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
		return JVM{}, parseFailure(err, proc.StartTime, now), err
	}
	mark := tickMark{start: proc.StartTime, ticks: ticks, at: now, stats: stats, plan: plan}
	if had && ticks == prev.ticks {
		mark.at = prev.at // since when it stands still
	}
	t.ticks[c.PID] = mark
	if isStale(stats.StartTime, proc.StartTime, prev, had, ticks, now) {
		return JVM{}, ReasonStale, fmt.Errorf("hsperfdata of a JVM created at %v (timer %d, before %d), the process started at %v",
			stats.StartTime, ticks, prev.ticks, proc.StartTime)
	}

	rss := table.TreeRSS(c.PID)
	j := JVM{
		Sample: Sample{
			Identity: Identity{
				PID:        c.PID,
				Role:       id.cmd.Role,
				AppID:      id.cmd.AppID,
				ExecutorID: id.cmd.ExecutorID,
			},
			NSPID:            c.NSPID,
			Time:             now,
			HeapUsed:         stats.HeapUsed,
			HeapCommitted:    stats.HeapCommitted,
			HeapMax:          stats.HeapMax,
			NonHeapCommitted: stats.NonHeapCommitted,
			RSSJVM:           rss.JVM,
			RSSPython:        rss.Python,
			RSSOther:         rss.Other,
		},
		MainClass:    id.cmd.MainClass,
		Xmx:          id.cmd.Xmx,
		Pod:          id.pod,
		ProcessStart: proc.StartTime,
		Stats:        stats,
		Counters:     CountersHsperf,
	}
	if t.native != nil {
		j.Native = t.native.get(c.PID, proc.StartTime)
	}
	t.readCgroup(&j, c, proc, cgroups, now)
	t.observe(&c, proc, id.euid, &j, gcMark{ticks: ticks, gcSeconds: gcSeconds(stats)}, now)
	return j, "", nil
}

// readCgroup fills in the memory cgroup holding the JVM.
func (t *Tracker) readCgroup(j *JVM, c Candidate, p procmem.Process, cgroups map[string]procmem.CgroupMemory, now time.Time) {
	cg, err := t.cgroupMemory(p, cgroups, now)
	if err != nil {
		// Only the container series are lost; the JVM is still reported.
		if !isGone(err) {
			t.countError(ReasonCgroup)
			t.logFailure(c, ReasonCgroup, err, now)
		}
		return
	}
	j.Cgroup, j.HasCgroup = cg, true
	j.CgroupPath, j.CgroupLimit, j.CgroupUsage = cg.Path, cg.Limit, cg.Usage
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
	start time.Time // process start, so a reused pid starts afresh
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

// identity reads what does not change while a process runs one program —
// its effective uid, command line and environment — once per process and
// program (pid, start time, command name: an exec keeps the first two):
// /proc/<pid>/status alone costs more to produce than the hsperfdata file
// it guards.
func (t *Tracker) identity(p procmem.Process) (identityEntry, error) {
	pid := p.PID
	if e, ok := t.identities[pid]; ok && e.start.Equal(p.StartTime) && e.comm == p.Comm {
		return e, nil
	}
	proc, err := t.fs.Proc(pid)
	if err != nil {
		return identityEntry{}, err
	}
	status, err := proc.NewStatus()
	if err != nil {
		return identityEntry{}, err
	}
	dir := filepath.Join(t.cfg.ProcFS, strconv.Itoa(pid))
	e := identityEntry{start: p.StartTime, comm: p.Comm, euid: uint32(status.UIDs[1]), cmd: Command{Role: RoleJVM}}
	if b, err := readTruncated(filepath.Join(dir, "cmdline"), maxCmdlineBytes); err == nil {
		e.cmd = ParseCmdline(b)
	}
	// environ is readable only with ptrace access; without it the command
	// line alone decides.
	var env Environment
	if b, err := readTruncated(filepath.Join(dir, "environ"), maxEnvironBytes); err == nil {
		env = ParseEnviron(b)
		e.cmd = e.cmd.Merge(env)
		e.pod = env.PodName
	}
	e.noCounters = NoCounters(e.cmd, env)
	t.identities[pid] = e
	return e, nil
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

func (t *Tracker) logFailure(c Candidate, reason string, err error, now time.Time) {
	lvl := level.Warn
	if reason == ReasonStale {
		lvl = level.Debug
	}
	t.logOnce(fmt.Sprintf("%d/%s", c.PID, reason), now, lvl,
		"msg", "skipping JVM", "pid", c.PID, "nspid", c.NSPID, "dir", c.Dir, "reason", reason, "err", err)
}

// logOnce logs at most once per logEvery for a key.
func (t *Tracker) logOnce(key string, now time.Time, lvl func(log.Logger) log.Logger, keyvals ...interface{}) {
	if at, ok := t.loggedAt[key]; ok && now.Sub(at) < logEvery {
		return
	}
	t.loggedAt[key] = now
	lvl(t.logger).Log(keyvals...)
}
