package collector

import (
	"slices"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/oom"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
)

// statusReporter is implemented by the collectors that have something for
// the status page (docs/status-page.md), from what they hold in memory.
type statusReporter interface {
	reportStatus(s *statuspage.Snapshot)
}

// Status assembles the status page's snapshot from the tracker's last
// sampling and the collectors; Version and MetricsPath are the caller's.
func (ec *ExecutorCollector) Status() statuspage.Snapshot {
	s := statuspage.Snapshot{Time: time.Now()}
	if ec.deps != nil && ec.deps.tracker != nil {
		pods := podsOf(ec.deps.pods)
		view := ec.deps.tracker.Last()
		s.JVMsSampled, s.JVMsDropped = view.Time, view.Dropped
		s.JVMs = make([]statuspage.JVM, 0, len(view.JVMs))
		for i := range view.JVMs {
			s.JVMs = append(s.JVMs, statusJVM(&view.JVMs[i], pods))
		}
	}
	for _, c := range ec.Collectors {
		if r, ok := c.(statusReporter); ok {
			r.reportStatus(&s)
		}
	}
	return s
}

// statusJVM is a JVM's row, named from the last pod list (asking for no
// new one), its strings capped as label values are.
func statusJVM(j *jvm.JVM, pods cloud.PodsSnapshot) statuspage.JVM {
	out := statuspage.JVM{
		Identity:  statusIdentity(j.PID, j.Role, j.AppID, j.ExecutorID),
		MainClass: labelValue(j.MainClass),
		Counters:  j.Counters,
		Memory: statuspage.Memory{
			HeapUsed: j.Stats.HeapUsed, HeapCommitted: j.Stats.HeapCommitted, HeapMax: j.Stats.HeapMax,
			NonHeapUsed: j.Stats.NonHeapUsed, NonHeapCommitted: j.Stats.NonHeapCommitted,
			RSSJVM: j.RSSJVM, RSSPython: j.RSSPython, RSSOther: j.RSSOther,
		},
	}
	out.Peaks = statuspage.Peaks{HeapLive: j.Peaks.HeapLive, NonHeap: j.Peaks.NonHeap, Python: j.Peaks.Python,
		Container: j.Peaks.Container, Resident: j.Peaks.Resident}
	pod := resolvePod(j, pods, nil, nil)
	out.Namespace, out.Pod = labelValue(pod.namespace), labelValue(pod.pod)
	// The budget: the cgroup's limit, or a YARN container's allocation
	// against the process tree's resident memory (jvm.Sample.Budget).
	out.ContainerLimit, out.ContainerUsage = j.Budget()
	if j.HasCgroup {
		if out.ContainerLimit == 0 {
			out.ContainerUsage = j.Cgroup.Usage
		}
		if p := j.Cgroup.Pressure; p.HasSome {
			out.ContainerPressure = &statuspage.Pressure{SomeAvg10: p.SomeAvg10, FullAvg10: p.FullAvg10}
		}
	}
	return out
}

func statusIdentity(pid int, role, appID, executorID string) statuspage.Identity {
	return statuspage.Identity{PID: pid, Role: labelValue(role), AppID: labelValue(appID), ExecutorID: labelValue(executorID)}
}

// maxRecent is how many kills, and how many exits, the page shows.
const maxRecent = 20

func (c *oomCollector) reportStatus(s *statuspage.Snapshot) {
	s.KillsFollowed = c.follower.Err() == nil
	c.mu.Lock()
	defer c.mu.Unlock()
	s.Kills = append(s.Kills, newestFirst(c.recent)...)
}

// appendRecent appends item to list, oldest first, dropping the oldest
// beyond max.
func appendRecent[T any](list []T, item T, max int) []T {
	if len(list) == max {
		list = append(list[:0], list[1:]...)
	}
	return append(list, item)
}

// newestFirst is a copy of list, oldest first, in reverse.
func newestFirst[T any](list []T) []T {
	out := slices.Clone(list)
	slices.Reverse(out)
	return out
}

// statusKill is a kill as the page shows it, at the time it was recorded;
// namespace and pod name the victim's pod then.
func statusKill(a oom.Attribution, at time.Time, namespace, pod string) statuspage.Kill {
	k, v := a.Kill, a.Victim
	out := statuspage.Kill{
		Time: at, PID: k.PID, Task: labelValue(k.Task), Constraint: k.Constraint,
		Cause: a.Verdict.Cause, Region: a.Verdict.Region, Reason: a.Verdict.Reason, Advice: a.Verdict.Advice,
		KilledAnonRSS: k.AnonRSSKiB << 10,
		Namespace:     namespace, Pod: pod,
	}
	if a.Found {
		id := statusIdentity(v.PID, v.Role, v.AppID, v.ExecutorID)
		id.Namespace, id.Pod = namespace, pod
		out.Victim = &id
		out.LastSample = &statuspage.Sample{Time: v.SampledAt, Memory: statuspage.Memory{
			HeapUsed: v.HeapUsed, HeapCommitted: v.HeapCommitted, HeapMax: v.HeapMax, NonHeapCommitted: v.NonHeapCommitted,
			RSSJVM: v.RSSJVM, RSSPython: v.RSSPython, RSSOther: v.RSSOther,
			ContainerLimit: v.CgroupLimit, ContainerUsage: v.CgroupUsage,
		}}
	}
	return out
}

// reportStatus reads the refresher's cache, as Update does.
func (c *cloudCollector) reportStatus(s *statuspage.Snapshot) {
	snap := c.refresher.Snapshot()
	if !snap.Refreshed {
		return
	}
	i := snap.Instance
	m := &statuspage.Machine{
		Provider: i.Provider, Platform: i.Platform, InstanceType: i.InstanceType, Lifecycle: i.Lifecycle,
		Region: i.Region, Zone: i.Zone, InstanceID: i.InstanceID, Node: i.Node, NodePool: i.NodePool,
		Source: i.Source, LastRefresh: snap.LastSuccess,
	}
	for _, n := range snap.Notices {
		m.Notices = append(m.Notices, statuspage.Notice{Event: n.Event, Pending: n.Pending, Time: n.Time})
	}
	s.Machine = m
}
