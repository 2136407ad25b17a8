package jvm

import (
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// keptReadings are the JVMs of the last view that are not due: a scan
// serves their last reading instead of reading them (keptJVM). A JVM whose
// pid now belongs to another process, or that was never read in the
// background, is not kept. With all set, nothing is. The readings are the
// last view's, shared with its readers: not to be modified.
func (t *Tracker) keptReadings(table *procmem.ProcessTable, all bool, now time.Time) map[int]*JVM {
	if all || len(t.view.JVMs) == 0 {
		return nil
	}
	kept := make(map[int]*JVM, len(t.view.JVMs))
	for i := range t.view.JVMs {
		j := &t.view.JVMs[i]
		p, ok := table.Seen(j.PID)
		if !ok || j.ProcessStart.IsZero() || !p.StartTime.Equal(j.ProcessStart) || t.sched.due(j.PID, j.ProcessStart, now) {
			continue
		}
		kept[j.PID] = j
	}
	return kept
}

// keptJVM is a kept reading as this scan serves it.
func (t *Tracker) keptJVM(j *JVM) JVM {
	out := *j
	if t.native != nil && out.Counters == CountersHsperf {
		out.Native = t.native.get(out.PID, out.ProcessStart) // its own loop may have read one since
	}
	return out
}

// idle says that a background scan would read and find nothing: the
// process table did not change (tableChanged false: no process started,
// and none of the young ones changed), no JVM of the last view is due,
// none has ended, and no ended JVM's retention ran out. The scan then
// keeps the last view as it is (keepView), and the series built from it
// stand.
func (t *Tracker) idle(tableChanged bool, now time.Time) bool {
	if tableChanged || t.view.Time.IsZero() {
		return false
	}
	for i := range t.view.JVMs {
		j := &t.view.JVMs[i]
		if j.ProcessStart.IsZero() || t.sched.due(j.PID, j.ProcessStart, now) {
			return false
		}
	}
	for _, s := range t.view.Ended {
		if r := t.recs.m[s.PID]; r == nil || now.Sub(r.endedAt) > t.cfg.EndedRetention {
			return false
		}
	}
	return !t.ends.anyEnded()
}

// settled says that a scan of a changed process table would still read
// nothing: the processes that came and went are none of the JVMs (every
// JVM found, with its file or without, is a JVM of the last view, the same
// process, and the view has no other), and it is idle otherwise. On a node
// where probes and scripts start a process every few seconds, a scan then
// costs its listing and discovery, not a new view. What the scan would
// have forgotten of the processes gone, the next scan that reads forgets.
func (t *Tracker) settled(table *procmem.ProcessTable, jvms []found, now time.Time) bool {
	if t.view.Dropped > 0 || len(jvms) != len(t.view.JVMs) || !t.idle(false, now) {
		return false
	}
	inView := make(map[int]*JVM, len(t.view.JVMs))
	for i := range t.view.JVMs {
		j := &t.view.JVMs[i]
		if p, ok := table.Seen(j.PID); !ok || !p.StartTime.Equal(j.ProcessStart) {
			return false
		}
		inView[j.PID] = j
	}
	for _, f := range jvms {
		if j := inView[f.pid]; j == nil || (f.c != nil) != (j.Counters == CountersHsperf) {
			return false
		}
	}
	return true
}

// keepView is an idle scan's result: the last view, and the heartbeat
// the OnScan functions get from every scan.
func (t *Tracker) keepView(now time.Time) View {
	t.scanned(now, t.view, nil)
	return t.view
}

// planNext sets when each JVM read in this scan is read again, from its
// risk, and forgets the JVMs no longer in view.
func (t *Tracker) planNext(view View, now time.Time) {
	prev := make(map[int]*JVM, len(t.view.JVMs))
	for i := range t.view.JVMs {
		prev[t.view.JVMs[i].PID] = &t.view.JVMs[i]
	}
	in := make(map[int]bool, len(view.JVMs))
	for i := range view.JVMs {
		j := &view.JVMs[i]
		in[j.PID] = true
		if !j.Time.Equal(now) {
			continue // kept: its plan stands
		}
		p := prev[j.PID]
		if p != nil && !p.ProcessStart.Equal(j.ProcessStart) {
			p = nil
		}
		d := t.cfg.Sampling.interval(p, j)
		at := now.Add(d)
		switch {
		case d >= t.cfg.Sampling.Slowest:
			at = t.sched.aligned(at, t.cfg.Sampling.Slowest)
		case d >= t.cfg.Sampling.Discovery:
			at = t.sched.aligned(at, t.cfg.Sampling.Discovery)
		}
		t.sched.plan(j.PID, j.ProcessStart, at, d < t.cfg.Sampling.Discovery)
		j.NearAllocation = nearAllocation(j, d, t.cfg.Sampling)
	}
	t.sched.keep(func(pid int) bool { return in[pid] })
}

// nearAllocation: j's budget is its YARN container's allocation, and it is
// above 75 % of it, or grows fast enough to be read again before the next
// discovery scan.
func nearAllocation(j *JVM, next time.Duration, c SamplingConfig) bool {
	if j.Allocation == 0 || j.CgroupLimit > 0 {
		return false
	}
	limit, used := j.Budget()
	return float64(used) >= riskShare*float64(limit) || next < c.Discovery
}
