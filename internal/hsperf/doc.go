// Package hsperf reads HotSpot's hsperfdata files — the shared-memory
// performance counters a JVM publishes under /tmp/hsperfdata_<user>/<pid>,
// the same ones jstat, jcmd PerfCounter.print and jps read — and interprets
// them as heap and non-heap pools, collectors, threads and classes.
//
// The file is always under /tmp, whatever java.io.tmpdir says; it is absent
// with -XX:-UsePerfData, and not a file at all with -XX:+PerfDisableSharedMem.
//
// Everything here is pure: it works on a []byte the caller read (with
// read(2), never mmap: a file truncated under a mapping raises SIGBUS) and
// does no I/O of its own. A file is untrusted input — it belongs to whoever
// owns the JVM — so every offset and length is bounded by the buffer and
// anything malformed is an error, never a panic.
//
//	s, err := hsperf.Parse(b)                     // *Snapshot: prologue + []Entry
//	v, ok := s.Long("sun.os.hrt.frequency")
//	e, ok := s.Lookup("sun.gc.collector.0.time") // e.Unit == hsperf.UnitTicks
//	st, err := s.Stats()                          // pools, collectors, threads, classes
//	st, ticks, err := hsperf.ParseStats(b, &last, &plan) // the same without a Snapshot
//
// # Errors, and a JVM that is starting
//
// Errors wrap sentinels, to test with errors.Is: ErrTruncated, ErrBadMagic,
// ErrUnsupportedVersion, ErrMalformed (any offset, length or field out of
// bounds), from Stats ErrMissingCounter, and ErrNotAccessible — the JVM is
// starting; read again next scrape, the file is not broken. A JVM's start-up
// goes through these states:
//
//	what a read finds                                   result
//	no file yet                                         (the caller's read error)
//	empty file (created, not yet sized)                 Parse: ErrNotAccessible
//	32 KiB of zeros (mapped, prologue not written)      Parse: ErrNotAccessible
//	accessible = 0                                      Parse: ErrNotAccessible
//	accessible = 1, sun.os.hrt.frequency not created    Stats: ErrNotAccessible and ErrMissingCounter
//	everything                                          Stats
//
// HotSpot sets accessible before it has created all its counters; while
// sun.rt.createVmEndTime is still 0 a missing counter means "starting". A
// missing counter once sun.rt.createVmEndTime is set is ErrMissingCounter
// alone: that file is not going to get better.
//
// # The format (OpenJDK's perfMemory.hpp and perfData.hpp)
//
// Prologue, 32 bytes:
//
//	offset size field           notes
//	 0     4    magic           0xcafec0c0, always big-endian (bytes ca fe c0 c0)
//	 4     1    byte_order      0 big, 1 little: the order of every later field
//	 5     1    major_version   2
//	 6     1    minor_version   0
//	 7     1    accessible      1 once the JVM has initialised the file
//	 8     4    used            bytes filled so far; the file is PerfDataMemorySize (32 KiB), zeros after used
//	12     4    overflow        bytes of counters that did not fit (those counters are missing)
//	16     8    mod_time_stamp  hrt ticks of the last entry added
//	24     4    entry_offset    first entry (32)
//	28     4    num_entries
//
// Entry header, 20 bytes, then the NUL-terminated name, then the data:
//
//	offset size field             notes
//	 0     4    entry_length      to the next entry; HotSpot pads to 8
//	 4     4    name_offset       from the entry start (20)
//	 8     4    vector_length     0 for a scalar; byte count of a B vector
//	12     1    data_type         J int64, B byte vector (a string up to its first NUL)
//	13     1    flags             bit 0: "supported" (a stable counter)
//	14     1    data_units        1 none, 2 bytes, 3 ticks, 4 events, 5 string, 6 hertz
//	15     1    data_variability  1 constant, 2 monotonic, 3 variable
//	16     4    data_offset       from the entry start, 8-aligned
//
// Ticks convert to seconds with sun.os.hrt.frequency (1e9 on Linux).
//
// # How Parse defends itself
//
//   - used must lie within the buffer (else ErrTruncated) and entries within
//     used — so every strict prefix of a real file is an error, while the
//     JVM's own zero-padded 32 KiB file parses.
//   - num_entries is checked against the most entries used bytes could hold
//     (22 bytes each at least) and capped at 65536 (HotSpot writes a few
//     hundred) before anything is allocated: allocation is bounded by the
//     file size, never by a count in it.
//   - Each entry's name and data must lie inside the entry; entry_length
//     must be at least 22 (so the walk always advances) and fit the buffer;
//     the name must be non-empty and NUL-terminated before data_offset; a
//     long needs 8 bytes, a vector its vector_length.
//   - Types other than J and B (never written by HotSpot) are kept with no
//     value, as jstat ignores them.
//
// A live file can legitimately show an unfinished entry: HotSpot's
// PerfMemory::alloc bumps num_entries and used before PerfData::create_entry
// writes the entry (name first, then the header, data_offset last), and
// counters are created after start-up too (compiler threads add theirs when
// they start). An entry whose data_offset is 0 — no finished entry has one —
// therefore ends the snapshot instead of failing it; Snapshot.Pending says
// how many entries were left out, and the next read has them.
//
// Parse copies the used bytes once into a string and slices every name and
// string value out of it, so it costs three allocations whatever the number
// of entries. Lookup, Long and Text build a name index on first use (safe
// for concurrent use); Stats does not need it: it makes one pass over the
// entries.
//
// ParseStats, for a file read on every scan, does both in one pass over b
// itself: names are matched where they lie and only the strings Stats keeps
// are copied — or, unchanged since the JVM's last Stats, shared with it —
// so a read costs the two slices of pools and collectors. Given the Plan
// of the JVM's last read it does not parse the entries that read parsed: the
// file's entries never move, so it checks that they are byte for byte as
// they were (but for the values Stats reads again by offset and the data
// of the entries it does not read; by a seeded 64-bit hash, not a copy of
// the file), reads its values where they lie and parses only the entries
// added since. Anything else — another JVM behind
// the pid, a corrupt or rewritten file — is parsed in full: the result is
// the same either way.
//
// # What JDK 17 writes, per collector
//
// Captured from OpenJDK 17.0.15 with -Xmx64m (fixtures in testdata,
// regenerated with testdata/capture.sh); gen.N.space.M abbreviates
// sun.gc.generation.N.space.M:
//
//	collector  sun.gc.policy.name  heap spaces (gen.N name: space names)     collectors (sun.gc.collector.N.name)
//	G1         GarbageFirst        0 young: eden, s0, s1; 1 old: space       0 G1 young, 1 G1 full, 2 G1 concurrent cycle pauses
//	Parallel   ParScav:MSC         0 new: eden, s0, s1; 1 old: old           0 Parallel young, 1 Parallel full collection pauses
//	Serial     Copy:MSC            0 new: eden, s0, s1; 1 old: old           0 Serial young, 1 Serial full collection pauses
//	ZGC        (none)              1 old: space only (no generation 0)       2 Z concurrent cycle pauses
//	Shenandoah (none)              0 Young (no spaces); 1 Heap: Heap         0 Shenandoah partial, 1 Shenandoah full
//
// All write sun.gc.metaspace.{used,capacity,maxCapacity,minCapacity} and
// sun.gc.compressedclassspace.* (the latter absent with
// -XX:-UseCompressedClassPointers). JDK 17 writes no code-cache counters, so
// there is no code cache pool.
//
// Quirks that shape Stats:
//
//   - G1 pads every capacity by MinObjAlignmentInBytes (8): s0 always shows
//     capacity 8. Real G1 capacities are whole regions (≥ 1 MiB), so Stats
//     rounds G1 capacities down to 4 KiB, which removes the pad for any
//     object alignment.
//   - G1's generation maxima are each the whole heap: summing them would
//     report twice -Xmx. For G1 (and generational ZGC, whose two generations
//     both report the heap max) the heap max is the largest generation
//     maximum; for the others, the sum. G1 eden and survivor get max 0
//     (unbounded, as their MXBeans' -1); G1 Old Gen gets the heap max.
//   - Shenandoah's "full" collector counts every cycle, concurrent ones
//     included, and jstat prints it as FGC. The name is passed through
//     unchanged: do not alert on "Shenandoah full" as if it were a
//     stop-the-world full GC.
//   - ZGC keeps cycling at high occupancy, and its used is page-granular
//     (multiples of 2 MiB).
//   - sun.gc.metaspace.used includes class space (it equals jstat's MU), and
//     sun.gc.metaspace.maxCapacity is reserved address space, not a limit.
//   - java.cls.loadedClasses excludes CDS-shared classes, counted in
//     java.cls.sharedLoadedClasses.
//
// # Stats
//
//   - HeapUsed, HeapCommitted: the sum over heap spaces of used / capacity —
//     jstat's S0U+S1U+EU+OU and S0C+S1C+EC+OC (OU/OC for ZGC, Shenandoah).
//   - HeapMax: the generations' maxCapacity, summed, or the largest for G1
//     and generational ZGC.
//   - Pools (heap): one per space, named like the MemoryPoolMXBeans (G1 Eden
//     Space, PS Old Gen, Tenured Gen, ZHeap, Shenandoah, ZGC Young
//     Generation, …); an unknown layout keeps the counters' names. s0 and s1
//     are one survivor pool with used, committed and max summed, so pools
//     add up to the heap totals, as in jstat.
//   - Pools (non-heap): Metaspace (max = -XX:MaxMetaspaceSize from
//     java.rt.vmArgs or vmFlags, 0 if not given) and Compressed Class Space
//     (max = its maxCapacity). NonHeapUsed/Committed/Max are Metaspace
//     alone: class space is inside it (the MemoryMXBean sums both pools and
//     so counts class space twice).
//   - GCs: sun.gc.collector.N in N order: name, invocations, time / frequency,
//     lastExitTime and lastEntryTime (in ticks).
//   - ClassesLoaded: loaded + shared loaded − unloaded − shared unloaded,
//     as ClassLoadingMXBean.getLoadedClassCount (jstat -class's Loaded
//     column does not subtract the unloaded ones).
//   - ThreadsLive, ThreadsDaemon, SafepointSeconds, StartTime
//     (sun.rt.createVmBeginTime, ms since the epoch), GCName, VMVersion,
//     JavaCommand (cut at 1024 bytes by the JVM), VMArgs, VMFlags.
//
// Stats fails with ErrMissingCounter without sun.os.hrt.frequency or any
// heap space. Negative counters (only a hostile file has them) read as 0.
// The strings in Stats are copied out of the file, so keeping a Stats does
// not keep the file's bytes alive.
//
// # Tests
//
// Golden fixtures for the five collectors, and one of a G1 heap of -Xms5g
// -Xmx6g whose capacities pass 4 GiB (a 64-bit counter read as 32 bits
// fails it); the fixtures and live JVMs of each collector compared with
// jstat -gc read just before and after (heap
// used and committed within jstat's rounding, MU and the GC counts exact); a
// starting JVM polled thousands of times, every read giving Stats or
// ErrNotAccessible; every prefix, corruption and random input an error and
// never a panic; both byte orders; layouts JDK 17 cannot produce
// (generational ZGC); a re-read with a Plan against a full parse of the
// same bytes, for each fixture changed in every way a file can change
// between reads (values, appended entries, every byte in turn) and for
// live JVMs starting and running; and FuzzParse and FuzzParseStatsPlan.
package hsperf
