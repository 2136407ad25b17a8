package nativemem

import "strings"

// Layout is what the JVM says of its own reservations (hsperfdata), so
// that they can be found among the mappings. Zero fields are unknown.
type Layout struct {
	HeapReserved       uint64 // the heap's maximum size: one reservation of exactly this size
	ClassSpaceReserved uint64 // the compressed class space's reservation (-XX:CompressedClassSpaceSize)
	// MetaspaceCommitted is metaspace outside the class space, committed:
	// its 64 MiB nodes look like any other memory the JVM commits, so
	// the JVM's own figure says how much of that memory they are.
	MetaspaceCommitted uint64
}

// Breakdown is a process's resident memory by region, in bytes.
type Breakdown [NumRegions]uint64

// Total is the sum over the regions: the process's resident memory.
func (b *Breakdown) Total() uint64 {
	var t uint64
	for _, v := range b {
		t += v
	}
	return t
}

const (
	// maxGuard is the largest inaccessible mapping taken for a thread's
	// guard: glibc's guard page (4 KiB) and HotSpot's stack guard zones
	// (16 KiB on x86-64, larger with big pages or -XX:StackReservedPages).
	maxGuard = 1 << 20
	// maxStack is the largest mapping taken for a thread's stack after a
	// guard: glibc's default for native threads is 8 MiB.
	maxStack = 8<<20 + 64<<10
	// gcShareOfHeap bounds the collector's structures committed inside
	// the JVM's reservations: G1's two mark bitmaps (1/64 of the heap
	// each) and three byte-per-card tables (1/512 each) come to 3.7 %;
	// ZGC, Shenandoah, Parallel and Serial need less.
	gcShareOfHeap = 16
	gcSlack       = 16 << 20
)

// Classify sums the resident bytes of ms, a process's mappings in address
// order as smaps lists them, by region.
//
// Anonymous memory is told apart by how it was made. The heap and the
// class space are the runs of mappings of exactly their reserved size;
// JIT code is the only anonymous memory that is executable; glibc's arenas
// keep MAP_NORESERVE on their usable part; a thread's stack follows its
// small inaccessible guard; the JVM commits its other reservations
// (metaspace nodes, the collector's structures) without MAP_NORESERVE next
// to their still-reserved rest. What remains (plain private anonymous
// memory) is large allocations mmapped on their own, direct buffers
// above glibc's mmap threshold first of all.
func Classify(ms []Mapping, l Layout) Breakdown {
	var b Breakdown
	heap := findReservation(ms, l.HeapReserved)
	class := findReservationOutside(ms, l.ClassSpaceReserved, heap)
	libs := libraryFiles(ms)
	var seenShared map[sharedKey]bool
	var reservedCommitted uint64 // the JVM's committed parts of its reservations
	sizes := reservationSizes(l)
	for i := range ms {
		m := &ms[i]
		if m.Rss == 0 {
			continue
		}
		if !m.Anonymous() {
			r := fileRegion(m, libs)
			if heap.overlaps(m) {
				r = Heap // CDS's archived heap objects
			}
			if r == Heap { // ZGC's heap views map the same pages several times
				if seenShared == nil {
					seenShared = map[sharedKey]bool{}
				}
				k := sharedKey{m.Dev, m.Inode, m.Offset}
				if seenShared[k] {
					continue
				}
				seenShared[k] = true
			}
			b[r] += m.Rss
			continue
		}
		// The spans begin and end on mappings' edges (findReservation),
		// and do not meet: a mapping is in one whole or not at all.
		if heap.overlaps(m) {
			b[Heap] += m.Rss
			continue
		}
		if class.overlaps(m) {
			b[Metaspace] += m.Rss
			continue
		}
		r := anonRegion(ms, i)
		if r == GC { // provisional: metaspace's and the collector's alike
			in := reservedShare(ms, i, sizes)
			reservedCommitted += in
			b[NativeMmap] += m.Rss - in
			continue
		}
		b[r] += m.Rss
	}
	// Metaspace outside the class space is what the JVM says is committed
	// there, taken from its committed reservations first, then from the
	// plain anonymous memory its nodes look like when fully committed.
	meta := min(l.MetaspaceCommitted, reservedCommitted)
	reservedCommitted -= meta
	if fromPlain := min(l.MetaspaceCommitted-meta, b[NativeMmap]); fromPlain > 0 {
		b[NativeMmap] -= fromPlain
		meta += fromPlain
	}
	b[Metaspace] += meta
	// What is left is the collector's, up to what it can need; more is
	// plain memory the kernel merged into a reservation's committed part.
	gcCap := l.HeapReserved/gcShareOfHeap + gcSlack
	gc := min(reservedCommitted, gcCap)
	b[GC] += gc
	b[NativeMmap] += reservedCommitted - gc
	return b
}

type sharedKey struct{ dev, inode, offset uint64 }

// anonRegion classifies the anonymous mapping ms[i] outside the heap and
// the class space. GC stands for "committed inside a JVM reservation",
// which Classify splits between metaspace and the collector.
func anonRegion(ms []Mapping, i int) Region {
	m := &ms[i]
	switch {
	case m.Path == "[heap]":
		return Malloc
	case m.Path == "[stack]":
		return ThreadStacks
	case strings.HasPrefix(m.Path, "[anon:"):
		switch {
		case strings.Contains(m.Path, "malloc"):
			return Malloc
		case strings.Contains(m.Path, "stack"):
			return ThreadStacks
		}
	case m.Path != "":
		return Other // [vdso], [vvar], [vsyscall]
	}
	switch {
	case m.Exec:
		return CodeCache
	case !m.Write:
		return Other
	case m.NoReserve:
		return Malloc
	case i > 0 && contiguous(&ms[i-1], m) && inaccessible(&ms[i-1]) && !ms[i-1].NoReserve &&
		ms[i-1].Size() <= maxGuard && m.Size() <= maxStack:
		return ThreadStacks
	case i > 0 && contiguous(&ms[i-1], m) && inaccessible(&ms[i-1]) && ms[i-1].NoReserve,
		i+1 < len(ms) && contiguous(m, &ms[i+1]) && inaccessible(&ms[i+1]) && ms[i+1].NoReserve:
		return GC
	}
	return NativeMmap
}

func contiguous(a, b *Mapping) bool { return a.End == b.Start && a.Anonymous() && b.Anonymous() }

func inaccessible(m *Mapping) bool { return !m.Read && !m.Write && !m.Exec }

// fileRegion classifies a file-backed mapping.
func fileRegion(m *Mapping, libs map[fileKey]bool) Region {
	p := m.Path
	switch {
	case strings.HasPrefix(p, "/memfd:java_heap"):
		return Heap // ZGC
	case strings.Contains(p, "/hsperfdata_"):
		return Other
	case libs[fileKey{m.Dev, m.Inode}], isLibraryPath(p):
		return SharedLibraries
	}
	return MappedFiles
}

type fileKey struct{ dev, inode uint64 }

// libraryFiles are the files mapped executable somewhere: a shared
// object's read-only and data segments belong with its code.
func libraryFiles(ms []Mapping) map[fileKey]bool {
	libs := map[fileKey]bool{}
	for i := range ms {
		if ms[i].Exec && ms[i].Inode != 0 {
			libs[fileKey{ms[i].Dev, ms[i].Inode}] = true
		}
	}
	return libs
}

func isLibraryPath(p string) bool {
	p = strings.TrimSuffix(p, " (deleted)")
	return strings.HasSuffix(p, ".so") || strings.Contains(p, ".so.") ||
		strings.HasSuffix(p, ".jar") || strings.HasSuffix(p, ".jsa") ||
		strings.HasSuffix(p, "/lib/modules")
}

// span is an address range; the zero span overlaps nothing.
type span struct{ lo, hi uint64 }

func (s span) overlaps(m *Mapping) bool { return s.hi > s.lo && m.Start < s.hi && m.End > s.lo }

func (s span) meets(o span) bool { return s.hi > s.lo && o.hi > o.lo && s.lo < o.hi && o.lo < s.hi }

// findReservation finds the run of contiguous mappings that covers
// exactly size bytes: a reservation the JVM made in one piece, committed
// in parts, with files mapped into it (CDS maps its archived heap objects
// at the heap's top). It returns the zero span when no run fits, as when
// the kernel merged a neighbour into one of its edges.
func findReservation(ms []Mapping, size uint64) span {
	return findReservationOutside(ms, size, span{})
}

func findReservationOutside(ms []Mapping, size uint64, not span) span {
	if size == 0 {
		return span{}
	}
	for a := 0; a < len(ms); {
		if !reservable(&ms[a]) {
			a++
			continue
		}
		b := a + 1 // the run is ms[a:b]
		for b < len(ms) && reservable(&ms[b]) && ms[b-1].End == ms[b].Start {
			b++
		}
		j := a
		for i := a; i < b; i++ {
			for j < b && ms[j].End-ms[i].Start < size {
				j++
			}
			if j == b {
				break
			}
			if found := (span{ms[i].Start, ms[j].End}); ms[j].End-ms[i].Start == size && !found.meets(not) {
				return found
			}
		}
		a = b
	}
	return span{}
}

// reservable: a part of a JVM reservation, or a file mapped into one.
// Thread stacks (guards without MAP_NORESERVE) and malloc arenas (usable
// parts with it) are not: a thousand 1 MiB stacks or sixteen 64 MiB arenas
// in a row would otherwise pass for a 1 GiB class space.
func reservable(m *Mapping) bool { return !m.Anonymous() || jvmReserved(m) }

// metaspaceNodeSize is the size of each reservation holding metaspace
// outside the class space (HotSpot 17's virtual space nodes, 64-bit).
const metaspaceNodeSize = 64 << 20

// reservationSizes are the sizes the JVM's reservations other than the heap
// and the class space come in: metaspace nodes, and the collector's mark
// bitmaps (1/64 of the heap), summary data (1/8, Parallel) and
// byte-per-card tables (1/512).
func reservationSizes(l Layout) []uint64 {
	sizes := []uint64{metaspaceNodeSize}
	if h := l.HeapReserved; h > 0 {
		sizes = append(sizes, h/8, h/64, h/512)
	}
	return sizes
}

// reservedShare is the part of ms[i]'s resident bytes that lies inside a
// JVM reservation, ms[i] being committed memory next to a reservation's
// uncommitted rest. mmap hands out addresses downwards, so memory mapped
// later lands just below a reservation and the kernel merges it into the
// reservation's committed first part when their flags agree: the first
// mapping of the reservation's run then starts below the reservation.
// When one of the sizes the JVM reserves in puts the reservation's start
// inside that first mapping, only the bytes above the start count; the
// merged bytes below are plain anonymous memory.
func reservedShare(ms []Mapping, i int, sizes []uint64) uint64 {
	m := &ms[i]
	if i > 0 && contiguous(&ms[i-1], m) && jvmReserved(&ms[i-1]) {
		return m.Rss // not the first mapping of the run
	}
	end := m.End
	for j := i + 1; j < len(ms) && contiguous(&ms[j-1], &ms[j]) && jvmReserved(&ms[j]); j++ {
		end = ms[j].End
	}
	var start uint64 // the highest fitting reservation start: the least memory claimed
	for _, size := range sizes {
		if size == 0 || size > end-m.Start {
			continue
		}
		if s := end - size; s == m.Start {
			return m.Rss
		} else if s < m.End {
			start = max(start, s)
		}
	}
	if start == 0 {
		return m.Rss
	}
	return uint64(float64(m.Rss) * float64(m.End-start) / float64(m.Size()))
}

// jvmReserved: a part of a reservation as the JVM makes them, reserved
// with MAP_NORESERVE and inaccessible, or committed without it.
func jvmReserved(m *Mapping) bool {
	return m.Inode == 0 && m.Path == "" && (inaccessible(m) && m.NoReserve || m.Write && !m.NoReserve && !m.Exec)
}
