package hsperf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

const (
	mib           = 1 << 20
	xmx           = 64 * mib // -Xmx of the per-collector fixtures and the live JVMs
	unboundedCCS  = 1 << 30  // CompressedClassSpaceSize's default
	fixtureVMArgs = " -Xmx64m --add-modules=ALL-DEFAULT"
)

// Golden values, read off the fixtures with jcmd PerfCounter.print
// semantics; TestStatsMatchJstatFixtures checks them against jstat.
var goldenStats = map[string]Stats{
	"g1-large": {
		// Old gen committed 5083496448 (> 4 GiB, 788529152 if read as 32
		// bits), heap committed -Xms5g, max -Xmx6g.
		HeapUsed: 62359936, HeapCommitted: 5 << 30, HeapMax: 6 << 30,
		NonHeapUsed: 9679984, NonHeapCommitted: 9961472,
		Pools: []Pool{
			{"G1 Eden Space", AreaHeap, 50331648, 285212672, 0},
			{"G1 Survivor Space", AreaHeap, 0, 0, 0},
			{"G1 Old Gen", AreaHeap, 12028288, 5083496448, 6 << 30},
			{"Metaspace", AreaNonHeap, 9679984, 9961472, 0},
			{"Compressed Class Space", AreaNonHeap, 1178128, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"G1 young collection pauses", 1, 0.010190597, 1811352811, 1801162755},
			{"G1 full collection pauses", 1, 0.060567082, 1874849524, 1814283103},
			{"G1 concurrent cycle pauses", 0, 0, 0, 0},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2389,
		SafepointSeconds: 0.075262786, StartTime: time.UnixMilli(1795447095540),
		GCName: "G1", VMArgs: "-XX:+UseG1GC -Xms5g -Xmx6g --add-modules=ALL-DEFAULT",
	},
	"g1": {
		HeapUsed: 18913928, HeapCommitted: 41943040, HeapMax: xmx,
		NonHeapUsed: 9686552, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"G1 Eden Space", AreaHeap, 8388608, 22020096, 0},
			{"G1 Survivor Space", AreaHeap, 1638688, 2097152, 0},
			{"G1 Old Gen", AreaHeap, 8886632, 17825792, xmx},
			{"Metaspace", AreaNonHeap, 9686552, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1178128, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"G1 young collection pauses", 14, 0.513428771, 8336570917, 8328127523},
			{"G1 full collection pauses", 1, 0.14221718, 8179406693, 8037189974},
			{"G1 concurrent cycle pauses", 0, 0, 0, 0},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2389,
		SafepointSeconds: 0.667699074, StartTime: time.UnixMilli(1795383766187),
		GCName: "G1", VMArgs: "-XX:+UseG1GC" + fixtureVMArgs,
	},
	"parallel": {
		HeapUsed: 20665800, HeapCommitted: 66060288, HeapMax: xmx,
		NonHeapUsed: 9673592, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"PS Eden Space", AreaHeap, 10840896, 14680064, 20971520},
			{"PS Survivor Space", AreaHeap, 557312, 6291456, 14680064},
			{"PS Old Gen", AreaHeap, 9267592, 45088768, 45088768},
			{"Metaspace", AreaNonHeap, 9673592, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1178632, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"Parallel young collection pauses", 26, 0.903030618, 7412554836, 7410757141},
			{"Parallel full collection pauses", 1, 0.125978549, 7345413311, 7219435553},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2384,
		SafepointSeconds: 1.044521787, StartTime: time.UnixMilli(1795383766072),
		GCName: "Parallel", VMArgs: "-XX:+UseParallelGC" + fixtureVMArgs,
	},
	"serial": {
		HeapUsed: 27652336, HeapCommitted: xmx, HeapMax: xmx,
		NonHeapUsed: 9690648, NonHeapCommitted: 9961472,
		Pools: []Pool{
			{"Eden Space", AreaHeap, 15860192, 17891328, 17891328},
			{"Survivor Space", AreaHeap, 1377144, 4456448, 4456448},
			{"Tenured Gen", AreaHeap, 10415000, 44761088, 44761088},
			{"Metaspace", AreaNonHeap, 9690648, 9961472, 0},
			{"Compressed Class Space", AreaNonHeap, 1178632, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"Serial young collection pauses", 18, 0.231552295, 7057729255, 7057603557},
			{"Serial full collection pauses", 1, 0.012632459, 7054708233, 7042076344},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2384,
		SafepointSeconds: 0.27589651, StartTime: time.UnixMilli(1795383766218),
		GCName: "Serial", VMArgs: "-XX:+UseSerialGC" + fixtureVMArgs,
	},
	"z": {
		HeapUsed: 48234496, HeapCommitted: xmx, HeapMax: xmx,
		NonHeapUsed: 9643080, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"ZHeap", AreaHeap, 48234496, xmx, xmx},
			{"Metaspace", AreaNonHeap, 9643080, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1182040, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"Z concurrent cycle pauses", 96, 0.001031159, 9631590264, 9631583170},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2381,
		SafepointSeconds: 0.045026455, StartTime: time.UnixMilli(1795383766392),
		GCName: "ZGC", VMArgs: "-XX:+UseZGC" + fixtureVMArgs,
	},
	"shenandoah": {
		HeapUsed: 33274960, HeapCommitted: xmx, HeapMax: xmx,
		NonHeapUsed: 9696944, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"Shenandoah", AreaHeap, 33274960, xmx, xmx},
			{"Metaspace", AreaNonHeap, 9696944, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1182288, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"Shenandoah partial", 0, 0, 0, 0},
			{"Shenandoah full", 222, 1.916044617, 8303596415, 8303587057},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2381,
		SafepointSeconds: 0.024509033, StartTime: time.UnixMilli(1795383766392),
		GCName: "Shenandoah", VMArgs: "-XX:+UseShenandoahGC" + fixtureVMArgs,
	},
}

func TestStatsGolden(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			got, err := mustParse(t, readFixture(t, f.name)).Stats()
			if err != nil {
				t.Fatal(err)
			}
			want := goldenStats[f.name]
			// Fields common to every fixture, checked here once.
			want.VMVersion = "17.0.15+6-Debian-1deb12u1"
			want.JavaCommand = "jdk.compiler/com.sun.tools.javac.launcher.Main Alloc.java"
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Stats mismatch\n got: %+v\nwant: %+v", got, want)
			}
			checkInvariants(t, got)
		})
	}
}

// checkInvariants holds for any JVM: pools add up to the totals, and
// nothing is used beyond what is committed nor committed beyond the max.
func checkInvariants(t *testing.T, st Stats) {
	t.Helper()
	var heapUsed, heapCommitted uint64
	for _, p := range st.Pools {
		if p.Used > p.Committed || (p.Max != 0 && p.Committed > p.Max) {
			t.Errorf("pool %+v: used > committed or committed > max", p)
		}
		if p.Area == AreaHeap {
			heapUsed += p.Used
			heapCommitted += p.Committed
		}
	}
	if heapUsed != st.HeapUsed || heapCommitted != st.HeapCommitted {
		t.Errorf("heap pools sum to %d/%d, totals are %d/%d", heapUsed, heapCommitted, st.HeapUsed, st.HeapCommitted)
	}
	if st.HeapCommitted > st.HeapMax || st.HeapMax == 0 {
		t.Errorf("heap committed %d, max %d", st.HeapCommitted, st.HeapMax)
	}
	if st.NonHeapUsed == 0 || st.NonHeapUsed > st.NonHeapCommitted {
		t.Errorf("non-heap used %d, committed %d", st.NonHeapUsed, st.NonHeapCommitted)
	}
}

// The fixtures' jstat output was taken right after each file was copied
// from an idle JVM: heap totals must agree to jstat's rounding, GC counts
// and classes exactly.
func TestStatsMatchJstatFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", f.name+".jstat"))
			if err != nil {
				t.Fatal(err)
			}
			s := mustParse(t, readFixture(t, f.name))
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			j := parseJstat(t, string(out))
			r := read{s, st}
			for _, d := range compareWithJstat(r, r, j, jstatRounding(4)) {
				t.Error(d)
			}
			if got, want := float64(st.ClassesLoaded), j["Loaded"]-j["Unloaded"]; got != want {
				t.Errorf("ClassesLoaded = %v, jstat Loaded-Unloaded = %v", got, want)
			}
		})
	}
}

// jstatCollectorColumns are jstat -gc's count columns and the collector
// index each reads (sun.gc.collector.N.invocations).
var jstatCollectorColumns = []struct {
	column string
	index  string
}{{"YGC", "0"}, {"FGC", "1"}, {"CGC", "2"}}

// read is one parse of a JVM's file.
type read struct {
	snap  *Snapshot
	stats Stats
}

// compareWithJstat returns how two reads of a file, taken just before and
// just after jstat -gc ran, disagree with it: jstat must lie between them
// (to within tol bytes of its rounding). It compares heap used and committed
// with S0U+S1U+EU+OU and S0C+S1C+EC+OC (ZGC and Shenandoah print only OU and
// OC), non-heap used with MU, and each collector's count with the column
// that reads it. For a still file, pass the same read twice.
func compareWithJstat(before, after read, j jstatTable, tol float64) []string {
	var diffs []string
	between := func(what string, a, b uint64, jstat float64, tol float64) {
		lo, hi := float64(min(a, b))-tol, float64(max(a, b))+tol
		if jstat < lo || jstat > hi {
			diffs = append(diffs, fmt.Sprintf("%s = %d..%d, jstat %.0f (tolerance %.0f)", what, a, b, jstat, tol))
		}
	}
	used := j.kib("S0U", "S1U", "EU", "OU")
	committed := j.kib("S0C", "S1C", "EC", "OC")
	if used == 0 || committed == 0 {
		return []string{fmt.Sprintf("jstat shows no heap: %v", j)}
	}
	between("HeapUsed vs S0U+S1U+EU+OU", before.stats.HeapUsed, after.stats.HeapUsed, used, tol)
	between("HeapCommitted vs S0C+S1C+EC+OC", before.stats.HeapCommitted, after.stats.HeapCommitted, committed, tol)
	between("NonHeapUsed vs MU", before.stats.NonHeapUsed, after.stats.NonHeapUsed, j.kib("MU"), jstatRounding(1))
	seen := 0
	for _, c := range jstatCollectorColumns {
		want, printed := j[c.column]
		if !printed {
			continue // "-": this collector has no such collector
		}
		seen++
		name, ok := after.snap.Text("sun.gc.collector." + c.index + ".name")
		if !ok {
			diffs = append(diffs, fmt.Sprintf("jstat prints %s = %v but there is no collector %s", c.column, want, c.index))
			continue
		}
		gcBefore, ok1 := findGC(before.stats.GCs, name)
		gcAfter, ok2 := findGC(after.stats.GCs, name)
		if !ok1 || !ok2 {
			diffs = append(diffs, fmt.Sprintf("collector %q missing from Stats.GCs %+v", name, after.stats.GCs))
			continue
		}
		between(name+" collections vs "+c.column, gcBefore.Collections, gcAfter.Collections, want, 0)
	}
	if seen == 0 {
		diffs = append(diffs, fmt.Sprintf("jstat printed no collector counts: %v", j))
	}
	return diffs
}

func findGC(gcs []GC, name string) (GC, bool) {
	for _, g := range gcs {
		if g.Name == name {
			return g, true
		}
	}
	return GC{}, false
}

func TestStatsMissingCounters(t *testing.T) {
	vmStarted := testEntry{name: "sun.rt.createVmEndTime", typ: TypeLong, long: 1795383323997}
	tests := []struct {
		name     string
		entries  []testEntry
		starting bool // no sun.rt.createVmEndTime yet: also ErrNotAccessible
	}{
		{"JVM starting, no frequency yet", []testEntry{
			{name: "sun.gc.generation.0.space.0.used", typ: TypeLong, long: 1},
		}, true},
		{"no frequency", []testEntry{
			vmStarted,
			{name: "sun.gc.generation.0.space.0.used", typ: TypeLong, long: 1},
		}, false},
		{"no heap", []testEntry{
			vmStarted,
			{name: "sun.os.hrt.frequency", typ: TypeLong, long: 1e9},
		}, false},
		{"zero frequency", []testEntry{
			vmStarted,
			{name: "sun.os.hrt.frequency", typ: TypeLong, long: 0},
			{name: "sun.gc.generation.0.space.0.used", typ: TypeLong, long: 1},
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, encode(binaryLE, tt.entries))
			_, err := s.Stats()
			if !errors.Is(err, ErrMissingCounter) {
				t.Errorf("Stats error = %v, want ErrMissingCounter", err)
			}
			if errors.Is(err, ErrNotAccessible) != tt.starting {
				t.Errorf("Stats error = %v: errors.Is(ErrNotAccessible) = %v, want %v", err, !tt.starting, tt.starting)
			}
		})
	}
}

// Stats keeps no reference to the snapshot's copy of the file: a caller
// keeps Stats for a while (the OOM attribution), not the 32 KiB file.
func TestStatsStringsDetached(t *testing.T) {
	s := mustParse(t, readFixture(t, "g1"))
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// The first entry's name is 52 bytes into the copy (prologue, header).
	lo := uintptr(unsafe.Pointer(unsafe.StringData(s.Entries[0].Name))) - prologueSize - entryHeaderSize
	hi := lo + uintptr(s.Used)
	for _, str := range []string{st.VMVersion, st.JavaCommand, st.VMArgs, st.GCs[0].Name} {
		if p := uintptr(unsafe.Pointer(unsafe.StringData(str))); p >= lo && p < hi {
			t.Errorf("%q points into the snapshot's copy of the file", str)
		}
	}
}

func TestGCCompleted(t *testing.T) {
	for _, tc := range []struct {
		gc   GC
		want uint64
	}{
		{GC{Collections: 3, LastStarted: 50, LastEnded: 60}, 3},
		{GC{Collections: 3, LastStarted: 70, LastEnded: 60}, 2}, // counted when it started
		{GC{Collections: 1, LastStarted: 70, LastEnded: 0}, 0},  // the first, under way
		{GC{Collections: 0}, 0},
		{GC{Collections: 0, LastStarted: 5}, 0}, // inconsistent counters: never below zero
	} {
		if got := tc.gc.Completed(); got != tc.want {
			t.Errorf("%+v: %d, want %d", tc.gc, got, tc.want)
		}
	}
}
