package collector

import (
	"github.com/executor-exporter/executor_exporter/internal/exposition"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// containerFamilies are the series of the memory cgroup holding a JVM.
type containerFamilies struct {
	cgLimit, cgUsage, cgWorkingSet, cgKills *exposition.Family
	cgMemory                                *exposition.Family
	// What the kernel says of the cgroup running short, which can come
	// before usage nears the limit: v2's PSI, events and high; v1's failcnt.
	cgPressure, cgEvents, cgHigh, cgFailcnt *exposition.Family
}

func newContainerFamilies(t *exposition.Table) containerFamilies {
	return containerFamilies{
		cgLimit: t.Family(fqName("container", "memory_limit_bytes"),
			"Memory limit of the cgroup holding the JVM; under YARN without one, its container's allocation, which the NodeManager enforces on the process tree's resident memory; absent when unlimited."),
		cgUsage:      t.Family(fqName("container", "memory_usage_bytes"), "Memory charged to the cgroup holding the JVM."),
		cgWorkingSet: t.Family(fqName("container", "memory_working_set_bytes"), "Usage minus inactive file cache, what the kubelet and the OOM killer look at."),
		cgKills:      t.Family(fqName("container", "oom_kills_total"), "OOM kills in the cgroup holding the JVM."),
		cgMemory: t.Family(fqName("container", "memory_bytes"),
			"Memory charged to the cgroup holding the JVM, by kind (memory.stat): anon, file (page cache, shmem included), shmem (tmpfs and shared memory), kernel (slab, stacks, page tables, sockets; cgroup v2 only).", "kind"),
		cgPressure: t.Family(fqName("container", "memory_pressure_stall_seconds_total"),
			"Time tasks of the cgroup holding the JVM stalled waiting for memory (PSI, cgroup v2 memory.pressure): some (at least one task), full (all at once).", "kind"),
		cgEvents: t.Family(fqName("container", "memory_events_total"),
			"Times the cgroup holding the JVM met a memory boundary (cgroup v2 memory.events): low, high (throttled above memory.high), max (reclaim at the limit), oom, oom_kill.", "event"),
		cgHigh: t.Family(fqName("container", "memory_high_bytes"),
			"memory.high of the cgroup holding the JVM (cgroup v2), where the kernel throttles and reclaims; absent when not set."),
		cgFailcnt: t.Family(fqName("container", "memory_failcnt_total"),
			"Charges to the cgroup holding the JVM that hit its limit and made the kernel reclaim (cgroup v1 memory.failcnt)."),
	}
}

// sendContainer sends the series of j's memory cgroup. A figure the
// kernel does not give (a kind v1's memory.stat lacks, PSI off, an event
// an older kernel does not count) is absent, not 0.
func (c *containerFamilies) sendContainer(b exposition.Sink, j *jvm.JVM) {
	limit, _ := j.Budget()
	addIf(b, limit > 0, c.cgLimit, float64(limit))
	if !j.HasCgroup {
		return
	}
	cg := &j.Cgroup
	b.Add(c.cgUsage, float64(cg.Usage))
	b.Add(c.cgWorkingSet, float64(cg.WorkingSet))
	addIf(b, cg.HasOOMKills, c.cgKills, float64(cg.OOMKills))
	addIf(b, cg.HasAnon, c.cgMemory, float64(cg.Anon), "anon")
	addIf(b, cg.HasFile, c.cgMemory, float64(cg.File), "file")
	addIf(b, cg.HasShmem, c.cgMemory, float64(cg.Shmem), "shmem")
	addIf(b, cg.HasKernel, c.cgMemory, float64(cg.Kernel), "kernel")
	addIf(b, cg.Pressure.HasSome, c.cgPressure, float64(cg.Pressure.SomeTotal)/1e6, "some")
	addIf(b, cg.Pressure.HasFull, c.cgPressure, float64(cg.Pressure.FullTotal)/1e6, "full")
	if cg.HasEvents {
		e := &cg.Events
		addIf(b, e.HasLow, c.cgEvents, float64(e.Low), "low")
		addIf(b, e.HasHigh, c.cgEvents, float64(e.High), "high")
		addIf(b, e.HasMax, c.cgEvents, float64(e.Max), "max")
		addIf(b, e.HasOOM, c.cgEvents, float64(e.OOM), "oom")
		addIf(b, e.HasOOMKill, c.cgEvents, float64(e.OOMKill), "oom_kill")
	}
	addIf(b, cg.High > 0, c.cgHigh, float64(cg.High))
	addIf(b, cg.HasFailCnt, c.cgFailcnt, float64(cg.FailCnt))
}
