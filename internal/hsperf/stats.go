package hsperf

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrMissingCounter is wrapped by Stats when a file lacks a counter every
// HotSpot JVM writes (the timer frequency, a heap generation).
var ErrMissingCounter = errors.New("hsperf: missing counter")

// Pool is one memory pool, named like the JVM's MemoryPoolMXBean.
type Pool struct {
	Name      string // e.g. "G1 Eden Space", "PS Old Gen", "Metaspace", "ZHeap"
	Area      string // "heap" or "nonheap"
	Used      uint64 // bytes
	Committed uint64 // bytes
	Max       uint64 // bytes; 0 when unknown/unbounded
}

// GC is one collector, as sun.gc.collector.N.
type GC struct {
	Name        string  // sun.gc.collector.N.name, e.g. "G1 young collection pauses"
	Collections uint64  // sun.gc.collector.N.invocations
	Seconds     float64 // sun.gc.collector.N.time / sun.os.hrt.frequency
	// LastEnded is when the last collection ended, on the JVM's clock
	// (sun.gc.collector.N.lastExitTime, in sun.os.hrt.ticks); 0 before the
	// first.
	LastEnded int64
	// LastStarted is when the last collection started
	// (sun.gc.collector.N.lastEntryTime). The JVM counts a collection in
	// Collections when it starts, so one is under way while LastStarted is
	// after LastEnded.
	LastStarted int64
}

// Completed is the number of collections that have ended: a read can land
// in the middle of one, when the heap's figures are still those of before
// it.
func (g GC) Completed() uint64 {
	if g.LastStarted > g.LastEnded && g.Collections > 0 {
		return g.Collections - 1
	}
	return g.Collections
}

// Stats is what an operator wants from a JVM's counters.
type Stats struct {
	HeapUsed, HeapCommitted, HeapMax          uint64
	NonHeapUsed, NonHeapCommitted, NonHeapMax uint64 // NonHeapMax 0 = unbounded
	Pools                                     []Pool
	GCs                                       []GC
	ThreadsLive                               uint64    // java.threads.live
	ThreadsDaemon                             uint64    // java.threads.daemon
	ClassesLoaded                             uint64    // currently loaded, shared included
	SafepointSeconds                          float64   // sun.rt.safepointTime / frequency
	StartTime                                 time.Time // sun.rt.createVmBeginTime
	GCName                                    string    // "G1", "Parallel", "Serial", "ZGC", "Shenandoah", ...
	VMVersion                                 string    // java.property.java.vm.version
	JavaCommand                               string    // sun.rt.javaCommand (cut at 1024 by the JVM)
	VMArgs                                    string    // java.rt.vmArgs
	VMFlags                                   string    // java.rt.vmFlags
}

// Pool areas.
const (
	AreaHeap    = "heap"
	AreaNonHeap = "nonheap"
)

// Stats interprets the snapshot's counters. Heap used and committed are
// the sums over the heap spaces, as jstat -gc sums S0U+S1U+EU+OU and
// S0C+S1C+EC+OC.
func (s *Snapshot) Stats() (Stats, error) {
	var c counters
	c.collect(s.Entries)
	st, err := c.stats()
	if err != nil {
		return Stats{}, err
	}
	detachStrings(&st, nil)
	return st, nil
}

// stats interprets the collected counters. Its strings are c's: see
// detachStrings.
func (c *counters) stats() (Stats, error) {
	if c.frequency <= 0 {
		return Stats{}, c.missing("sun.os.hrt.frequency")
	}
	freq := float64(c.frequency)
	st := Stats{
		ThreadsLive:      nonNegative(c.threadsLive),
		ThreadsDaemon:    nonNegative(c.threadsDaemon),
		ClassesLoaded:    nonNegative(c.classesLoaded + c.sharedClassesLoaded - c.classesUnloaded - c.sharedClassesUnloaded),
		SafepointSeconds: float64(c.safepointTicks) / freq,
		VMVersion:        c.vmVersion,
		JavaCommand:      c.javaCommand,
		VMArgs:           c.vmArgs,
		VMFlags:          c.vmFlags,
	}
	if c.vmBeginMillis > 0 {
		st.StartTime = time.UnixMilli(c.vmBeginMillis)
	}
	layout := detectLayout(c)
	st.GCName = layout.gcName

	// Sized once: appending from empty would allocate again and again.
	pools, gcs := 2, 0 // Metaspace, Compressed Class Space
	for g := range c.generations {
		for sp := range c.generations[g].spaces {
			if c.generations[g].spaces[sp].seen {
				pools++
			}
		}
	}
	for i := range c.collectors {
		if c.collectors[i].seen {
			gcs++
		}
	}
	st.Pools = make([]Pool, 0, pools)
	if gcs > 0 {
		st.GCs = make([]GC, 0, gcs)
	}
	for i := range c.collectors {
		col := &c.collectors[i]
		if !col.seen {
			continue
		}
		st.GCs = append(st.GCs, GC{
			Name:        col.name,
			Collections: nonNegative(col.invocations),
			Seconds:     float64(col.ticks) / freq,
			LastEnded:   max(col.lastExit, 0),
			LastStarted: max(col.lastEntry, 0),
		})
	}

	if !heapPools(c, layout, &st) {
		return Stats{}, c.missing("sun.gc.generation.N.space.M")
	}
	nonHeapPools(c, &st)
	return st, nil
}

// detachStrings gives st strings of its own for those it took from the
// file, the only ones that can be: pool names are constants or built by
// concatenation. They are substrings of the snapshot's copy of the whole
// file, which would otherwise stay in memory as long as a Stats is kept,
// or, from ParseStats, views of a buffer about to be overwritten. A string
// equal to prev's is prev's — these counters do not change while a JVM
// runs, so a JVM read again allocates nothing here — the others are copied
// into one new allocation.
func detachStrings(st *Stats, prev *Stats) {
	if prev == nil {
		prev = &Stats{}
	}
	// Fixed arrays, not appended slices nor a struct of both, so that the
	// compiler sees st stay on the stack. st.GCs has one per collector at
	// most.
	var (
		fields [5 + maxCollectors]*string
		olds   [len(fields)]string
	)
	fields[0], olds[0] = &st.VMVersion, prev.VMVersion
	fields[1], olds[1] = &st.JavaCommand, prev.JavaCommand
	fields[2], olds[2] = &st.VMArgs, prev.VMArgs
	fields[3], olds[3] = &st.VMFlags, prev.VMFlags
	fields[4], olds[4] = &st.GCName, prev.GCName
	k := 5
	for i := range st.GCs {
		fields[k] = &st.GCs[i].Name
		if i < len(prev.GCs) {
			olds[k] = prev.GCs[i].Name
		}
		k++
	}
	n := 0
	for i, f := range fields[:k] {
		switch *f {
		case "":
			*f = "" // not a view of the file, even an empty one
		case olds[i]:
			*f = olds[i]
		default:
			n += len(*f)
		}
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range fields[:k] {
		if *f != olds[i] {
			b.WriteString(*f)
		}
	}
	all := b.String()
	for i, f := range fields[:k] {
		if *f != olds[i] {
			l := len(*f)
			*f, all = all[:l], all[l:]
		}
	}
}

// missing is the error for a counter every JVM writes. HotSpot sets
// "accessible" before it has created all its counters (sun.os.hrt.frequency
// comes after the GC's): while sun.rt.createVmEndTime is still 0 the JVM is
// starting, and the error is also ErrNotAccessible — read again later.
func (c *counters) missing(name string) error {
	if c.vmEndMillis == 0 {
		return fmt.Errorf("%w: %w: %s (sun.rt.createVmEndTime is 0)", ErrNotAccessible, ErrMissingCounter, name)
	}
	return fmt.Errorf("%w: %s", ErrMissingCounter, name)
}

// heapPools adds the heap spaces to st as pools, merging spaces that map
// to one pool (the two survivor spaces), and sums them into the heap totals.
// It reports whether there was any heap space.
func heapPools(c *counters, l layout, st *Stats) bool {
	var genMaxSum, genMaxLargest uint64
	for g := range c.generations {
		gen := &c.generations[g]
		for sp := range gen.spaces {
			space := &gen.spaces[sp]
			if !space.seen {
				continue
			}
			p := Pool{
				Name:      l.poolName(gen.name, g, space.name, sp),
				Area:      AreaHeap,
				Used:      nonNegative(space.used),
				Committed: l.unpad(nonNegative(space.capacity)),
				Max:       l.unpad(nonNegative(space.maxCapacity)),
			}
			st.HeapUsed += p.Used
			st.HeapCommitted += p.Committed
			addPool(&st.Pools, p)
		}
		m := l.unpad(nonNegative(gen.maxCapacity))
		genMaxSum += m
		genMaxLargest = max(genMaxLargest, m)
	}
	if len(st.Pools) == 0 {
		return false
	}
	// Where every generation may grow to the whole heap (G1's regions,
	// generational ZGC), each reports the heap's maximum: summing would
	// count it twice.
	if l.generationsShareHeap {
		st.HeapMax = genMaxLargest
	} else {
		st.HeapMax = genMaxSum
	}
	for i := range st.Pools {
		p := &st.Pools[i]
		switch {
		case l.unboundedYoung && l.isYoung(p.Name):
			p.Max = 0 // bounded only by the heap, as the MXBean's -1
		case l.generationsShareHeap:
			p.Max = st.HeapMax
		}
	}
	return true
}

// addPool appends p, or merges it into a pool of the same name.
func addPool(pools *[]Pool, p Pool) {
	for i := range *pools {
		q := &(*pools)[i]
		if q.Name == p.Name && q.Area == p.Area {
			q.Used += p.Used
			q.Committed += p.Committed
			// Summed like committed, so that max stays at or above it
			// (jstat -gc, too, counts both survivor spaces).
			q.Max += p.Max
			return
		}
	}
	*pools = append(*pools, p)
}

// nonHeapPools adds Metaspace and Compressed Class Space. The class space
// lives inside Metaspace (sun.gc.metaspace.used includes it, as jstat's MU
// does), so the non-heap totals are Metaspace's alone: unlike the
// MemoryMXBean, which sums both pools, this does not count class space twice.
func nonHeapPools(c *counters, st *Stats) {
	if c.metaspace.seen {
		p := Pool{
			Name:      "Metaspace",
			Area:      AreaNonHeap,
			Used:      nonNegative(c.metaspace.used),
			Committed: nonNegative(c.metaspace.capacity),
			// sun.gc.metaspace.maxCapacity is the reserved address space,
			// not a limit: the limit is -XX:MaxMetaspaceSize, unbounded
			// unless given.
			Max: maxMetaspaceSize(st.VMArgs, st.VMFlags),
		}
		st.NonHeapUsed, st.NonHeapCommitted, st.NonHeapMax = p.Used, p.Committed, p.Max
		st.Pools = append(st.Pools, p)
	}
	if c.classSpace.seen {
		st.Pools = append(st.Pools, Pool{
			Name:      "Compressed Class Space",
			Area:      AreaNonHeap,
			Used:      nonNegative(c.classSpace.used),
			Committed: nonNegative(c.classSpace.capacity),
			Max:       nonNegative(c.classSpace.maxCapacity),
		})
	}
}

func nonNegative(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}
