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

	// The highest figures since the JVM was first read (jvm.Peaks), which
	// size the advice; 0 when unknown.
	PeakHeapLive, PeakNonHeap, PeakPython uint64
}

// VictimLookup returns the last reading of the process with this pid, if
// one was kept.
type VictimLookup func(pid int) (Victim, bool)

// Attribution is a kill with its victim and the judged cause.
type Attribution struct {
	Kill    Kill
	Victim  Victim // zero unless Found
	Found   bool   // the victim was a tracked process in the kill's memcg
	Reused  bool   // a tracked process had the pid, but in another memcg
	Verdict Verdict
}

// Attribute names the victim of a kill and judges its cause: the one step
// between a kernel record and a counted kill. A pid whose last reading was
// in another memory cgroup than the kernel's task_memcg belongs to a
// process that has since been replaced (pid reuse): it is not the victim.
// lookup may be nil when nothing is tracked.
func Attribute(k Kill, lookup VictimLookup) Attribution {
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
	a.Verdict = Judge(k, a.Victim, a.Found)
	return a
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
