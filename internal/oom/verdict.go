package oom

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/executor-exporter/executor_exporter/internal/cgroupid"
	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// Causes, the values of the cause label.
const (
	CauseHeap    = "heap"    // the Java heap filled the container
	CauseNative  = "native"  // memory outside the heap did
	CauseNode    = "node"    // the machine ran out of memory, not a container
	CauseUnknown = "unknown" // not a tracked JVM, or its sample says too little
)

// Thresholds of the verdict; docs/oom.md explains them.
const (
	// HeapBulkShare: the heap is "the bulk" of the memory when committed
	// heap is at least this share of the container's usage (or of the
	// process tree's resident memory when the container is unknown).
	HeapBulkShare = 0.5
	// HeapNearMaxShare: the heap is "full" when used heap is at least this
	// share of its maximum.
	HeapNearMaxShare = 0.9
)

// Verdict is the judged cause of a kill, the figures behind it, and what
// to change; the log line and the status page show all three.
type Verdict struct {
	Cause  string
	Reason string // the figures and what they show
	Advice string // the Spark setting or limit to change; empty for node and unknown
	// Region is, for a native kill, what grew most outside the heap: a
	// region of the JVM's breakdown, "shmem" (the container's tmpfs
	// pages) or "python" (PySpark workers); empty when unknown.
	Region string
}

// Explanation is the reason and the advice in one sentence, for the log.
func (v Verdict) Explanation() string {
	if v.Advice == "" {
		return v.Reason
	}
	return v.Reason + "; " + v.Advice
}

// Judge says what filled the memory of a killed process from its constraint
// and its last sample (found false when the victim was not a tracked JVM).
//
//   - A global OOM (constraint NONE, CPUSET or MEMORY_POLICY) is "node":
//     whatever the victim held, the machine as a whole was out of memory.
//   - A memcg OOM of a tracked JVM is "heap" when the heap was the bulk of
//     the container's memory and either it was near its maximum or its
//     maximum did not fit in what the container had left beside non-heap
//     memory (-Xmx too large for the limit). Otherwise it is "native": the
//     heap had room and the rest of the memory is what grew.
//   - With no sample, or a sample without any memory figure, "unknown".
func Judge(k Kill, s Victim, found bool) Verdict {
	v := judgeCause(k, s, found)
	if v.Cause == CauseNative {
		nameRegion(&v, k, s)
	}
	return v
}

// RegionPython names PySpark workers as what grew: all of their resident
// memory grew, since they start after the JVM.
const RegionPython = nativemem.Python

// nameRegion says which native memory filled the container: the region
// that grew most since the JVM's first minute, or the Python workers when
// they hold more than that growth and a quarter of what is not heap; when
// no breakdown saw a region grow by InferMinBytes, the region inferred by
// elimination (inferRegion). Its advice replaces the generic one.
func nameRegion(v *Verdict, k Kill, s Victim) {
	g := s.Growth
	usage, _ := s.usage()
	nonHeap := usage - min(usage, s.HeapCommitted)
	switch {
	// Without a breakdown, only Python workers holding a good part of the
	// memory outside the heap are named.
	case s.RSSPython > 0 && s.RSSPython >= g.Bytes && 4*s.RSSPython >= nonHeap:
		v.Region = RegionPython
		v.Reason += fmt.Sprintf("; Python workers hold %.0f MiB", float64(s.RSSPython)/(1<<20))
		v.Advice = s.pythonAdvice()
	case g.Region == "" || g.Bytes < InferMinBytes:
		region, detail := inferRegion(k, s)
		if region == "" {
			if g.Region != "" {
				nameGrowth(v, g, s, nonHeap)
			}
			return
		}
		v.Region = region
		v.Reason += "; " + detail
		a := nativemem.Advice(region)
		if region == RegionDirectOrMalloc {
			a = directOrMallocAdvice
		}
		v.Advice = a + "; meanwhile, " + s.overheadAdvice(nonHeap)
	default:
		nameGrowth(v, g, s, nonHeap)
	}
}

// nameGrowth names the region the breakdowns saw grow most.
func nameGrowth(v *Verdict, g nativemem.Growth, s Victim, nonHeap uint64) {
	v.Region = g.Region
	v.Reason += "; " + g.String()
	if a := nativemem.Advice(g.Region); a != "" {
		// The region's own remedy, then what gets the executor through
		// meanwhile.
		v.Advice = a + "; meanwhile, " + s.overheadAdvice(nonHeap)
	}
}

// usage is the memory the verdict weighs the heap against: the
// container's, or the process tree's resident memory when the container is
// unknown, and what it is.
func (s Victim) usage() (uint64, string) {
	if s.CgroupUsage > 0 {
		return s.CgroupUsage, "container usage"
	}
	return s.RSSJVM + s.RSSPython + s.RSSOther, "resident memory of the process tree"
}

// nodeVerdict is the verdict of a kill that no container's own limit
// caused, whoever the victim: a global OOM, or a memcg OOM of a group
// above the victim's (aboveContainer). ok is false for any other kill.
func nodeVerdict(k Kill) (v Verdict, ok bool) {
	switch {
	case k.Constraint == ConstraintNone || k.Constraint == ConstraintCpuset || k.Constraint == ConstraintMemoryPolicy:
		return Verdict{Cause: CauseNode, Reason: "the machine ran out of memory (" + k.Constraint + "), not a container limit"}, true
	case aboveContainer(k):
		return Verdict{Cause: CauseNode, Reason: fmt.Sprintf("the memory cgroup %s, which holds the victim's %s and others, ran out: the node's share for containers, not the container's own limit", k.OOMMemcg, k.TaskMemcg)}, true
	}
	return Verdict{}, false
}

func judgeCause(k Kill, s Victim, found bool) Verdict {
	if v, ok := nodeVerdict(k); ok {
		return v
	}
	if !found {
		return Verdict{Cause: CauseUnknown, Reason: "the victim was not a tracked JVM"}
	}
	usage, usageOf := s.usage()
	if usage == 0 || s.HeapCommitted == 0 {
		return Verdict{Cause: CauseUnknown, Reason: "the last sample has no heap or memory figures"}
	}
	heapShare := float64(s.HeapCommitted) / float64(usage)
	bulk := heapShare >= HeapBulkShare
	nearMax := s.HeapMax > 0 && float64(s.HeapUsed) >= HeapNearMaxShare*float64(s.HeapMax)
	nonHeap := usage - min(usage, s.HeapCommitted)
	// The heap's maximum does not fit beside what is not heap: the heap
	// alone could grow to the limit.
	tooBig := s.CgroupLimit == 0 || s.HeapMax == 0 || s.HeapMax+nonHeap > s.CgroupLimit

	// Committed heap need not be resident yet, so the share can pass 100%.
	share := fmt.Sprintf("committed heap %.0f MiB against %s %.0f MiB (%.0f%%)",
		float64(s.HeapCommitted)/(1<<20), usageOf, float64(usage)/(1<<20), 100*heapShare)
	switch {
	case bulk && nearMax:
		return Verdict{Cause: CauseHeap,
			Reason: share + fmt.Sprintf(" and heap used was %.0f%% of its max: the heap filled up", 100*float64(s.HeapUsed)/float64(s.HeapMax)),
			Advice: s.overheadAdvice(nonHeap) + heapFilledNote}
	case bulk && tooBig:
		return Verdict{Cause: CauseHeap,
			Reason: share + " and the heap's max does not fit in the container beside non-heap memory",
			Advice: s.tooBigAdvice(nonHeap)}
	case bulk:
		return Verdict{Cause: CauseNative,
			Reason: share + " but its max fits in the container: non-heap memory pushed it over the limit",
			Advice: s.overheadAdvice(nonHeap)}
	default:
		return Verdict{Cause: CauseNative,
			Reason: share + ": off-heap memory (direct buffers, metaspace, thread stacks, Python workers) filled the container",
			Advice: s.overheadAdvice(nonHeap)}
	}
}

// aboveContainer reports whether a memcg kill hit the limit of a group
// above the victim's own, one its container shares with others: on
// Kubernetes kubepods (the node's allocatable memory), under YARN or
// systemd the slice that holds every container. Both paths are the
// kernel's, so they compare as they are.
//
// The victim's pod's own cgroup is not such a group. The kubelet limits it
// to the sum of its containers' limits, and it also holds the sandbox's
// pages: a pod of one container reaches the pod's limit a few pages
// before the container's own, and the kernel names the pod's cgroup.
func aboveContainer(k Kill) bool {
	if k.Constraint != ConstraintMemcg || k.OOMMemcg == "" || k.TaskMemcg == "" || k.OOMMemcg == k.TaskMemcg {
		return false
	}
	if k.OOMMemcg != "/" && !strings.HasPrefix(k.TaskMemcg, k.OOMMemcg+"/") {
		return false
	}
	group, task := cgroupid.Parse(k.OOMMemcg), cgroupid.Parse(k.TaskMemcg)
	ownPod := group.PodUID != "" && group.ContainerID == "" && group.PodUID == task.PodUID
	return !ownPod
}

// judgeChild says why a process in an executor's cgroup, not the JVM, was
// killed. The kernel chose it for its memory (its oom_score): memory
// beside the heap filled the container (native), and a Python child is a
// PySpark worker, whose budget is spark.executor.pyspark.memory. A kill
// no container's limit caused is the node's, whoever it chose.
func judgeChild(k Kill, s Victim) Verdict {
	if v, ok := nodeVerdict(k); ok {
		v.Reason = fmt.Sprintf("the executor's child %s (pid %d) was killed: %s", k.Task, k.PID, v.Reason)
		return v
	}
	killed := (k.AnonRSSKiB + k.ShmemRSSKiB) << 10
	usage, usageOf := s.usage()
	v := Verdict{Cause: CauseNative,
		Reason: fmt.Sprintf("the executor's child %s (pid %d), not the JVM, was killed holding %.0f MiB at %s %.0f MiB; the JVM lives on",
			k.Task, k.PID, float64(killed)/(1<<20), usageOf, float64(usage)/(1<<20))}
	if isPython(k.Task) {
		v.Region = RegionPython
		s.RSSPython = max(s.RSSPython, killed)
		v.Advice = s.pythonAdvice()
		return v
	}
	v.Advice = s.overheadAdvice(max(usage-min(usage, s.HeapCommitted), killed))
	return v
}

// pythonTask is a Python interpreter's command name (python, python3,
// python3.11), as PySpark's workers have: the rule by which the process
// tree's resident memory counts them as Python (internal/procmem).
var pythonTask = regexp.MustCompile(`^python(\d+(\.\d+)?)?$`)

func isPython(task string) bool { return pythonTask.MatchString(task) }
