package exits

import (
	"fmt"
	"strings"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/yarn"
)

// Reasons of a YARN NodeManager's memory kills.
const (
	// ReasonYARNPmem: the NodeManager's polling monitor killed the
	// container for its process tree's resident memory over the
	// allocation (exit status -104).
	ReasonYARNPmem = "yarn_pmem_limit"
	// ReasonYARNVmem: the same for the tree's address space over the
	// allocation × yarn.nodemanager.vmem-pmem-ratio (-103): a setting to
	// change, not memory to add.
	ReasonYARNVmem = "yarn_vmem_limit"
	// ReasonYARNElastic: with elastic cgroup memory control, the
	// NodeManager's OOM handler SIGKILLed the container when the containers'
	// cgroup as a whole ran out; the kernel logs no OOM kill, and the
	// NodeManager's diagnostics say only "Killed by external signal" (the
	// handler's own line goes to its log).
	ReasonYARNElastic = "yarn_elastic_oom"
)

// YARNInferWithin: a sample over a limit at most this long before the JVM
// was last seen alive explains a SIGTERM/SIGKILL end. The monitor passes
// every 3 s and a kill follows the pass that saw the tree over; the
// tracker samples a JVM near its limit every second.
const YARNInferWithin = 10 * time.Second

// YARN is the evidence about a dead JVM's YARN container.
type YARN struct {
	ContainerID string
	// Allocation is the container's memory allocation (the physical
	// limit); VmemLimit the virtual one, Allocation × the ratio.
	Allocation, VmemLimit uint64
	// What the NodeManager enforces, under the rule of its line on its
	// settings (yarn.Enforce): the polling checks that kill, whether it
	// polls at all, elastic control's OOM handler; and whether its RSS is
	// smaps-based. A kill is inferred only where it polls.
	PmemCheck, VmemCheck, PollingCheck, Elastic, SmapsRSS bool
	// Cgroup is the memory cgroup the JVM ran in, as /proc/<pid>/cgroup
	// names it; empty when none. Elastic control's handler kills only
	// what is in a container's own cgroup, which the NodeManager names
	// after the container (…/hadoop-yarn/<container id>).
	Cgroup string
	// The tracker's last sample of the JVM's process tree before the end:
	// resident memory summed as the NodeManager sums it and the address
	// space, SampleAgo before the JVM was last seen alive.
	TreeRSS, TreeVsize uint64
	SampleAgo          time.Duration
	// What the NodeManager's per-process sum counts that the kernel
	// charges once or not at all: PySpark workers forked from the
	// executor share pages with it, and resident pages of mapped files.
	PythonWorkers bool
	MappedBytes   uint64
	// Region and Advice for a pmem kill: the OOM verdict's (internal/oom
	// Judge) on the JVM's last sample against the allocation, so that a
	// YARN kill gets the same region and advice as a kernel one.
	Region, Advice string
	// Status is the NodeManager's exit status and diagnostics; nil when
	// they were not read (the container was dropped first, or the
	// NodeManager was not reachable).
	Status *YARNStatus
}

// YARNStatus is what the NodeManager said of the finished container.
type YARNStatus struct {
	ExitStatus int
	Kill       string // a yarn.Kill kind, or empty
	// Used and Limit are the figures of the diagnostics for the kind
	// killed (physical or virtual); 0 when not given.
	Used, Limit uint64
}

const vmemAdvice = "set yarn.nodemanager.vmem-check-enabled=false, or raise yarn.nodemanager.vmem-pmem-ratio, on the NodeManagers " +
	"(YARN-4714: the JVM reserves address space it never uses); more executor memory would only raise the limit with the reservations"

const elasticAdvice = "raise spark.executor.memoryOverhead so that the allocation covers the executor: the handler kills containers over their allocation first"

const pmemAdviceGeneric = "raise spark.executor.memoryOverhead"

// yarnSeen applies the NodeManager's own word, when read. ok is false
// when it explains nothing (no container, a release, a preemption, an
// exit, a signal nothing here names).
func yarnSeen(d Death, file, heap string) (Verdict, bool) {
	y := d.YARN
	if y == nil {
		return Verdict{}, false
	}
	s := y.Status
	if s == nil {
		return Verdict{}, false
	}
	switch {
	// The monitor's own kills: its exit status wins whatever the model
	// of its settings says, and whatever is left of its diagnostics.
	case s.ExitStatus == yarn.ExitKilledVmem || s.Kill == yarn.KillVmem:
		return y.vmem(fmt.Sprintf("NodeManager exit status %d, %s", s.ExitStatus, y.figures(s, "virtual", y.VmemLimit)), file), true
	case s.ExitStatus == yarn.ExitKilledPmem || s.Kill == yarn.KillPmem || s.Kill == yarn.KillUnderOOM:
		what := "NodeManager exit status -104, " + y.figures(s, "physical", y.Allocation)
		if s.Kill == yarn.KillUnderOOM {
			what = "NodeManager exit status -104: its cgroup was under OOM (strict and elastic control)"
		}
		return y.pmem(what, file, heap), true
	// "Killed by external signal": not the NodeManager. A kernel kill was
	// matched before this is asked; elastic control's handler SIGKILLs
	// what is in a container's cgroup.
	case s.Kill == yarn.KillSignal && s.ExitStatus == 137 && y.Elastic && y.inContainerCgroup():
		return Verdict{Reason: ReasonYARNElastic, Evidence: fmt.Sprintf("NodeManager exit status 137, killed by an external signal (not the NodeManager's monitor); "+
			"evidence: the container's cgroup %s under elastic memory control, no kernel OOM kill: its OOM handler SIGKILLs containers, those over their allocation first, "+
			"when the containers' cgroup runs out (its log says \"killed by elastic cgroups OOM handler\"); %s; %s", y.Cgroup, y.usage(), file), Advice: elasticAdvice}, true
	}
	// Any other signal the NodeManager did not send is left to the rest of
	// the rule (an interruption, a full heap first), with yarnNote naming it.
	return Verdict{}, false // a release, a preemption, the application's end: no memory kill
}

// yarnInferred infers a polling monitor's kill when the NodeManager's
// word was not read: the last sample, seconds before the end, had the
// tree over a limit the monitor enforces. The monitor kills with SIGTERM
// (the JVM's shutdown deletes its file) and SIGKILL 250 ms later (which
// leaves it when the shutdown did not finish), so the file says nothing
// either way.
func yarnInferred(d Death, file, heap string) (Verdict, bool) {
	y := d.YARN
	if y == nil || y.Status != nil || !y.PollingCheck || y.SampleAgo > YARNInferWithin {
		return Verdict{}, false
	}
	if y.VmemCheck && y.VmemLimit > 0 && y.TreeVsize > y.VmemLimit {
		return y.vmem(fmt.Sprintf("inferred: no NodeManager exit status read; the last sample, %s before the end, had the process tree's address space at %s of its %s virtual limit",
			y.SampleAgo.Round(100*time.Millisecond), inMiBString(y.TreeVsize), inMiBString(y.VmemLimit)), file), true
	}
	if y.PmemCheck && y.Allocation > 0 && y.TreeRSS > y.Allocation {
		return y.pmem(fmt.Sprintf("inferred: no NodeManager exit status read; the last sample, %s before the end, had the process tree's resident memory at %s of its %s allocation",
			y.SampleAgo.Round(100*time.Millisecond), inMiBString(y.TreeRSS), inMiBString(y.Allocation)), file, heap), true
	}
	return Verdict{}, false
}

// inContainerCgroup reports whether the JVM's cgroup is its container's.
func (y *YARN) inContainerCgroup() bool {
	for _, part := range strings.Split(y.Cgroup, "/") {
		if part == y.ContainerID {
			return true
		}
	}
	return false
}

func (y *YARN) vmem(what, file string) Verdict {
	return Verdict{Reason: ReasonYARNVmem, Evidence: what + "; " + y.usage() + "; " + file, Advice: vmemAdvice}
}

func (y *YARN) pmem(what, file, heap string) Verdict {
	advice := y.Advice
	if advice == "" {
		advice = pmemAdviceGeneric
	}
	ev := what
	if y.Region != "" {
		ev += ", " + y.Region + " grew most"
	}
	ev += "; " + y.usage() + "; " + file + "; " + heap
	if note := y.overCount(); note != "" {
		ev += "; " + note
	}
	return Verdict{Reason: ReasonYARNPmem, Evidence: ev, Region: y.Region, Advice: advice}
}

// figures says what the diagnostics gave, or the allocation when they
// gave nothing.
func (y *YARN) figures(s *YARNStatus, kind string, limit uint64) string {
	if s.Used > 0 && s.Limit > 0 {
		return fmt.Sprintf("%s of %s %s memory used", inMiBString(s.Used), inMiBString(s.Limit), kind)
	}
	return fmt.Sprintf("over its %s %s limit", inMiBString(limit), kind)
}

func (y *YARN) usage() string {
	return fmt.Sprintf("container %s, allocation %s, last sample: tree resident %s, address space %s",
		y.ContainerID, inMiBString(y.Allocation), inMiBString(y.TreeRSS), inMiBString(y.TreeVsize))
}

// overCount names what the NodeManager's sum of per-process RSS counts
// that the memory does not hold: it adds each process's resident pages,
// so a page shared by the executor and the PySpark workers it forked
// counts once per process, and resident pages of mapped files count as
// the container's.
func (y *YARN) overCount() string {
	if y.SmapsRSS {
		return ""
	}
	var parts []string
	if y.PythonWorkers {
		parts = append(parts, "pages shared with forked PySpark workers count once per process")
	}
	if y.MappedBytes >= 1<<20 { // less would read "0 MiB"
		parts = append(parts, fmt.Sprintf("%s of mapped files count as the container's", inMiBString(y.MappedBytes)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "the NodeManager's sum of each process's RSS over-counts (" + strings.Join(parts, "; ") +
		"): yarn.nodemanager.container-monitor.procfs-tree.smaps-based-rss.enabled=true counts what each process holds privately and its share of the rest"
}

func inMiBString(b uint64) string { return fmt.Sprintf("%.0f MiB", inMiB(b)) }

// yarnNote describes a container's end that was no memory kill, for the
// evidence of the reason the rest of the rule gives; kernelKill is whether
// a kernel OOM kill was matched to the JVM.
func yarnNote(y *YARN, kernelKill bool) string {
	if y == nil || y.Status == nil {
		return ""
	}
	if y.Status.Kill == yarn.KillSignal {
		note := fmt.Sprintf("YARN container %s exit status %d, killed by an external signal (not the NodeManager: it writes no such line for its own kills)", y.ContainerID, y.Status.ExitStatus)
		if kernelKill {
			return note + "; evidence: the kernel's report"
		}
		why := "no elastic memory control"
		switch {
		case y.Elastic && y.inContainerCgroup():
			why = "not elastic control's handler, which sends SIGKILL only"
		case y.Elastic:
			why = "elastic memory control is on but the JVM was in no cgroup of its container's, where its handler acts"
		}
		return note + "; evidence: none: no kernel OOM kill, " + why + ": something else on the node sent the signal (a node agent such as Dataproc's memory protection, or an operator)"
	}
	what := map[int]string{
		yarn.ExitKilledByRM:        "released through the ResourceManager (exit status -106: Spark's dynamic allocation giving the executor back, a preemption, or the application's end)",
		yarn.ExitKilledByAppMaster: "stopped by its ApplicationMaster (exit status -105)",
		yarn.ExitPreempted:         "preempted by the scheduler (exit status -102)",
		yarn.ExitAborted:           "aborted by the framework (exit status -100)",
		yarn.ExitDisksFailed:       "ended because the node's disks failed (exit status -101)",
		yarn.ExitKilledAfterApp:    "killed after the application finished (exit status -107)",
		yarn.ExitKilledByScheduler: "killed by the container scheduler for another container (exit status -108)",
		yarn.ExitKilledExcessLogs:  "killed for writing more logs than allowed (exit status -109)",
	}[y.Status.ExitStatus]
	if what == "" {
		what = fmt.Sprintf("exit status %d", y.Status.ExitStatus)
	}
	return "YARN container " + y.ContainerID + " " + what + ", no memory kill"
}

// yarnSIGKILL reports whether the NodeManager saw the container's process
// end of a SIGKILL it had not sent (exit status 137): a kill, whatever
// became of the hsperfdata file.
func yarnSIGKILL(y *YARN) bool {
	return y != nil && y.Status != nil && y.Status.Kill == yarn.KillSignal && y.Status.ExitStatus == 137
}
