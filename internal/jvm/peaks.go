package jvm

import (
	"strings"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
)

// Peaks are the highest figures of a JVM's memory since the exporter first
// read it, what each Spark memory setting has to hold
// (docs/metrics.md#peaks). Container (the memory cgroup's peak) and
// Resident (VmHWM) are kept by the kernel, so they include what happened
// between two reads; the others are the highest value seen at a read. 0 is
// unknown.
type Peaks struct {
	Container, Resident uint64
	// HeapLive is the heap less its eden, or, for a heap of one space, the
	// heap in use at the first read after a collection (heapLive).
	HeapLive uint64
	// NonHeap is the resident memory of the JVM and its non-Python
	// children less the committed heap; Python that of the PySpark workers.
	NonHeap, Python uint64
}

// merge raises p to the higher of each figure.
func (p *Peaks) merge(o Peaks) {
	p.Container = max(p.Container, o.Container)
	p.Resident = max(p.Resident, o.Resident)
	p.HeapLive = max(p.HeapLive, o.HeapLive)
	p.NonHeap = max(p.NonHeap, o.NonHeap)
	p.Python = max(p.Python, o.Python)
}

// heapLive is the live data in the heap as one read shows it, and whether
// the read shows it. A generational heap's old generation and survivors
// hold only what survived a collection (plus garbage not yet collected in
// the old generation, so the figure errs high, the safe side for sizing).
// A heap of one space holds live data and new garbage alike; just after a
// collection (collections counted since the previous read, prev) it is
// closest to the live data.
func heapLive(s *hsperf.Stats, prev *hsperf.Stats) (uint64, bool) {
	var survived uint64
	generational := false
	for _, p := range s.Pools {
		if p.Area != hsperf.AreaHeap {
			continue
		}
		if strings.Contains(p.Name, "Eden") {
			generational = true
			continue
		}
		survived += p.Used
	}
	if generational {
		return survived, true
	}
	if prev == nil || collections(s) == collections(prev) {
		return 0, false
	}
	return s.HeapUsed, true
}

func collections(s *hsperf.Stats) uint64 {
	var n uint64
	for _, g := range s.GCs {
		n += g.Collections
	}
	return n
}
