package yarn

import (
	"strconv"
	"strings"
)

// Rules of the NodeManager's memory enforcement, by Hadoop line
// (ContainersMonitorImpl.checkLimit as each branch has it).
const (
	// Rule2: Hadoop 2. The polling monitor's checks are all there is
	// (and, with memory cgroups and a hard limit, the kernel).
	Rule2 = "2.x"
	// Rule32: Hadoop 3.2 (YARN-8461, before YARN-8930). Strict
	// (resource.memory.enforced) or elastic control alone switch the
	// polling check off; both together make the monitor kill a container
	// whose cgroup is under OOM, with -104. Hadoop 3.0 and 3.1 follow
	// this rule or Rule2's: the exporter does not tell them apart.
	Rule32 = "3.2"
	// Rule33: Hadoop 3.3 and later (YARN-8930). Strict control without
	// elastic switches the polling check off; otherwise it runs, and
	// elastic control's OOM handler kills as well.
	Rule33 = "3.3"
	// RuleUnknown: the NodeManager's version was not read or not
	// understood.
	RuleUnknown = "unknown"
)

// Values of Enforcement.YARN11967: whether strict control needs memory
// cgroups to be on before it switches the polling check off.
const (
	Fix11967Yes     = "yes"
	Fix11967No      = "no"
	Fix11967Unknown = "unknown"
)

// Whys: what makes the NodeManager kill, or not, under a rule.
const (
	WhyPolling        = "polling_checks"         // the monitor kills over the pmem or vmem limit
	WhyChecksOff      = "checks_off"             // pmem-check-enabled and vmem-check-enabled are both false
	WhyMonitorOff     = "monitor_off"            // container-monitor.enabled=false or an interval of 0 or less
	WhyCgroupLimit    = "cgroup_limit"           // memory cgroups with a hard limit: the kernel kills at the allocation
	WhyUnderOOM       = "cgroup_under_oom"       // 3.2, strict and elastic: the monitor kills a container whose cgroup is under OOM
	WhyElastic        = "elastic_control"        // elastic control alone: its OOM handler kills, the polling check is off (3.2)
	WhyElasticPolling = "elastic_and_polling"    // 3.3: elastic control's handler and the polling checks
	WhyStrictNoCgroup = "strict_without_cgroups" // resource.memory.enforced (the default) without memory cgroups, no YARN-11967: nothing kills
	WhyVersionUnknown = "version_unknown"        // the rules the NodeManager may follow disagree on these settings
	WhyFixUnknown     = "yarn_11967_unknown"     // a vendor build of a line where YARN-11967 decides, and it is not known whether it has it
)

// Enforcement is what the NodeManager does about a container over its
// memory allocation, under the rule its line follows, on its settings.
type Enforcement struct {
	Rule      string // Rule2, Rule32, Rule33, RuleUnknown
	YARN11967 string // Fix11967Yes, Fix11967No, Fix11967Unknown
	// Known is false when the rules the NodeManager may follow disagree;
	// then nothing below is claimed.
	Known bool
	// The polling monitor's checks that kill: −104 (pmem), −103 (vmem).
	PmemCheck, VmemCheck bool
	// UnderOOM: the monitor kills a container whose cgroup is under OOM
	// (−104, "… is under oom because it exceeded its physical memory limit").
	UnderOOM bool
	// Kernel: the container's cgroup has a hard limit at its allocation,
	// and the kernel's OOM killer acts at it.
	Kernel bool
	// Elastic: elastic control's OOM handler SIGKILLs containers when the
	// containers' cgroup runs out (exit 137, "Killed by external signal").
	Elastic bool
	Why     string
}

// Polling reports whether the monitor's polling check kills at all.
func (e Enforcement) Polling() bool { return e.PmemCheck || e.VmemCheck }

// Enforcer names who kills a container over its allocation: none,
// polling, kernel, elastic, polling+elastic, under_oom+elastic, or
// unknown.
func (e Enforcement) Enforcer() string {
	if !e.Known {
		return "unknown"
	}
	var parts []string
	if e.Polling() {
		parts = append(parts, "polling")
	}
	if e.UnderOOM {
		parts = append(parts, "under_oom")
	}
	if e.Kernel {
		parts = append(parts, "kernel")
	}
	if e.Elastic {
		parts = append(parts, "elastic")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

type candidate struct {
	rule     string
	fix11967 bool
}

// Enforce applies the rule of the NodeManager's line to its settings.
// version is its nodeManagerVersion: "3.3.6" is Apache's 3.3 line, which
// has no YARN-11967 (trunk, 3.5 on, has it); "3.3.6-amzn-2" or
// "3.1.1.7.1.9.0-387" are vendor builds, which may carry it or not. An
// empty version (not read yet) could be any line. Where the rules the
// NodeManager may follow agree on these settings, that is the answer; where
// they disagree, Enforcement.Known is false.
func Enforce(c Conf, version string) Enforcement {
	cands := candidates(version)
	first := enforceRule(c, cands[0])
	agree, sameFix := true, true
	for _, cd := range cands[1:] {
		e := enforceRule(c, cd)
		if e.PmemCheck != first.PmemCheck || e.VmemCheck != first.VmemCheck || e.UnderOOM != first.UnderOOM ||
			e.Kernel != first.Kernel || e.Elastic != first.Elastic {
			agree = false
		}
		if e.Rule != first.Rule {
			first.Rule = RuleUnknown
		}
		if cd.fix11967 != cands[0].fix11967 {
			sameFix = false
		}
	}
	if !sameFix {
		first.YARN11967 = Fix11967Unknown
	}
	if agree {
		return first
	}
	why := WhyVersionUnknown
	if first.Rule != RuleUnknown {
		why = WhyFixUnknown
	}
	return Enforcement{Rule: first.Rule, YARN11967: first.YARN11967, Why: why}
}

func enforceRule(c Conf, cd candidate) Enforcement {
	e := Enforcement{Rule: cd.rule, YARN11967: Fix11967No, Known: true}
	if cd.fix11967 {
		e.YARN11967 = Fix11967Yes
	}
	polling := func() {
		e.PmemCheck, e.VmemCheck = c.MonitorEnabled && c.PmemCheck, c.MonitorEnabled && c.VmemCheck
	}
	e.Kernel = c.CgroupsMemory && c.MemoryEnforced && !c.ElasticControl
	// The monitor reads resource.memory.enforced as is; YARN-11967 makes
	// it count only with memory cgroups on.
	strict := c.MemoryEnforced && (c.CgroupsMemory || !cd.fix11967)
	elastic := c.ElasticControl
	switch cd.rule {
	case Rule2:
		polling()
	case Rule32:
		e.Elastic = elastic && c.CgroupsMemory
		switch {
		case strict && elastic:
			e.UnderOOM = c.MonitorEnabled
		case strict || elastic:
		default:
			polling()
		}
	default:
		e.Elastic = elastic && c.CgroupsMemory
		if !strict || elastic {
			polling()
		}
	}
	switch {
	case e.UnderOOM:
		e.Why = WhyUnderOOM
	case e.Elastic && e.Polling():
		e.Why = WhyElasticPolling
	case e.Elastic:
		e.Why = WhyElastic
	case e.Kernel:
		e.Why = WhyCgroupLimit
	case e.Polling():
		e.Why = WhyPolling
	case cd.rule != Rule2 && strict && !c.CgroupsMemory && !elastic:
		e.Why = WhyStrictNoCgroup
	case !c.MonitorEnabled:
		e.Why = WhyMonitorOff
	default:
		e.Why = WhyChecksOff
	}
	return e
}

// candidates are the rules a NodeManager of this version may follow.
func candidates(version string) []candidate {
	all := []candidate{{Rule2, false}, {Rule32, false}, {Rule32, true}, {Rule33, false}, {Rule33, true}}
	major, minor, vendor, ok := parseVersion(version)
	if !ok {
		return all
	}
	var rule string
	switch {
	case major <= 2:
		return all[:1]
	case major == 3 && minor <= 1:
		// 3.0 and 3.1: Rule2's or Rule32's, not told apart.
		return []candidate{{Rule2, false}, {Rule32, false}, {Rule32, true}}
	case major == 3 && minor == 2:
		rule = Rule32
	default:
		rule = Rule33
	}
	// YARN-11967 is in trunk (3.5 on); a vendor build of an older line
	// may have taken it.
	fixed := major > 3 || minor >= 5
	if vendor && !fixed {
		return []candidate{{rule, false}, {rule, true}}
	}
	return []candidate{{rule, fixed}}
}

// parseVersion reads "3.3.6", "3.4.1", "3.5.0-SNAPSHOT" (Apache's) and
// "3.3.6-amzn-2", "3.1.1.7.1.9.0-387", "2.10.2-dataproc" (vendor builds).
func parseVersion(v string) (major, minor int, vendor, ok bool) {
	v = strings.TrimSpace(v)
	core, suffix, _ := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	if len(parts) < 2 {
		return 0, 0, false, false
	}
	var err error
	if major, err = strconv.Atoi(parts[0]); err != nil || major < 1 {
		return 0, 0, false, false
	}
	if minor, err = strconv.Atoi(parts[1]); err != nil || minor < 0 {
		return 0, 0, false, false
	}
	vendor = len(parts) > 3 || (suffix != "" && suffix != "SNAPSHOT")
	return major, minor, vendor, true
}
