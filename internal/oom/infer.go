package oom

import (
	"fmt"
	"strings"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// RegionDirectOrMalloc names anonymous memory that grew outside the heap
// when no counter tells direct buffers (and other large native
// allocations) from malloc arenas: what is left once metaspace, thread
// stacks and tmpfs pages are accounted for.
const RegionDirectOrMalloc = "direct_or_malloc"

// Thresholds of the inference; docs/oom.md explains them.
const (
	// InferMinBytes: a region is named by elimination only when at least
	// this much of it grew since the last breakdown.
	InferMinBytes = 8 << 20
	// InferKernelStackBytes (cgroup v2's kernel_stack) and InferKmemBytes
	// (cgroup v1's kmem usage, kernel stacks with page tables and slab):
	// above them the container held many more threads than an executor's
	// few hundred (16 KiB of kernel stack each on x86-64).
	InferKernelStackBytes = 8 << 20
	InferKmemBytes        = 16 << 20
)

// directOrMallocAdvice is the remedy of both regions it may be.
const directOrMallocAdvice = "direct buffers or malloc, which no counter tells apart: cap -XX:MaxDirectMemorySize (a direct-buffer leak then fails in Java with a stack trace) and set spark.executorEnv.MALLOC_ARENA_MAX=2"

// inferRegion names, when no breakdown saw the growth, the native memory
// that grew since the last breakdown (the base: s.Breakdown, or nothing
// when the JVM had none) by elimination, from the last sample's
// hsperfdata and the kernel's report of the kill:
//
//   - tmpfs pages: the report's shmem against the base's;
//   - metaspace: hsperfdata's committed metaspace against the base's
//     metaspace region, when it is a third of what the JVM grew at least;
//   - thread stacks: the report's kernel stacks (v2 kernel_stack, v1 kmem)
//     far above what an executor's threads hold;
//   - else anonymous memory that grew: direct buffers or malloc.
//
// detail says it was inferred and from what.
func inferRegion(k Kill, s Victim) (region, detail string) {
	base := s.Breakdown
	since := "the JVM had no breakdown; base: its last sample's resident memory"
	if s.HasBreakdown {
		since = "no breakdown saw it grow since the one at " + base.Time.UTC().Format("15:04:05")
	}
	var from []string
	shmem, meta := uint64(0), uint64(0)
	if k.Report.Known {
		shmem = k.Report.Shmem - min(k.Report.Shmem, base.Shmem)
		from = append(from, fmt.Sprintf("the kernel's report: shmem %s", inMiB(k.Report.Shmem)))
	}
	if s.HasBreakdown && s.NonHeapCommitted > 0 {
		meta = s.NonHeapCommitted - min(s.NonHeapCommitted, base.Regions[nativemem.Metaspace])
		from = append(from, fmt.Sprintf("hsperfdata: metaspace committed %s against %s in the breakdown",
			inMiB(s.NonHeapCommitted), inMiB(base.Regions[nativemem.Metaspace])))
	}
	threads := ""
	switch {
	case k.Report.KernelStack >= InferKernelStackBytes:
		threads = fmt.Sprintf("kernel stacks %s (%d threads at 16 KiB each)", inMiB(k.Report.KernelStack), k.Report.KernelStack>>14)
	case k.Report.Kmem >= InferKmemBytes:
		threads = fmt.Sprintf("kernel memory %s (kmem: thread stacks, page tables)", inMiB(k.Report.Kmem))
	}
	// What the victim held when killed, beyond the base's resident memory.
	held := (k.AnonRSSKiB + k.FileRSSKiB + k.ShmemRSSKiB) << 10
	var baseTotal uint64
	for r := nativemem.Region(0); r < nativemem.NumRegions; r++ {
		baseTotal += base.Regions[r]
	}
	if !s.HasBreakdown {
		baseTotal = s.RSSJVM
	}
	grew := held - min(held, baseTotal)

	switch {
	case shmem >= InferMinBytes && shmem >= meta:
		region = nativemem.Shmem
		from = append(from[:0], fmt.Sprintf("the kernel's report: the container's tmpfs pages (shmem) %s, %s more than at the base", inMiB(k.Report.Shmem), inMiB(shmem)))
	// Metaspace only as a large share of what the JVM grew: its counters
	// move at collections, so a base read before the first one has none,
	// and at the kill they lag by what was loaded since the last one. A
	// class leak also grows the heap and the malloc arenas that parse
	// classes: 40-80 % of its growth was the counter's in real kills.
	case meta >= InferMinBytes && 3*meta >= grew:
		region = nativemem.Metaspace.String()
	case threads != "":
		region = nativemem.ThreadStacks.String()
		from = append(from, "the kernel's report: "+threads)
	case grew >= InferMinBytes:
		region = RegionDirectOrMalloc
		from = append(from, fmt.Sprintf("the kill: the JVM held %s, %s more than at the base, none of it metaspace, thread stacks or tmpfs", inMiB(held), inMiB(grew)))
	default:
		return "", ""
	}
	return region, fmt.Sprintf("%s inferred by elimination (%s) from %s", region, since, strings.Join(from, "; "))
}
