package collector

import (
	"github.com/executor-exporter/executor_exporter/internal/exits"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/nativemem"
	"github.com/executor-exporter/executor_exporter/internal/oom"
	"github.com/executor-exporter/executor_exporter/internal/yarn"
)

// yarnContainers is what the exits collector asks of YARN's NodeManager:
// *yarn.Source, or a stand-in in tests.
type yarnContainers interface {
	Container(id string) (yarn.Container, bool)
	Node() yarn.Node
}

// yarnEvidence is what is known of the YARN container a JVM died in, with
// the region and advice the OOM verdict gives its last sample against the
// allocation, so that a NodeManager's kill is explained as a kernel one
// is; nil when the NodeManager listed no container of the JVM.
func yarnEvidence(src yarnContainers, last jvm.Sample, d exits.Death) *exits.YARN {
	if src == nil || last.YARNContainer == "" {
		return nil
	}
	c, ok := src.Container(last.YARNContainer)
	if !ok {
		return nil
	}
	// What the NodeManager enforces under its line's rule, not what its
	// settings ask: on stock Hadoop 3.3 the checks are on and nothing runs
	// them, and nothing is inferred.
	e := src.Node().Enforcement
	y := &exits.YARN{
		ContainerID: c.ID, Allocation: c.Allocation, VmemLimit: c.VmemLimit,
		PmemCheck: e.PmemCheck, VmemCheck: e.VmemCheck, PollingCheck: e.Polling(),
		Elastic: e.Elastic, SmapsRSS: src.Node().SmapsRSS, Cgroup: last.CgroupPath,
		TreeRSS: last.RSSJVM + last.RSSPython + last.RSSOther, TreeVsize: last.TreeVSize,
		PythonWorkers: last.RSSPython > 0,
	}
	if !d.LastAlive.IsZero() && !last.Time.IsZero() {
		y.SampleAgo = d.LastAlive.Sub(last.Time)
	}
	if last.Native != nil {
		y.MappedBytes = last.Native.Last.Regions[nativemem.MappedFiles]
	}
	victim := victimOf(last)
	if victim.CgroupLimit == 0 {
		victim.CgroupLimit, victim.CgroupUsage = c.Allocation, y.TreeRSS
	}
	// The NodeManager's kill leaves no kernel record of what the JVM held:
	// its last sample's resident memory stands for it, so that the region
	// is inferred from it as from a kernel kill's when no breakdown saw
	// the growth.
	v := oom.Judge(oom.Kill{PID: last.PID, Constraint: oom.ConstraintMemcg, AnonRSSKiB: last.RSSJVM >> 10}, victim, true)
	y.Region, y.Advice = v.Region, v.Advice
	return y
}

// yarnStatus is the NodeManager's word on a finished container: its exit
// status, and the kill its diagnostics name.
func yarnStatus(src yarnContainers) func(string) (exits.YARNStatus, bool) {
	return func(id string) (exits.YARNStatus, bool) {
		c, ok := src.Container(id)
		if !ok || !c.Finished() {
			return exits.YARNStatus{}, false
		}
		st := exits.YARNStatus{ExitStatus: c.ExitCode, Kill: c.Kill.Kind}
		switch c.Kill.Kind {
		case yarn.KillPmem:
			st.Used, st.Limit = c.Kill.PmemUsed, c.Kill.PmemLimit
		case yarn.KillVmem:
			st.Used, st.Limit = c.Kill.VmemUsed, c.Kill.VmemLimit
		}
		return st, true
	}
}
