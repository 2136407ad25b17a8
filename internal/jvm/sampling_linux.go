package jvm

import (
	"path/filepath"
	"slices"
	"sync"
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
	for _, e := range t.ended {
		if now.Sub(e.at) > t.cfg.EndedRetention {
			return false
		}
	}
	return !t.ends.anyEnded()
}

// settled says that a scan of a changed process table would still read
// nothing: the processes that came and went are none of the JVMs (every
// candidate, and every java process without a file, is a JVM of the last
// view, the same processes, and the view has no other), and it is idle
// otherwise. On a node where probes and scripts start a process every few
// seconds, a scan then costs its listing and discovery, not a new view.
// What the scan would have forgotten of the processes gone, the next scan
// that reads forgets.
func (t *Tracker) settled(table *procmem.ProcessTable, candidates []Candidate, now time.Time) bool {
	if t.view.Dropped > 0 || !t.idle(false, now) {
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
	withFile := make(map[int]bool, len(candidates))
	for _, c := range candidates {
		if j := inView[c.PID]; j == nil || j.Counters != CountersHsperf {
			return false
		}
		withFile[c.PID] = true
	}
	bare := 0
	for _, pid := range table.PIDs() {
		p, ok := table.Seen(pid)
		if !ok || p.Comm != javaComm || p.KernelThread || withFile[pid] {
			continue
		}
		if j := inView[pid]; j == nil || j.Counters == CountersHsperf {
			return false
		}
		bare++
	}
	return len(withFile)+bare == len(t.view.JVMs)
}

// keepView is an idle scan's result: the last view, and the heartbeat
// the OnExits hook gets from every scan.
func (t *Tracker) keepView(now time.Time) View {
	if f := t.ends.hook.Load(); f != nil {
		(*f)(now, nil)
	}
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
		dir := j.Cgroup.Dir
		if j.CgroupLimit == 0 {
			dir = ""
		}
		d := t.cfg.Sampling.interval(p, j, t.usage.Load().notifies(dir))
		at := now.Add(d)
		switch {
		case d >= t.cfg.Sampling.Slowest:
			at = t.sched.aligned(at, t.cfg.Sampling.Slowest)
		case d >= t.cfg.Sampling.Discovery:
			at = t.sched.aligned(at, t.cfg.Sampling.Discovery)
		}
		t.sched.plan(j.PID, j.ProcessStart, at, dir, d < t.cfg.Sampling.Discovery)
	}
	t.sched.keep(func(pid int) bool { return in[pid] })
}

// Notification mechanisms, for executor_jvm_sampling_containers.
const (
	NotifyThreshold = procmem.NotifyThreshold // the kernel says when 75 % and 90 % are crossed
	NotifyEvents    = procmem.NotifyEvents    // it says when the cgroup is short of memory; the headroom sets the interval
	NotifyNone      = "none"                  // nothing: the headroom alone sets the interval
)

// usageWatch asks the kernel to report when a JVM's container crosses
// RiskThresholds of its limit, and wakes the tracker when it does. Where
// it cannot (permissions, cgroup v2, a kernel without the files), the
// container is sampled by its headroom alone. A nil usageWatch watches
// nothing.
type usageWatch struct {
	sysfs    string
	notifier usageNotifier // nil when none could be made

	mu      sync.Mutex
	watched map[string]watchedCgroup // by directory, relative to sysfs
	done    chan struct{}
}

type watchedCgroup struct {
	limit, cell uint64 // what the thresholds were made from (usageThresholds)
	mechanism   string
}

// usageNotifier is procmem.UsageNotifier, or a stand-in in tests.
type usageNotifier interface {
	Watch(key, dir string, thresholds []uint64) (mechanism string, err error)
	Unwatch(key string)
	Events() <-chan string
	Close() error
}

// newUsageNotifier makes the kernel's notifier; tests replace it.
var newUsageNotifier = func() (usageNotifier, error) {
	n, err := procmem.NewUsageNotifier()
	if err != nil {
		return nil, err
	}
	return n, nil
}

func newUsageWatch(sysfs string, wake func(dir string)) *usageWatch {
	w := &usageWatch{sysfs: sysfs, watched: map[string]watchedCgroup{}, done: make(chan struct{})}
	n, err := newUsageNotifier()
	if err != nil {
		close(w.done)
		return w
	}
	w.notifier = n
	go func() {
		defer close(w.done)
		for dir := range n.Events() {
			wake(dir)
		}
	}()
	return w
}

// sync watches the containers with a limit of view's JVMs, again when a
// limit changed or a container's usage left the step it was in, and stops
// watching those no JVM is in.
func (w *usageWatch) sync(view View) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	type reading struct{ limit, usage uint64 }
	containers := map[string]reading{}
	for i := range view.JVMs {
		j := &view.JVMs[i]
		if j.HasCgroup && j.CgroupLimit > 0 && j.Cgroup.Dir != "" {
			containers[j.Cgroup.Dir] = reading{j.CgroupLimit, j.CgroupUsage}
		}
	}
	for dir := range w.watched {
		if _, ok := containers[dir]; !ok {
			if w.notifier != nil {
				w.notifier.Unwatch(dir)
			}
			delete(w.watched, dir)
		}
	}
	for dir, r := range containers {
		thresholds, cell := usageThresholds(r.limit, r.usage)
		c, ok := w.watched[dir]
		if ok && c.limit == r.limit && (c.cell == cell || c.mechanism != NotifyThreshold) {
			continue
		}
		c = watchedCgroup{limit: r.limit, cell: cell, mechanism: NotifyNone}
		if w.notifier != nil {
			if m, err := w.notifier.Watch(dir, filepath.Join(w.sysfs, dir), thresholds); err == nil {
				c.mechanism = m
			}
		}
		w.watched[dir] = c
	}
}

// usageThresholds are what the kernel is asked to report of a container
// with this limit, last read at this usage: crossings of RiskThresholds,
// and a move out of the step of usage it is in (a step is 5 % of the
// limit, at least 32 MiB), so that a JVM read every 30 s while nothing
// moves is read at once when its container grows. cell is the step's
// lower bound: the thresholds change when it does.
func usageThresholds(limit, usage uint64) (thresholds []uint64, cell uint64) {
	step := max(limit/20, moveStep)
	cell = min(usage, limit) / step * step
	for _, share := range RiskThresholds {
		thresholds = append(thresholds, uint64(share*float64(limit)))
	}
	if cell > 0 {
		thresholds = append(thresholds, cell)
	}
	if cell+step < limit {
		thresholds = append(thresholds, cell+step)
	}
	slices.Sort(thresholds)
	return slices.Compact(thresholds), cell
}

// moveStep is the least move of a container's usage the kernel is asked
// to report.
const moveStep = 32 << 20

// notifies: the kernel reports when the cgroup at dir crosses
// RiskThresholds.
func (w *usageWatch) notifies(dir string) bool {
	if w == nil || dir == "" {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched[dir].mechanism == NotifyThreshold
}

// Mechanisms counts the containers watched, by how the kernel reports on
// them.
func (w *usageWatch) mechanisms() map[string]int {
	out := map[string]int{NotifyThreshold: 0, NotifyEvents: 0, NotifyNone: 0}
	if w == nil {
		return out
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.watched {
		out[c.mechanism]++
	}
	return out
}

// mechanismOf says how the kernel reports on the container at dir, if it
// is watched.
func (w *usageWatch) mechanismOf(dir string) (string, bool) {
	if w == nil || dir == "" {
		return "", false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.watched[dir]
	return c.mechanism, ok
}

func (w *usageWatch) close() {
	if w == nil {
		return
	}
	if w.notifier != nil {
		_ = w.notifier.Close()
	}
	<-w.done
}

// Notifications counts the containers with a limit of their own that the
// JVMs are in, by how the sampler hears that one nears its limit:
// NotifyThreshold, NotifyEvents or NotifyNone.
func (t *Tracker) Notifications() map[string]int {
	if t == nil {
		return (*usageWatch)(nil).mechanisms()
	}
	return t.usage.Load().mechanisms()
}
