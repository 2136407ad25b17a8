package oom

import (
	"strings"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// Victim is what the verdict needs to know of a killed process: who it was
// and its memory figures when it was last read. Byte counts are 0 when
// unknown. The caller fills it from whatever keeps processes' last readings
// (the JVM tracker), so this package depends on no reader.
type Victim struct {
	PID        int
	Role       string // "executor", "driver" or "jvm"
	AppID      string
	ExecutorID string
	SampledAt  time.Time

	HeapUsed         uint64
	HeapCommitted    uint64
	HeapMax          uint64
	NonHeapCommitted uint64

	RSSJVM    uint64
	RSSPython uint64
	RSSOther  uint64

	CgroupPath  string // as /proc/<pid>/cgroup gives it
	CgroupLimit uint64 // 0 when unlimited
	CgroupUsage uint64

	// Growth is what grew most outside the heap since the JVM's first
	// minute, from its last breakdown by region; zero without one.
	Growth nativemem.Growth
	// Breakdown is the JVM's last breakdown by region (HasBreakdown), the
	// base a region is inferred against when no breakdown saw the growth.
	Breakdown    nativemem.Reading
	HasBreakdown bool

	// The highest figures since the JVM was first read (jvm.Peaks), which
	// size the advice; 0 when unknown.
	PeakHeapLive, PeakNonHeap, PeakPython uint64
}

// VictimLookup returns the last reading of the process with this pid, if
// one was kept.
type VictimLookup func(pid int) (Victim, bool)

// OwnerLookup returns the last reading of the one tracked JVM whose
// memory cgroup is memcg (a path as the kernel prints it), if exactly one
// is: a process killed there that is no tracked JVM is that executor's
// (a PySpark worker, anything else it started).
type OwnerLookup func(memcg string) (Victim, bool)

// Attribution is a kill with its victim and the judged cause.
type Attribution struct {
	Kill   Kill
	Victim Victim // zero unless Found
	Found  bool   // the victim was a tracked process in the kill's memcg, or in its cgroup (Child)
	Reused bool   // a tracked process had the pid, but in another memcg
	// Child: the process killed was not the JVM but another in the JVM's
	// memory cgroup; Victim is the JVM's reading, and the JVM lives on.
	Child   bool
	Verdict Verdict
}

// Attribute names the victim of a kill and judges its cause: the one step
// between a kernel record and a counted kill. A pid whose last reading was
// in another memory cgroup than the kernel's task_memcg belongs to a
// process that has since been replaced (pid reuse): it is not the victim.
// A victim that is no tracked JVM is the executor's whose cgroup it was
// killed in, when owner names one: the kill carries that executor's
// identity, judged as a child's (judgeChild). lookup and owner may be nil
// when nothing is tracked.
func Attribute(k Kill, lookup VictimLookup, owner OwnerLookup) Attribution {
	a := Attribution{Kill: k}
	if lookup != nil {
		a.Victim, a.Found = lookup(k.PID)
	}
	if !a.Found {
		a.Victim = Victim{}
	}
	if a.Found && !sameMemcg(a.Victim.CgroupPath, k.TaskMemcg) {
		a.Victim, a.Found, a.Reused = Victim{}, false, true
	}
	// Without the kernel's task_memcg (before 4.19) a process's cgroup is
	// not known from the kill: nothing to find its executor by.
	if !a.Found && owner != nil && k.TaskMemcg != "" {
		if v, ok := owner(k.TaskMemcg); ok && v.PID != k.PID && v.CgroupPath != "" && sameMemcg(v.CgroupPath, k.TaskMemcg) {
			a.Victim, a.Found, a.Child = v, true, true
		}
	}
	if a.Child {
		a.Verdict = judgeChild(k, a.Victim)
	} else {
		a.Verdict = Judge(k, a.Victim, a.Found)
	}
	return a
}

// SameMemcg says whether a process's cgroup, as /proc/<pid>/cgroup gives
// it, and a memcg the kernel printed can be the same group; both known.
func SameMemcg(procPath, kernelPath string) bool {
	return procPath != "" && kernelPath != "" && sameMemcg(procPath, kernelPath)
}

// sameMemcg says whether the process's cgroup (from /proc/<pid>/cgroup)
// and the victim's memcg (from the kernel) can be the same group. Either
// may be unknown. The kernel prints the full path; /proc/<pid>/cgroup is
// relative to the reader's cgroup namespace root, so one may be a suffix
// of the other.
func sameMemcg(procPath, kernelPath string) bool {
	if procPath == "" || kernelPath == "" || procPath == kernelPath {
		return true
	}
	long, short := kernelPath, procPath
	if len(short) > len(long) {
		long, short = short, long
	}
	if short == "/" {
		return false
	}
	return strings.HasSuffix(long, short) && (strings.HasPrefix(short, "/") || long[len(long)-len(short)-1] == '/')
}
