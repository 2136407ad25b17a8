package yarn

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Kinds of kill read from a container's diagnostics.
const (
	KillNone = ""     // the diagnostics name no memory kill and no outside signal
	KillPmem = "pmem" // the monitor: over the physical memory limit (the tree's RSS)
	KillVmem = "vmem" // the monitor: over the virtual memory limit (the tree's address space)
	// KillUnderOOM: the monitor of Hadoop 3.2 with strict and elastic
	// control: the container's cgroup was under OOM (exit status -104).
	KillUnderOOM = "under_oom"
	// KillSignal: "Killed by external signal": the container's process
	// died of a signal while the NodeManager had not asked for it to be
	// killed (ContainerImpl's KilledExternallyTransition). Elastic
	// control's OOM handler, the kernel's OOM killer and a node agent all
	// read so; the NodeManager's own kills never do.
	KillSignal = "signal"
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
	// Sizes are TraditionalBinaryPrefix.long2String(n, "", 1) + "B":
	// "512B", "448 MB", "1.5 GB"; Hadoop 2 formats with the default locale,
	// which may write "1,5 GB".
	usage = regexp.MustCompile(`([0-9]{1,20}(?:[.,][0-9]{1,6})?) ?([KMGTPE]?)B of ([0-9]{1,20}(?:[.,][0-9]{1,6})?) ?([KMGTPE]?)B (physical|virtual) memory used`)
	// Strict and elastic control both on, Hadoop 3.2: the polling
	// monitor asks the cgroup and kills with KILLED_EXCEEDED_PMEM and this
	// text.
	underOOM = regexp.MustCompile(`(container_[0-9e_]{1,100}) is under oom because it exceeded its physical memory limit`)
)

// externalSignal is ContainerImpl's line for a process that died of a
// signal the NodeManager did not send. LinuxContainerExecutor writes
// "Container killed on request. Exit code is 137" (or 143) before it
// whoever sent the signal, so that line says nothing about who did.
const externalSignal = "Killed by external signal"

// ParseDiagnostics reads a container's diagnostics, wherever in them the
// monitor's message is: Hadoop 3 stamps each entry "[yyyy-MM-dd
// HH:mm:ss.SSS]" and keeps the last 10,000 characters, so earlier entries
// may come first, and a long process-tree dump may have pushed the
// message's start out of the kept text (then only the exit status says it
// was the monitor). It never fails: text it does not know is KillNone.
func ParseDiagnostics(s string) Kill {
	if len(s) > MaxBodyBytes {
		s = s[len(s)-MaxBodyBytes:]
	}
	if loc := killHeader.FindStringSubmatchIndex(s); loc != nil {
		m := func(i int) string {
			if loc[2*i] < 0 {
				return ""
			}
			return s[loc[2*i]:loc[2*i+1]]
		}
		k := Kill{Kind: KillPmem, ContainerID: m(2)}
		k.PID, _ = strconv.Atoi(m(1))
		if m(3) != "" {
			k.Over, _ = strconv.ParseUint(m(3), 10, 64)
		}
		if strings.EqualFold(m(4), "VIRTUAL") || m(5) == "virtual" {
			k.Kind = KillVmem
		}
		rest := s[loc[1]:]
		if len(rest) > 512 {
			rest = rest[:512] // the usage follows the header in the same sentence
		}
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
		return Kill{Kind: KillUnderOOM, ContainerID: m[1]}
	}
	if strings.Contains(s, externalSignal) {
		return Kill{Kind: KillSignal}
	}
	return Kill{}
}

// bytesOf reads Hadoop's TraditionalBinaryPrefix: "5.6" "G" is 5.6 GiB.
func bytesOf(num, prefix string) uint64 {
	f, err := strconv.ParseFloat(strings.Replace(num, ",", ".", 1), 64)
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
