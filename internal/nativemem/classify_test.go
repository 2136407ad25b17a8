package nativemem

import (
	"fmt"
	"testing"
)

// Mapping shapes, as the JVM, glibc and the kernel make them.
func rw(size, rss uint64) mp   { return mp{size: size, perms: "rw-p", rss: rss} }
func rwNR(size, rss uint64) mp { return mp{size: size, perms: "rw-p", rss: rss, nr: true} }
func reserved(size uint64) mp  { return mp{size: size, perms: "---p", nr: true} }
func guard(size uint64) mp     { return mp{size: size, perms: "---p"} }
func file(path string, size, rss uint64, perms string, inode uint64) mp {
	return mp{size: size, perms: perms, rss: rss, path: path, inode: inode}
}
func gapped(m mp, gap uint64) mp { m.gap = gap; return m }

// jsaAt is a part of the CDS archive, mapped from offset off.
func jsaAt(path string, off, size, rss, gap uint64) mp {
	m := file(path, size, rss, "rw-p", 77)
	m.off, m.gap = off, gap
	return m
}

const (
	heapBase = 0xe0000000     // where a compressed-oops heap sits
	anonBase = 0x7f0000000000 // where mmap hands out memory
)

type classifyCase struct {
	name   string
	base   uint64
	maps   []mp
	layout Layout
	want   map[Region]uint64
}

func runClassifyCases(t *testing.T, cases []classifyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := c.base
			if base == 0 {
				base = anonBase
			}
			text := smapsText(base, c.maps...)
			got := classifyText(t, text, c.layout)
			want := breakdownOf(c.want)
			if got != want {
				ms, _ := ParseSmaps(text, nil)
				if len(ms) > 40 {
					ms = ms[len(ms)-40:]
				}
				t.Errorf("Classify(%+v) = %s\nwant %s\nmappings (the last 40):\n%s", c.layout, fmtBreakdown(got), fmtBreakdown(want), dumpMappings(ms))
			}
			// Nothing is lost or counted twice: no case here has ZGC's
			// repeated views.
			if got.Total() != sumRss(t, text) {
				t.Errorf("Total() = %d, the Rss lines add up to %d", got.Total(), sumRss(t, text))
			}
		})
	}
}

// The heap and the class space are the runs of mappings that cover
// exactly their reserved size; CDS's archived heap objects, mapped from
// classes.jsa at the heap's top, are heap too.
func TestClassifyReservations(t *testing.T) {
	heap := []mp{rw(8*mib, 8*mib), reserved(24 * mib)}
	jsa := "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/classes.jsa"
	classSpace := []mp{rw(64*kib, 64*kib), reserved(192 * kib), rw(64*kib, 32*kib), reserved(gib - 320*kib)}
	runClassifyCases(t, []classifyCase{{
		name: "heap of exactly HeapReserved", base: heapBase, maps: heap,
		layout: Layout{HeapReserved: 32 * mib},
		want:   map[Region]uint64{Heap: 8 * mib},
	}, {
		// A page more or less and the run is not the heap: its committed
		// part is then memory the JVM committed in some reservation.
		name: "HeapReserved a page larger", base: heapBase, maps: heap,
		layout: Layout{HeapReserved: 32*mib + 4*kib},
		want:   map[Region]uint64{GC: 8 * mib},
	}, {
		name: "HeapReserved a page smaller", base: heapBase, maps: heap,
		layout: Layout{HeapReserved: 32*mib - 4*kib},
		want:   map[Region]uint64{GC: 8 * mib},
	}, {
		name: "heap run starting after another mapping", base: heapBase - mib,
		maps:   append([]mp{{size: mib, perms: "r--p", rss: mib}}, heap...),
		layout: Layout{HeapReserved: 32 * mib},
		want:   map[Region]uint64{Other: mib, Heap: 8 * mib},
	}, {
		name: "CDS archived heap at the heap's top", base: heapBase,
		maps: []mp{
			rw(8*mib, 8*mib), reserved(22 * mib),
			jsaAt(jsa, 0x1000000, 468*kib, 468*kib, 0), rw(mib-468*kib, 0),
			jsaAt(jsa, 0x1075000, 480*kib, 480*kib, 0), rw(mib-480*kib, 0),
			// the archive's metadata, elsewhere: a library file
			jsaAt(jsa, 0x1000, 12*mib, 11*mib, 64*gib),
		},
		layout: Layout{HeapReserved: 32 * mib},
		want:   map[Region]uint64{Heap: 8*mib + 948*kib, SharedLibraries: 11 * mib},
	}, {
		name: "class space of exactly ClassSpaceReserved", maps: classSpace,
		layout: Layout{ClassSpaceReserved: gib},
		want:   map[Region]uint64{Metaspace: 96 * kib},
	}, {
		name: "ClassSpaceReserved a page smaller", maps: classSpace,
		layout: Layout{ClassSpaceReserved: gib - 4*kib},
		want:   map[Region]uint64{GC: 96 * kib},
	}, {
		name: "heap and class space", base: heapBase,
		maps:   append(append([]mp{}, heap...), gapped(classSpace[0], 4*gib), classSpace[1], classSpace[2], classSpace[3]),
		layout: Layout{HeapReserved: 32 * mib, ClassSpaceReserved: gib},
		want:   map[Region]uint64{Heap: 8 * mib, Metaspace: 96 * kib},
	}})
}

// -Xmx1g with the default -XX:CompressedClassSpaceSize=1g: both
// reservations are 1 GiB, and each must still be found once.
func TestClassifyHeapAndClassSpaceSameSize(t *testing.T) {
	runClassifyCases(t, []classifyCase{{
		name: "Xmx1g", base: 0xc0000000,
		maps: []mp{
			rw(100*mib, 100*mib), reserved(924 * mib),
			gapped(rw(64*kib, 64*kib), 0x7f0000000000-0x100000000), reserved(gib - 64*kib),
		},
		layout: Layout{HeapReserved: gib, ClassSpaceReserved: gib},
		want:   map[Region]uint64{Heap: 100 * mib, Metaspace: 64 * kib},
	}})
}

// Runs of other mappings that happen to add up to a reservation's size are
// not that reservation: a thousand 1 MiB Java thread stacks (16 KiB guard
// zone, 1008 KiB stack) or sixteen 64 MiB glibc arenas make 1 GiB, the
// class space's default size, and mmap puts them below the class space,
// where a search in address order meets them first.
func TestClassifyReservationIgnoresOtherRuns(t *testing.T) {
	classSpace := []mp{gapped(rw(64*kib, 64*kib), 256*mib), reserved(gib - 64*kib)}
	var stacks []mp
	for i := 0; i < 1024; i++ {
		stacks = append(stacks, guard(16*kib), rw(1008*kib, 64*kib))
	}
	var arenas []mp
	for i := 0; i < 16; i++ {
		arenas = append(arenas, rwNR(mib, mib), reserved(63*mib))
	}
	runClassifyCases(t, []classifyCase{{
		name:   "1024 thread stacks below the class space",
		maps:   append(stacks, classSpace...),
		layout: Layout{ClassSpaceReserved: gib},
		want:   map[Region]uint64{ThreadStacks: 64 * mib, Metaspace: 64 * kib},
	}, {
		name:   "16 malloc arenas below the class space",
		maps:   append(arenas, classSpace...),
		layout: Layout{ClassSpaceReserved: gib},
		want:   map[Region]uint64{Malloc: 16 * mib, Metaspace: 64 * kib},
	}})
}

// Anonymous memory outside the heap and the class space, one rule at a time.
func TestClassifyAnonymous(t *testing.T) {
	runClassifyCases(t, []classifyCase{
		{name: "rwx is code cache", maps: []mp{{size: 2 * mib, perms: "rwxp", rss: mib}}, want: map[Region]uint64{CodeCache: mib}},
		{name: "r-x is code cache", maps: []mp{{size: 2 * mib, perms: "r-xp", rss: mib}}, want: map[Region]uint64{CodeCache: mib}},
		{name: "rwx next to its reservation is still code cache", maps: []mp{{size: 2 * mib, perms: "rwxp", rss: mib}, reserved(238 * mib)}, want: map[Region]uint64{CodeCache: mib}},
		{name: "rw nr is malloc", maps: []mp{rwNR(132*kib, 32*kib), reserved(64*mib - 132*kib)}, want: map[Region]uint64{Malloc: 32 * kib}},
		{name: "rw nr alone is malloc", maps: []mp{rwNR(mib, mib)}, want: map[Region]uint64{Malloc: mib}},
		{name: "rw alone is native mmap", maps: []mp{rw(4*mib+4*kib, 4*mib+4*kib)}, want: map[Region]uint64{NativeMmap: 4*mib + 4*kib}},
		{name: "[heap] is malloc", maps: []mp{{size: 284 * kib, perms: "rw-p", rss: 132 * kib, path: "[heap]"}}, want: map[Region]uint64{Malloc: 132 * kib}},
		{name: "[stack] is a thread stack", maps: []mp{{size: 132 * kib, perms: "rw-p", rss: 40 * kib, path: "[stack]"}}, want: map[Region]uint64{ThreadStacks: 40 * kib}},
		{name: "[anon:...malloc...] is malloc", maps: []mp{{size: mib, perms: "rw-p", rss: mib, path: "[anon:libc_malloc]"}}, want: map[Region]uint64{Malloc: mib}},
		{name: "[vdso] is other", maps: []mp{{size: 8 * kib, perms: "r-xp", rss: 4 * kib, path: "[vdso]"}}, want: map[Region]uint64{Other: 4 * kib}},
		{name: "read-only anonymous is other", maps: []mp{{size: 4 * kib, perms: "r--p", rss: 4 * kib}}, want: map[Region]uint64{Other: 4 * kib}},
		{name: "nothing resident counts nothing", maps: []mp{rw(mib, 0), rwNR(mib, 0)}, want: nil},
	})
}

// A thread's stack follows its guard: a small inaccessible mapping without
// MAP_NORESERVE (glibc's 4 KiB guard page, HotSpot's 16 KiB guard zone).
func TestClassifyThreadStacks(t *testing.T) {
	runClassifyCases(t, []classifyCase{
		{name: "Java thread: 16K guard zone, 1008K stack", maps: []mp{guard(16 * kib), rw(1008*kib, 88*kib)}, want: map[Region]uint64{ThreadStacks: 88 * kib}},
		{name: "native thread: 4K guard, 8M stack", maps: []mp{guard(4 * kib), rw(8*mib, 16*kib)}, want: map[Region]uint64{ThreadStacks: 16 * kib}},
		{name: "guard of 1 MiB", maps: []mp{guard(mib), rw(mib, 64*kib)}, want: map[Region]uint64{ThreadStacks: 64 * kib}},
		{name: "guard of 1 MiB + 4K is no guard", maps: []mp{guard(mib + 4*kib), rw(mib, 64*kib)}, want: map[Region]uint64{NativeMmap: 64 * kib}},
		{name: "stack of 8 MiB + 64K", maps: []mp{guard(4 * kib), rw(8*mib+64*kib, 64*kib)}, want: map[Region]uint64{ThreadStacks: 64 * kib}},
		{name: "stack of 8 MiB + 68K is no stack", maps: []mp{guard(4 * kib), rw(8*mib+68*kib, 64*kib)}, want: map[Region]uint64{NativeMmap: 64 * kib}},
		{name: "guard not adjacent", maps: []mp{guard(16 * kib), gapped(rw(1008*kib, 88*kib), 4*kib)}, want: map[Region]uint64{NativeMmap: 88 * kib}},
		{name: "guard after the mapping", maps: []mp{rw(1008*kib, 88*kib), guard(16 * kib)}, want: map[Region]uint64{NativeMmap: 88 * kib}},
		{name: "readable guard", maps: []mp{{size: 16 * kib, perms: "r--p"}, rw(1008*kib, 88*kib)}, want: map[Region]uint64{NativeMmap: 88 * kib}},
		// An inaccessible neighbour with MAP_NORESERVE is a reservation's
		// uncommitted rest, not a guard.
		{name: "guard with nr is a reservation", maps: []mp{reserved(16 * kib), rw(1008*kib, 88*kib)}, layout: Layout{HeapReserved: 256 * mib}, want: map[Region]uint64{GC: 88 * kib}},
		{name: "file-backed guard", maps: []mp{{size: 16 * kib, perms: "---p", path: "/opt/x.bin", inode: 9}, rw(1008*kib, 88*kib)}, want: map[Region]uint64{NativeMmap: 88 * kib}},
		{name: "many stacks", maps: []mp{guard(16 * kib), rw(1008*kib, 88*kib), guard(16 * kib), rw(1008*kib, 100*kib), guard(4 * kib), rw(mib, 8*kib)}, want: map[Region]uint64{ThreadStacks: 196 * kib}},
	})
}

// What the JVM commits in its other reservations (metaspace's 64 MiB
// nodes, the collector's bitmaps and tables) is metaspace up to the JVM's
// own figure for it, then the collector's up to HeapReserved/16 + 16 MiB,
// then plain native memory.
func TestClassifyJVMCommitted(t *testing.T) {
	const heap = 256 * mib // collector's cap: 16 + 16 MiB
	const gcCap = heap/16 + 16*mib
	runClassifyCases(t, []classifyCase{
		{name: "before its reserved rest, metaspace first", maps: []mp{rw(10*mib, 10*mib), reserved(22 * mib)},
			layout: Layout{HeapReserved: heap, MetaspaceCommitted: 3 * mib}, want: map[Region]uint64{Metaspace: 3 * mib, GC: 7 * mib}},
		{name: "after its reserved rest", maps: []mp{reserved(30 * mib), rw(10*mib, 10*mib)},
			layout: Layout{HeapReserved: heap, MetaspaceCommitted: 3 * mib}, want: map[Region]uint64{Metaspace: 3 * mib, GC: 7 * mib}},
		{name: "no metaspace figure: all the collector's", maps: []mp{rw(10*mib, 10*mib), reserved(22 * mib)},
			layout: Layout{HeapReserved: heap}, want: map[Region]uint64{GC: 10 * mib}},
		{name: "exactly metaspace and the collector's cap", maps: []mp{reserved(30 * mib), rw(3*mib+gcCap, 3*mib+gcCap)},
			layout: Layout{HeapReserved: heap, MetaspaceCommitted: 3 * mib}, want: map[Region]uint64{Metaspace: 3 * mib, GC: gcCap}},
		{name: "a page over the cap is native mmap", maps: []mp{reserved(30 * mib), rw(3*mib+gcCap+4*kib, 3*mib+gcCap+4*kib)},
			layout: Layout{HeapReserved: heap, MetaspaceCommitted: 3 * mib}, want: map[Region]uint64{Metaspace: 3 * mib, GC: gcCap, NativeMmap: 4 * kib}},
		{name: "no heap figure: the cap is 16 MiB", maps: []mp{rw(20*mib, 20*mib), reserved(30 * mib)},
			want: map[Region]uint64{GC: 16 * mib, NativeMmap: 4 * mib}},
		{name: "several reservations add up", maps: []mp{rw(2*mib, 2*mib), reserved(30 * mib), gapped(reserved(10*mib), 16*mib), rw(6*mib, 5*mib), reserved(8 * mib)},
			layout: Layout{HeapReserved: heap, MetaspaceCommitted: 4 * mib}, want: map[Region]uint64{Metaspace: 4 * mib, GC: 3 * mib}},
		// Metaspace's nodes, once fully committed, have no reserved rest
		// and look like plain memory: the JVM's figure takes the rest of
		// metaspace from there.
		{name: "metaspace beyond the reservations comes from plain memory", maps: []mp{rw(10*mib, 10*mib), reserved(22 * mib), gapped(rw(64*mib, 64*mib), 64*mib)},
			layout: Layout{HeapReserved: heap, MetaspaceCommitted: 70 * mib}, want: map[Region]uint64{Metaspace: 70 * mib, NativeMmap: 4 * mib}},
		{name: "metaspace figure beyond everything", maps: []mp{rw(10*mib, 10*mib), reserved(22 * mib), gapped(rw(4*mib, 4*mib), 64*mib)},
			layout: Layout{HeapReserved: heap, MetaspaceCommitted: 70 * mib}, want: map[Region]uint64{Metaspace: 14 * mib}},
	})
}

// mmap hands out addresses downwards: memory mapped later lands below a
// reservation and the kernel merges it into the reservation's committed
// first part. When a size the JVM reserves in puts the reservation's start
// inside that mapping, only the bytes above it are the JVM's.
func TestClassifyMergedBelowReservation(t *testing.T) {
	node := uint64(64 * mib) // a metaspace node: the only size known without a heap
	runClassifyCases(t, []classifyCase{
		{name: "exact node", maps: []mp{rw(10*mib, 10*mib), reserved(node - 10*mib)},
			layout: Layout{MetaspaceCommitted: 10 * mib}, want: map[Region]uint64{Metaspace: 10 * mib}},
		{name: "6 MiB merged below a node", maps: []mp{rw(10*mib, 10*mib), reserved(node - 4*mib)},
			layout: Layout{MetaspaceCommitted: 4 * mib}, want: map[Region]uint64{Metaspace: 4 * mib, NativeMmap: 6 * mib}},
		{name: "prorated by address", maps: []mp{rw(10*mib, 5*mib), reserved(node - 4*mib)},
			layout: Layout{MetaspaceCommitted: 2 * mib}, want: map[Region]uint64{Metaspace: 2 * mib, NativeMmap: 3 * mib}},
		{name: "the run goes on through the reservation's parts", maps: []mp{rw(10*mib, 10*mib), reserved(20 * mib), rw(4*mib, 4*mib), reserved(node - 28*mib)},
			layout: Layout{MetaspaceCommitted: 8 * mib}, want: map[Region]uint64{Metaspace: 8 * mib, NativeMmap: 6 * mib}},
		{name: "no size fits: all of it", maps: []mp{rw(10*mib, 10*mib), reserved(20 * mib)},
			layout: Layout{MetaspaceCommitted: 10 * mib}, want: map[Region]uint64{Metaspace: 10 * mib}},
		// With a heap of 256 MiB the collector reserves 32 MiB, 4 MiB and
		// 512 KiB too; the highest start that falls inside the mapping
		// claims the least.
		{name: "the smallest fitting reservation", maps: []mp{rw(40*mib, 40*mib), reserved(30 * mib)},
			layout: Layout{HeapReserved: 256 * mib}, want: map[Region]uint64{GC: 2 * mib, NativeMmap: 38 * mib}},
		{name: "a card table's 512 KiB", maps: []mp{rw(mib, mib), reserved(256 * kib)},
			layout: Layout{HeapReserved: 256 * mib}, want: map[Region]uint64{GC: 256 * kib, NativeMmap: 768 * kib}},
	})
}

// ZGC maps its heap several times (a memfd, one view per colour): the same
// pages count once.
func TestClassifyZGCHeapViews(t *testing.T) {
	view := func(off, rss uint64) mp {
		m := file("/memfd:java_heap (deleted)", 256*mib, rss, "rw-s", 4242)
		m.dev, m.off = "00:01", off
		return m
	}
	cases := []struct {
		name  string
		views []mp
		want  uint64
	}{
		{"three views of the same pages", []mp{view(0, 10*mib), view(0, 10*mib), view(0, 10*mib)}, 10 * mib},
		{"only the remapped view resident", []mp{view(0, 0), view(0, 0), view(0, 12*mib)}, 12 * mib},
		{"different offsets are different pages", []mp{view(0, 10*mib), view(256*mib, 6*mib)}, 16 * mib},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var maps []mp
			for i, v := range c.views {
				if i > 0 {
					v.gap = 4 * gib
				}
				maps = append(maps, v)
				if i == 0 {
					maps = append(maps, reserved(4*gib-256*mib))
				}
			}
			text := smapsText(0x40000000000, maps...)
			got := classifyText(t, text, Layout{HeapReserved: 256 * mib})
			if want := breakdownOf(map[Region]uint64{Heap: c.want}); got != want {
				t.Errorf("Classify = %s, want %s", fmtBreakdown(got), fmtBreakdown(want))
			}
		})
	}
	// The memfd is the heap even when the layout is unknown.
	text := smapsText(0x40000000000, view(0, 10*mib), gapped(view(0, 10*mib), gib))
	if got := classifyText(t, text, Layout{}); got != breakdownOf(map[Region]uint64{Heap: 10 * mib}) {
		t.Errorf("without a layout: Classify = %s, want heap=10MiB", fmtBreakdown(got))
	}
}

// File-backed mappings: libraries and everything of a file mapped
// executable somewhere; other files; the JVM's hsperfdata.
func TestClassifyFiles(t *testing.T) {
	type f struct {
		path  string
		perms string
		inode uint64
		want  Region
	}
	cases := []f{
		{"/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", "r--p", 10, SharedLibraries},
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "rw-p", 11, SharedLibraries},
		{"/opt/spark/jars/spark-core_2.12-3.5.0.jar", "r--s", 12, SharedLibraries},
		{"/usr/lib/jvm/java-17-openjdk-amd64/lib/server/classes.jsa", "rw-p", 13, SharedLibraries},
		{"/usr/lib/jvm/java-17-openjdk-amd64/lib/modules", "r--p", 14, SharedLibraries},
		{"/tmp/libnetty_transport_native_epoll_x86_6412345.so (deleted)", "r--p", 15, SharedLibraries},
		{"/tmp/blockmgr-1/0c/shuffle_0_1_0.data", "rw-s", 16, MappedFiles},
		{"/data/part-00000.sox", "r--p", 17, MappedFiles},
		{"/data/file with spaces.bin", "r--p", 18, MappedFiles},
		{"/tmp/hsperfdata_spark/4242", "rw-s", 19, Other},
		{"/usr/lib/locale/C.utf8/LC_CTYPE", "r--p", 20, MappedFiles},
	}
	var maps []mp
	want := map[Region]uint64{}
	for i, c := range cases {
		rss := uint64(i+1) * 4 * kib
		maps = append(maps, gapped(file(c.path, 64*kib, rss, c.perms, c.inode), mib))
		want[c.want] += rss
	}
	// A file mapped executable anywhere is a library's: all its mappings,
	// whatever its name.
	exe := "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
	maps = append(maps,
		gapped(file(exe, 4*kib, 4*kib, "r--p", 30), mib),
		file(exe, 4*kib, 4*kib, "r-xp", 30),
		file(exe, 4*kib, 4*kib, "rw-p", 30))
	want[SharedLibraries] += 12 * kib
	// The same path with another inode (a file replaced since) is not.
	maps = append(maps, gapped(file(exe, 4*kib, 4*kib, "r--p", 31), mib))
	want[MappedFiles] += 4 * kib
	// Nor the same inode on another device.
	other := file(exe, 4*kib, 4*kib, "r--p", 30)
	other.dev, other.gap = "fd:02", mib
	maps = append(maps, other)
	want[MappedFiles] += 4 * kib

	runClassifyCases(t, []classifyCase{{name: "files", maps: maps, want: want}})
}

// Classify is pure arithmetic over the mappings: a breakdown of ms is the
// same however often it is taken and does not change ms.
func TestClassifyDoesNotModify(t *testing.T) {
	text := smapsText(anonBase, guard(16*kib), rw(1008*kib, 88*kib), rw(10*mib, 10*mib), reserved(54*mib))
	ms, err := ParseSmaps(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprint(ms)
	l := Layout{HeapReserved: 256 * mib, MetaspaceCommitted: 2 * mib}
	a, b := Classify(ms, l), Classify(ms, l)
	if a != b || fmt.Sprint(ms) != before {
		t.Errorf("Classify is not repeatable: %s then %s", fmtBreakdown(a), fmtBreakdown(b))
	}
}
