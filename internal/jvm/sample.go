package jvm

import "time"

// Identity is what every per-process series is labelled with.
type Identity struct {
	PID        int    // pid in the exporter's pid namespace (the host's, in a DaemonSet)
	Role       string // "executor", "driver" or "jvm"
	AppID      string // Spark application id; empty for non-Spark JVMs
	ExecutorID string // Spark executor id; empty unless Role is "executor"
}

// Sample is one reading of a JVM and the memory around it. The tracker keeps
// the last Sample of every JVM for a while after the JVM is gone, so that an
// OOM kill seen later in /dev/kmsg can be attributed to what the victim
// looked like just before it died. Byte counts are 0 when unknown.
type Sample struct {
	Identity
	NSPID int       // pid inside the JVM's own pid namespace (the hsperfdata file name)
	Time  time.Time // when this sample was taken

	HeapUsed         uint64
	HeapCommitted    uint64
	HeapMax          uint64
	NonHeapCommitted uint64

	// Resident memory of the JVM's process tree, split by kind.
	RSSJVM    uint64
	RSSPython uint64
	RSSOther  uint64

	// The memory cgroup holding the JVM. CgroupLimit is 0 when unlimited.
	CgroupPath  string
	CgroupLimit uint64
	CgroupUsage uint64

	// YARNContainer is the YARN container the JVM runs in, empty
	// outside YARN. Allocation is that container's memory allocation when
	// no cgroup limit holds the JVM: then the NodeManager's polling
	// monitor kills the container when its process tree's resident
	// memory is over it, and it is the JVM's budget (Budget).
	YARNContainer string
	Allocation    uint64
	// TreeVSize is the address space of the process tree, what YARN's
	// virtual memory check sums.
	TreeVSize uint64

	// Peaks are the highest figures since the JVM was first read.
	Peaks Peaks

	// Native is the last breakdown of the JVM's memory by region; nil
	// before the first, or when breakdowns are off.
	Native *NativeMemory
}

// Budget is the memory the JVM's container may hold before it is killed,
// and what of it is held now: its cgroup's limit and usage, or, under
// YARN without a cgroup limit, its container's allocation and the process
// tree's resident memory, which the NodeManager measures. 0 is no budget.
func (s *Sample) Budget() (limit, used uint64) {
	if s.CgroupLimit > 0 {
		return s.CgroupLimit, s.CgroupUsage
	}
	if s.Allocation > 0 {
		return s.Allocation, s.RSSJVM + s.RSSPython + s.RSSOther
	}
	return 0, 0
}

// SampleSource answers "what did this pid look like last?", and "which
// JVMs are alive?" (the last sample of each, for a process killed in one's
// cgroup). The OOM collector depends on this, not on the tracker itself.
type SampleSource interface {
	LastSample(pid int) (Sample, bool)
	LiveSamples() []Sample
}
