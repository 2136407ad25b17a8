package jvm

import (
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/go-kit/log/level"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// scan is one pass over the machine: it lists the processes, finds the
// JVMs among them, reads those that are due (all of them when all is set;
// the others keep their last reading), notices the ones that ended, and
// assembles the view. When nothing is due and nothing changed (idle,
// settled) it returns the last view as it is, and made false. It runs
// under refreshMu.
func (t *Tracker) scan(all bool) (view View, made bool, err error) {
	now := time.Now()
	table, err := t.processTable(now)
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
	jvms := jvmsIn(table, candidates)
	if !all && t.settled(table, jvms, now) {
		return t.keepView(now), false, nil
	}
	kept := t.keptReadings(table, all, now)
	view = t.readAll(table, jvms, kept, now)
	gone := t.ends.find(table, t.ids, now)
	view.JVMs = withoutEnded(view.JVMs, gone, now)
	t.recs.remember(view)
	t.recs.forget(table, now, max(t.cfg.Retention, t.cfg.EndedRetention), t.cfg.MaxProcesses)
	view.Ended = t.recs.ended(now, t.cfg.EndedRetention)
	t.scanned(now, view, gone)

	t.read.closeUnusedCgroups(kept)
	for k, at := range t.loggedAt {
		if now.Sub(at) > logEvery {
			delete(t.loggedAt, k)
		}
	}
	return view, true, nil
}

// processTable is this scan's process table, from the watch the first
// scan makes.
func (t *Tracker) processTable(now time.Time) (*procmem.ProcessTable, error) {
	if t.procs == nil {
		w, err := procmem.NewProcessWatch(t.cfg.ProcFS)
		if err != nil {
			return nil, err
		}
		t.procs = w
	}
	return t.procs.Scan(now)
}

// found is a JVM a scan found: a candidate, with its hsperfdata file, or
// a java process that publishes none (c nil).
type found struct {
	pid int
	c   *Candidate
}

func (f found) candidate() Candidate {
	if f.c != nil {
		return *f.c
	}
	return Candidate{PID: f.pid}
}

// javaComm is the kernel's command name of a JVM started by the java
// launcher (Spark's scripts, YARN, the Kubernetes images all exec it).
const javaComm = "java"

// jvmsIn lists the JVMs of the table, each pid once: the candidates, then
// the JVMs that publish no hsperfdata (-XX:+PerfDisableSharedMem,
// -XX:-UsePerfData), found by their java command name and no file of their
// own. Finding those reads nothing: Seen is the command name as last read,
// which the table reads again while a process is young (an exec) and then
// every few minutes.
func jvmsIn(table *procmem.ProcessTable, candidates []Candidate) []found {
	out := make([]found, 0, len(candidates)+4)
	withFile := make(map[int]bool, len(candidates))
	for i := range candidates {
		if pid := candidates[i].PID; !withFile[pid] { // a second hsperfdata_<user> directory for the same pid
			withFile[pid] = true
			out = append(out, found{pid: pid, c: &candidates[i]})
		}
	}
	for _, pid := range table.PIDs() {
		if p, ok := table.Seen(pid); ok && p.Comm == javaComm && !p.KernelThread && !withFile[pid] {
			out = append(out, found{pid: pid})
		}
	}
	return out
}

// readAll reads the JVMs found that are due, in one loop, and serves the
// others' last reading (kept). JVMs beyond MaxProcesses are dropped, those
// already tracked last, so that series do not flap between JVMs from one
// scrape to the next.
func (t *Tracker) readAll(table *procmem.ProcessTable, jvms []found, kept map[int]*JVM, now time.Time) View {
	sort.SliceStable(jvms, func(i, j int) bool { return t.recs.tracked(jvms[i].pid) && !t.recs.tracked(jvms[j].pid) })
	// One allocation for the view's readings: a JVM's is most of a
	// kilobyte, and a scan runs every few seconds.
	view := View{Time: now, JVMs: make([]JVM, 0, max(len(t.view.JVMs), len(jvms))+1)}
	cgroups := map[string]procmem.CgroupMemory{} // each distinct cgroup read once per scan
	fresh := 0
	for _, f := range jvms {
		if len(view.JVMs) >= t.cfg.MaxProcesses {
			view.Dropped++
			continue
		}
		if j, ok := kept[f.pid]; ok {
			view.JVMs = append(view.JVMs, t.keptJVM(j))
			continue
		}
		fresh++
		j, reason, err := t.readJVM(f, table, cgroups, now)
		if reason == ReasonStale {
			// A dead JVM's file under a pid reused: the process may be a
			// JVM without a file of its own.
			t.readFailed(f, reason, err, now)
			f.c = nil
			j, reason, err = t.readJVM(f, table, cgroups, now)
		}
		if err != nil {
			t.readFailed(f, reason, err, now)
			continue
		}
		view.JVMs = append(view.JVMs, j)
	}
	t.planNext(view, now)
	t.mu.Lock()
	t.reads += uint64(fresh)
	t.mu.Unlock()
	if view.Dropped > 0 {
		t.logOnce("cap", now, level.Warn, "msg", "more JVMs than --jvm.max-processes; some are not tracked",
			"max", t.cfg.MaxProcesses, "dropped", view.Dropped)
	}
	sort.Slice(view.JVMs, func(i, j int) bool { return view.JVMs[i].PID < view.JVMs[j].PID })
	return view
}

// readFailed counts and logs a failed reading; an empty reason (the
// process exited, or is not a JVM we own) is neither.
func (t *Tracker) readFailed(f found, reason string, err error, now time.Time) {
	if reason != "" {
		t.countError(reason)
		t.logFailure(f.candidate(), reason, err, now)
	}
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

// readJVM reads one JVM found, through its hsperfdata file or without
// one, and hands it to ends. A failure returns the reason to count, or an
// empty reason when the process simply exited or is not a JVM we own.
func (t *Tracker) readJVM(f found, table *procmem.ProcessTable, cgroups map[string]procmem.CgroupMemory, now time.Time) (JVM, string, error) {
	proc, ok := table.Process(f.pid)
	if !ok {
		return JVM{}, "", errors.New("gone")
	}
	if f.c == nil && proc.Comm != javaComm {
		return JVM{}, "", errors.New("no JVM")
	}
	if proc.RSS == 0 {
		// Exiting (a zombie, or its memory already torn down after a
		// kill): a sample now would replace the last real one, which is
		// what OOM attribution needs.
		return JVM{}, "", errors.New("exiting")
	}
	id, err := t.ids.identity(t.recs.of(f.pid, proc.StartTime), proc)
	if err != nil {
		return JVM{}, classify(err), err
	}
	var (
		j      JVM
		mark   gcMark
		reason string
	)
	if f.c != nil {
		j, mark, reason, err = t.read.read(*f.c, proc, id, t.ends.held(f.pid, proc.StartTime), table, now)
	} else {
		j, reason, err = t.read.bare(proc, id, table, now)
	}
	if err != nil {
		return JVM{}, reason, err
	}
	if t.native != nil && f.c != nil {
		j.Native = t.native.get(f.pid, proc.StartTime)
	}
	if err := t.read.cgroup(&j, proc, cgroups, now); err != nil && !isGone(err) {
		t.readFailed(f, ReasonCgroup, err, now) // costs only the container series
	}
	if t.cfg.YARN != nil && j.YARNContainer != "" && j.CgroupLimit == 0 {
		j.Allocation, _ = t.cfg.YARN.Allocation(j.YARNContainer)
	}
	t.read.updatePeaks(&j, proc.StartTime, now)
	root, _ := table.Root(f.pid)
	t.ends.observe(f.c, proc, id.euid, root, &j, mark, now)
	return j, "", nil
}
