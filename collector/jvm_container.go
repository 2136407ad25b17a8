package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// containerDescs are the series of the memory cgroup holding a JVM.
type containerDescs struct {
	cgLimit, cgUsage, cgWorkingSet, cgKills *prometheus.Desc
	cgMemory                                *prometheus.Desc
	// What the kernel says of the cgroup running short, which can come
	// before usage nears the limit: v2's PSI, memory.events and
	// memory.high, v1's failcnt.
	cgPressure, cgEvents, cgHigh, cgFailcnt *prometheus.Desc
}

func newContainerDescs(descs *descTable) containerDescs {
	return containerDescs{
		cgLimit: descs.desc("container", "memory_limit_bytes",
			"Memory limit of the cgroup holding the JVM; under YARN without one, its container's allocation, which the NodeManager enforces on the process tree's resident memory; absent when unlimited."),
		cgUsage:      descs.desc("container", "memory_usage_bytes", "Memory charged to the cgroup holding the JVM."),
		cgWorkingSet: descs.desc("container", "memory_working_set_bytes", "Usage minus inactive file cache, what the kubelet and the OOM killer look at."),
		cgKills:      descs.desc("container", "oom_kills_total", "OOM kills in the cgroup holding the JVM."),
		cgMemory: descs.desc("container", "memory_bytes",
			"Memory charged to the cgroup holding the JVM, by kind (memory.stat): anon, file (page cache, shmem included), shmem (tmpfs and shared memory), kernel (slab, stacks, page tables, sockets; cgroup v2 only).", "kind"),
		cgPressure: descs.desc("container", "memory_pressure_stall_seconds_total",
			"Time tasks of the cgroup holding the JVM stalled waiting for memory (PSI, cgroup v2 memory.pressure): some (at least one task), full (all at once).", "kind"),
		cgEvents: descs.desc("container", "memory_events_total",
			"Times the cgroup holding the JVM met a memory boundary (cgroup v2 memory.events): low, high (throttled above memory.high), max (reclaim at the limit), oom, oom_kill.", "event"),
		cgHigh: descs.desc("container", "memory_high_bytes",
			"memory.high of the cgroup holding the JVM (cgroup v2), where the kernel throttles and reclaims; absent when not set."),
		cgFailcnt: descs.desc("container", "memory_failcnt_total",
			"Charges to the cgroup holding the JVM that hit its limit and made the kernel reclaim (cgroup v1 memory.failcnt)."),
	}
}

// sendContainer sends the series of j's memory cgroup. A figure the
// kernel does not give (a kind v1's memory.stat lacks, PSI off, an event
// an older kernel does not count) is absent, not 0.
func (c *containerDescs) sendContainer(b seriesSink, j *jvm.JVM) {
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		b.add(d, prometheus.GaugeValue, v, extra...)
	}
	if limit, _ := j.Budget(); limit > 0 {
		gauge(c.cgLimit, float64(limit))
	}
	if !j.HasCgroup {
		return
	}
	cg := &j.Cgroup
	counter := func(d *prometheus.Desc, v float64, extra ...string) {
		b.add(d, prometheus.CounterValue, v, extra...)
	}
	gauge(c.cgUsage, float64(cg.Usage))
	gauge(c.cgWorkingSet, float64(cg.WorkingSet))
	if cg.HasOOMKills {
		counter(c.cgKills, float64(cg.OOMKills))
	}
	type figure struct {
		label string
		v     uint64
		known bool
	}
	for _, k := range [...]figure{
		{"anon", cg.Anon, cg.HasAnon},
		{"file", cg.File, cg.HasFile},
		{"shmem", cg.Shmem, cg.HasShmem},
		{"kernel", cg.Kernel, cg.HasKernel},
	} {
		if k.known {
			gauge(c.cgMemory, float64(k.v), k.label)
		}
	}
	p := &cg.Pressure
	if p.HasSome {
		counter(c.cgPressure, float64(p.SomeTotal)/1e6, "some")
	}
	if p.HasFull {
		counter(c.cgPressure, float64(p.FullTotal)/1e6, "full")
	}
	if cg.HasEvents {
		e := &cg.Events
		for _, k := range [...]figure{
			{"low", e.Low, e.HasLow},
			{"high", e.High, e.HasHigh},
			{"max", e.Max, e.HasMax},
			{"oom", e.OOM, e.HasOOM},
			{"oom_kill", e.OOMKill, e.HasOOMKill},
		} {
			if k.known {
				counter(c.cgEvents, float64(k.v), k.label)
			}
		}
	}
	if cg.High > 0 {
		gauge(c.cgHigh, float64(cg.High))
	}
	if cg.HasFailCnt {
		counter(c.cgFailcnt, float64(cg.FailCnt))
	}
}
