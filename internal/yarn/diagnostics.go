package yarn

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Kinds of a NodeManager kill read from a container's diagnostics.
const (
	KillNone    = ""        // the diagnostics name no memory kill
	KillPmem    = "pmem"    // over the physical memory limit (the tree's RSS)
	KillVmem    = "vmem"    // over the virtual memory limit (the tree's address space)
	KillElastic = "elastic" // SIGKILLed by the elastic cgroups OOM handler, or under OOM with strict+elastic control
	KillSignal  = "signal"  // "Killed by external signal", not on the NodeManager's request: the elastic OOM handler's or someone else's signal
)

// Kill is what a container's diagnostics say about how it was killed.
// Used and Limit are bytes as the NodeManager printed them (rounded to one
// decimal of their unit); 0 when the text does not give them.
type Kill struct {
	Kind                string
	PID                 int
	ContainerID         string
	PmemUsed, PmemLimit uint64
	VmemUsed, VmemLimit uint64
	// Over is how far over the limit the tree was, in bytes: Hadoop 3
	// prints it exactly ("running 123B beyond"); 0 in Hadoop 2's text.
	Over uint64
}

var (
	// Hadoop 3: Container [pid=P,containerID=C] is running NB beyond the
	// 'PHYSICAL' memory limit. Current usage: …
	// Hadoop 2: Container [pid=P,containerID=C] is running beyond physical
	// memory limits. Current usage: …
	killHeader = regexp.MustCompile(`Container \[pid=(\d{1,10}),containerID=(container_[0-9e_]{1,100})\] is running (?:(\d{1,20})B )?beyond (?:the '(PHYSICAL|VIRTUAL)' memory limit|(physical|virtual) memory limits)`)
	usage      = regexp.MustCompile(`([0-9]{1,20}(?:\.[0-9]{1,6})?) ?([KMGTPE]?)B of ([0-9]{1,20}(?:\.[0-9]{1,6})?) ?([KMGTPE]?)B (physical|virtual) memory used`)
	// Strict and elastic control both on: the polling monitor asks the
	// cgroup and kills with KILLED_EXCEEDED_PMEM and this text.
	underOOM = regexp.MustCompile(`(container_[0-9e_]{1,100}) is under oom because it exceeded its physical memory limit`)
)

// Texts the NodeManager writes when a container's process died of a
// signal it did not send on purpose: with elastic control, the cgroups OOM
// handler's SIGKILL shows only as this.
const (
	externalSignal = "Killed by external signal"
	elasticHandler = "killed by elastic cgroups OOM handler"
	// The NodeManager writes this when it stopped the container itself (a
	// release, a preemption, the application's end): the signal that
	// followed was its own.
	killedOnRequest = "Container killed on request"
)

// maxDiagnosticsScan bounds the text searched: the sentence that matters
// comes first, the process-tree dump after it.
const maxDiagnosticsScan = 4 << 10

// ParseDiagnostics reads a container's diagnostics. It never fails: text
// it does not know is KillNone.
func ParseDiagnostics(s string) Kill {
	if len(s) > maxDiagnosticsScan {
		s = s[:maxDiagnosticsScan]
	}
	if m := killHeader.FindStringSubmatch(s); m != nil {
		k := Kill{Kind: KillPmem, ContainerID: m[2]}
		k.PID, _ = strconv.Atoi(m[1])
		if m[3] != "" {
			k.Over, _ = strconv.ParseUint(m[3], 10, 64)
		}
		if strings.EqualFold(m[4], "VIRTUAL") || m[5] == "virtual" {
			k.Kind = KillVmem
		}
		rest := s[strings.Index(s, m[0])+len(m[0]):]
		for _, u := range usage.FindAllStringSubmatch(rest, 2) {
			used, limit := bytesOf(u[1], u[2]), bytesOf(u[3], u[4])
			if u[5] == "physical" {
				k.PmemUsed, k.PmemLimit = used, limit
			} else {
				k.VmemUsed, k.VmemLimit = used, limit
			}
		}
		return k
	}
	if m := underOOM.FindStringSubmatch(s); m != nil {
		return Kill{Kind: KillElastic, ContainerID: m[1]}
	}
	if strings.Contains(s, elasticHandler) {
		return Kill{Kind: KillElastic}
	}
	if strings.Contains(s, externalSignal) && !strings.Contains(s, killedOnRequest) {
		return Kill{Kind: KillSignal}
	}
	return Kill{}
}

// bytesOf reads Hadoop's TraditionalBinaryPrefix: "5.6" "G" is 5.6 GiB.
func bytesOf(num, prefix string) uint64 {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0
	}
	shift := strings.Index("KMGTPE", prefix) + 1
	if prefix == "" {
		shift = 0
	}
	v := f * math.Pow(1024, float64(shift))
	if v >= math.MaxUint64/2 {
		return 0
	}
	return uint64(v)
}
