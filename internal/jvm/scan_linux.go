package jvm

import (
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/go-kit/log/level"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// scan lists the processes, finds the JVMs and their ends, and reads the
// JVMs that are due (all of them when all is set); the others keep their
// last reading. When nothing is due and nothing changed (idle) it returns
// the last view as it is, and made false. It runs under refreshMu.
func (t *Tracker) scan(all bool) (view View, made bool, err error) {
	now := time.Now()
	if t.procs == nil {
		w, err := procmem.NewProcessWatch(t.cfg.ProcFS)
		if err != nil {
			return View{}, false, err
		}
		t.procs = w
	}
	table, err := t.procs.Scan(now)
	if err != nil {
		return View{}, false, err
	}
	if !all && t.idle(table.Changed(), now) {
		return t.keepView(now), false, nil
	}
	candidates, err := t.found.find(table)
	if err != nil {
		return View{}, false, err
	}
	if !all && t.settled(table, candidates, now) {
		return t.keepView(now), false, nil
	}

	// JVMs already tracked keep their place when the cap bites, so series
	// do not flap between JVMs from one scrape to the next.
	t.mu.RLock()
	sort.SliceStable(candidates, func(i, j int) bool {
		_, ti := t.samples[candidates[i].PID]
		_, tj := t.samples[candidates[j].PID]
		return ti && !tj
	})
	t.mu.RUnlock()

	// One allocation for the view's readings: a JVM's is most of a
	// kilobyte, and a scan runs every few seconds.
	view = View{Time: now, JVMs: make([]JVM, 0, max(len(t.view.JVMs), len(candidates))+1)}
	kept := t.keptReadings(table, all, now)
	fresh := 0
	read := map[int]bool{}
	withFile := map[int]bool{} // candidates, but for files of a dead JVM's
	cgroups := map[string]procmem.CgroupMemory{}
	for _, c := range candidates {
		if read[c.PID] {
			continue // a second hsperfdata_<user> directory for the same pid
		}
		if len(read) >= t.cfg.MaxProcesses {
			view.Dropped++
			read[c.PID] = true
			continue
		}
		if j, ok := kept[c.PID]; ok {
			read[c.PID], withFile[c.PID] = true, true
			view.JVMs = append(view.JVMs, t.keptJVM(j))
			continue
		}
		fresh++
		j, reason, err := t.readJVM(c, table, cgroups, now)
		withFile[c.PID] = withFile[c.PID] || reason != ReasonStale
		if err != nil {
			if reason != "" {
				t.countError(reason)
				t.logFailure(c, reason, err, now)
			}
			continue
		}
		read[c.PID] = true
		view.JVMs = append(view.JVMs, j)
	}
	fresh += t.scanBare(table, withFile, read, kept, cgroups, &view, now)
	t.planNext(view, now)
	t.mu.Lock()
	t.reads += uint64(fresh)
	t.mu.Unlock()
	if view.Dropped > 0 {
		t.logOnce("cap", now, level.Warn, "msg", "more JVMs than --jvm.max-processes; some are not tracked",
			"max", t.cfg.MaxProcesses, "dropped", view.Dropped)
	}
	sort.Slice(view.JVMs, func(i, j int) bool { return view.JVMs[i].PID < view.JVMs[j].PID })
	gone := t.ends.find(table, t.found, now)
	if f := t.ends.hook.Load(); f != nil {
		(*f)(now, gone)
	}
	view.JVMs = withoutEnded(view.JVMs, gone, now)
	view.Ended = t.keepEnded(gone, view.JVMs, now)

	t.found.ids.forget(table)
	t.recs.forget(table)
	t.read.closeUnusedCgroups(kept)
	for k, at := range t.loggedAt {
		if now.Sub(at) > logEvery {
			delete(t.loggedAt, k)
		}
	}
	return view, true, nil
}

// withoutEnded drops from jvms the kept readings of the JVMs found gone in
// this scan: a JVM not due keeps its place in the view from its last
// reading, and a SIGKILL leaves its hsperfdata file, and with it the pid
// among the candidates, until the process table's next full listing. A
// JVM read in this scan is alive, though it may have the pid of one that
// ended.
func withoutEnded(jvms []JVM, gone []Exit, now time.Time) []JVM {
	if len(gone) == 0 {
		return jvms
	}
	ended := make(map[int]bool, len(gone))
	for _, e := range gone {
		ended[e.Last.PID] = true
	}
	return slices.DeleteFunc(jvms, func(j JVM) bool { return ended[j.PID] && !j.Time.Equal(now) })
}

// readJVM reads one candidate and hands it to ends. A failure returns the
// reason to count, or an empty reason when the process simply exited or
// is not a JVM we own.
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
	id, err := t.found.identity(proc)
	if err != nil {
		return JVM{}, classify(err), err
	}
	j, mark, reason, err := t.read.read(c, proc, id, t.ends.held(c.PID, proc.StartTime), table, now)
	if err != nil {
		return JVM{}, reason, err
	}
	if t.native != nil {
		j.Native = t.native.get(c.PID, proc.StartTime)
	}
	t.readCgroup(&j, c, proc, cgroups, now)
	t.read.updatePeaks(&j, proc.StartTime, now)
	t.ends.observe(&c, proc, id.euid, t.found.root(c.PID), &j, mark, now)
	return j, "", nil
}

// readCgroup reads the memory cgroup holding the JVM; a failure costs only
// the container series.
func (t *Tracker) readCgroup(j *JVM, c Candidate, p procmem.Process, cgroups map[string]procmem.CgroupMemory, now time.Time) {
	if err := t.read.cgroup(j, p, cgroups, now); err != nil && !isGone(err) {
		t.countError(ReasonCgroup)
		t.logFailure(c, ReasonCgroup, err, now)
	}
	if t.cfg.YARN != nil && j.YARNContainer != "" && j.CgroupLimit == 0 {
		j.Allocation, _ = t.cfg.YARN.Allocation(j.YARNContainer)
	}
}

// javaComm is the kernel's command name of a JVM started by the java
// launcher (Spark's scripts, YARN, the Kubernetes images all exec it).
const javaComm = "java"

// scanBare finds the JVMs that publish no hsperfdata — started with
// -XX:+PerfDisableSharedMem or -XX:-UsePerfData — among the processes of
// the table: a java command name and no hsperfdata file of their own
// (withFile). Finding them reads nothing (the command names the process
// table already knows); reading one costs its stat, tree and, once per
// process, its identity. They are added to
// view within the same cap as the others. Runs under refreshMu.
// It returns how many it read; those not due keep their reading (kept).
func (t *Tracker) scanBare(table *procmem.ProcessTable, withFile, read map[int]bool, kept map[int]*JVM, cgroups map[string]procmem.CgroupMemory, view *View, now time.Time) int {
	fresh := 0
	for _, pid := range table.PIDs() {
		// Seen costs no read: the command name as last read, which the
		// table reads again while a process is young (an exec) and then
		// every few minutes. Process reads the few that pass.
		if p, ok := table.Seen(pid); !ok || p.Comm != javaComm || p.KernelThread || withFile[pid] || read[pid] {
			continue
		}
		if j, ok := kept[pid]; ok {
			read[pid] = true
			view.JVMs = append(view.JVMs, t.keptJVM(j))
			continue
		}
		p, ok := table.Process(pid)
		if !ok || p.Comm != javaComm {
			continue
		}
		if len(read) >= t.cfg.MaxProcesses {
			view.Dropped++
			continue
		}
		fresh++
		j, reason, err := t.readBare(p, table, cgroups, now)
		if err != nil {
			if reason != "" {
				t.countError(reason)
				t.logFailure(Candidate{PID: pid}, reason, err, now)
			}
			continue
		}
		read[pid] = true
		view.JVMs = append(view.JVMs, j)
	}
	return fresh
}

// readBare reads a JVM without hsperfdata and hands it to ends.
func (t *Tracker) readBare(p procmem.Process, table *procmem.ProcessTable, cgroups map[string]procmem.CgroupMemory, now time.Time) (JVM, string, error) {
	if p.RSS == 0 {
		return JVM{}, "", errors.New("exiting")
	}
	id, err := t.found.identity(p)
	if err != nil {
		return JVM{}, classify(err), err
	}
	j, reason, err := t.read.bare(p, id, table, now)
	if err != nil {
		return JVM{}, reason, err
	}
	t.readCgroup(&j, Candidate{PID: p.PID}, p, cgroups, now)
	t.read.updatePeaks(&j, p.StartTime, now)
	t.ends.observe(nil, p, id.euid, t.found.root(p.PID), &j, gcMark{}, now)
	return j, "", nil
}

// endedJVM is a JVM that ended, as last read.
type endedJVM struct {
	last Sample
	at   time.Time
}

// keepEnded adds the JVMs found gone to those kept, drops those older than
// EndedRetention (and the oldest beyond MaxProcesses, a cardinality
// guard), and returns the ones no JVM in live has taken the pid of.
func (t *Tracker) keepEnded(gone []Exit, live []JVM, now time.Time) []Sample {
	for _, e := range gone {
		t.ended[e.Last.PID] = endedJVM{last: e.Last, at: now}
	}
	for len(t.ended) > t.cfg.MaxProcesses {
		oldest := -1
		for pid, e := range t.ended {
			if oldest < 0 || e.at.Before(t.ended[oldest].at) {
				oldest = pid
			}
		}
		delete(t.ended, oldest)
	}
	if len(t.ended) == 0 {
		return nil
	}
	taken := make(map[int]bool, len(live))
	for _, j := range live {
		taken[j.PID] = true
	}
	var out []Sample
	for pid, e := range t.ended {
		if now.Sub(e.at) > t.cfg.EndedRetention {
			delete(t.ended, pid)
			continue
		}
		if !taken[pid] {
			out = append(out, e.last)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
