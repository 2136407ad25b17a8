package jvm

import (
	"path/filepath"
	"sync"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// keptReadings are the JVMs of the last view that are not due: a scan
// serves their last reading instead of reading them. A JVM whose pid now
// belongs to another process, or that was never read in the background,
// is not kept. With all set, nothing is.
func (t *Tracker) keptReadings(table *procmem.ProcessTable, all bool, now time.Time) map[int]JVM {
	if all || len(t.view.JVMs) == 0 {
		return nil
	}
	kept := make(map[int]JVM, len(t.view.JVMs))
	for _, j := range t.view.JVMs {
		p, ok := table.Seen(j.PID)
		if !ok || j.ProcessStart.IsZero() || !p.StartTime.Equal(j.ProcessStart) || t.sched.due(j.PID, j.ProcessStart, now) {
			continue
		}
		if t.native != nil && j.Counters == CountersHsperf {
			j.Native = t.native.get(j.PID, j.ProcessStart) // its own loop may have read one since
		}
		kept[j.PID] = j
	}
	return kept
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
		t.sched.plan(j.PID, j.ProcessStart, now.Add(d), dir, d < t.cfg.Sampling.Discovery)
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
	limit     uint64
	mechanism string
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
// limit changed, and stops watching those no JVM is in.
func (w *usageWatch) sync(view View) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	limits := map[string]uint64{}
	for i := range view.JVMs {
		j := &view.JVMs[i]
		if j.HasCgroup && j.CgroupLimit > 0 && j.Cgroup.Dir != "" {
			limits[j.Cgroup.Dir] = j.CgroupLimit
		}
	}
	for dir := range w.watched {
		if _, ok := limits[dir]; !ok {
			if w.notifier != nil {
				w.notifier.Unwatch(dir)
			}
			delete(w.watched, dir)
		}
	}
	for dir, limit := range limits {
		if c, ok := w.watched[dir]; ok && c.limit == limit {
			continue
		}
		c := watchedCgroup{limit: limit, mechanism: NotifyNone}
		if w.notifier != nil {
			thresholds := make([]uint64, len(RiskThresholds))
			for i, share := range RiskThresholds {
				thresholds[i] = uint64(share * float64(limit))
			}
			if m, err := w.notifier.Watch(dir, filepath.Join(w.sysfs, dir), thresholds); err == nil {
				c.mechanism = m
			}
		}
		w.watched[dir] = c
	}
}

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
