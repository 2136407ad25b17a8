package hsperf

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

const (
	mib           = 1 << 20
	xmx           = 64 * mib // every fixture and live JVM runs with -Xmx64m
	unboundedCCS  = 1 << 30  // CompressedClassSpaceSize's default
	fixtureVMArgs = " -Xmx64m --add-modules=ALL-DEFAULT"
)

// Golden values, read off the fixtures with jcmd PerfCounter.print
// semantics; TestStatsMatchJstatFixtures checks them against jstat.
var goldenStats = map[string]Stats{
	"g1": {
		HeapUsed: 8892160, HeapCommitted: 41943040, HeapMax: xmx,
		NonHeapUsed: 9659152, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"G1 Eden Space", AreaHeap, 0, 24117248, 0},
			{"G1 Survivor Space", AreaHeap, 0, 0, 0},
			{"G1 Old Gen", AreaHeap, 8892160, 17825792, xmx},
			{"Metaspace", AreaNonHeap, 9659152, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1179136, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"G1 young collection pauses", 11, 0.26934267},
			{"G1 full collection pauses", 1, 0.063505577},
			{"G1 concurrent cycle pauses", 0, 0},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2385,
		SafepointSeconds: 0.334838678, StartTime: time.UnixMilli(1795383323997),
		GCName: "G1", VMArgs: "-XX:+UseG1GC" + fixtureVMArgs,
	},
	"parallel": {
		HeapUsed: 8488720, HeapCommitted: 65536000, HeapMax: xmx,
		NonHeapUsed: 9655528, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"PS Eden Space", AreaHeap, 271520, 13631488, 20971520},
			{"PS Survivor Space", AreaHeap, 0, 6815744, 14680064},
			{"PS Old Gen", AreaHeap, 8217200, 45088768, 45088768},
			{"Metaspace", AreaNonHeap, 9655528, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1178128, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"Parallel young collection pauses", 22, 0.336222871},
			{"Parallel full collection pauses", 1, 0.030586871},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2380,
		SafepointSeconds: 0.368091407, StartTime: time.UnixMilli(1795383324010),
		GCName: "Parallel", VMArgs: "-XX:+UseParallelGC" + fixtureVMArgs,
	},
	"serial": {
		HeapUsed: 10786008, HeapCommitted: xmx, HeapMax: xmx,
		NonHeapUsed: 9674656, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"Eden Space", AreaHeap, 357240, 17891328, 17891328},
			{"Survivor Space", AreaHeap, 0, 4456448, 4456448},
			{"Tenured Gen", AreaHeap, 10428768, 44761088, 44761088},
			{"Metaspace", AreaNonHeap, 9674656, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1178632, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"Serial young collection pauses", 16, 0.236893233},
			{"Serial full collection pauses", 1, 0.027029},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2380,
		SafepointSeconds: 0.279830321, StartTime: time.UnixMilli(1795383324040),
		GCName: "Serial", VMArgs: "-XX:+UseSerialGC" + fixtureVMArgs,
	},
	"z": {
		HeapUsed: 46137344, HeapCommitted: xmx, HeapMax: xmx,
		NonHeapUsed: 9658688, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"ZHeap", AreaHeap, 46137344, xmx, xmx},
			{"Metaspace", AreaNonHeap, 9658688, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1181000, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"Z concurrent cycle pauses", 96, 0.000746096},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2377,
		SafepointSeconds: 0.009450896, StartTime: time.UnixMilli(1795383324022),
		GCName: "ZGC", VMArgs: "-XX:+UseZGC" + fixtureVMArgs,
	},
	"shenandoah": {
		HeapUsed: 8331760, HeapCommitted: xmx, HeapMax: xmx,
		NonHeapUsed: 9631512, NonHeapCommitted: 9895936,
		Pools: []Pool{
			{"Shenandoah", AreaHeap, 8331760, xmx, xmx},
			{"Metaspace", AreaNonHeap, 9631512, 9895936, 0},
			{"Compressed Class Space", AreaNonHeap, 1181248, 1310720, unboundedCCS},
		},
		GCs: []GC{
			{"Shenandoah partial", 0, 0},
			{"Shenandoah full", 138, 1.430515872},
		},
		ThreadsLive: 6, ThreadsDaemon: 5, ClassesLoaded: 2377,
		SafepointSeconds: 0.018878053, StartTime: time.UnixMilli(1795383324036),
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
			want.JavaCommand = "jdk.compiler/com.sun.tools.javac.launcher.Main /work/main/internal/hsperf/testdata/Alloc.java"
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
			compareWithJstat(t, s, st, j, jstatRounding(4), 0)
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

// compareWithJstat checks heap used/committed against jstat's
// S0U+S1U+EU+OU and S0C+S1C+EC+OC (ZGC and Shenandoah print only OU/OC),
// and each collector's count against its jstat column.
func compareWithJstat(t *testing.T, s *Snapshot, st Stats, j jstatTable, bytesTol float64, countTol uint64) {
	t.Helper()
	used := j.kib("S0U", "S1U", "EU", "OU")
	committed := j.kib("S0C", "S1C", "EC", "OC")
	if used == 0 || committed == 0 {
		t.Fatalf("jstat shows no heap: %v", j)
	}
	if !near(float64(st.HeapUsed), used, bytesTol) {
		t.Errorf("HeapUsed = %d, jstat S0U+S1U+EU+OU = %.0f (tolerance %.0f)", st.HeapUsed, used, bytesTol)
	}
	if !near(float64(st.HeapCommitted), committed, bytesTol) {
		t.Errorf("HeapCommitted = %d, jstat S0C+S1C+EC+OC = %.0f (tolerance %.0f)", st.HeapCommitted, committed, bytesTol)
	}
	if mu := j.kib("MU"); !near(float64(st.NonHeapUsed), mu, bytesTol) {
		t.Errorf("NonHeapUsed = %d, jstat MU = %.0f", st.NonHeapUsed, mu)
	}
	seen := 0
	for _, c := range jstatCollectorColumns {
		want, printed := j[c.column]
		name, ok := s.Text("sun.gc.collector." + c.index + ".name")
		if !printed {
			continue // "-": the collector has no such collector
		}
		seen++
		if !ok {
			t.Errorf("jstat prints %s = %v but there is no collector %s", c.column, want, c.index)
			continue
		}
		gc, ok := findGC(st.GCs, name)
		if !ok {
			t.Errorf("collector %q missing from Stats.GCs %+v", name, st.GCs)
			continue
		}
		if d := int64(gc.Collections) - int64(want); d < -int64(countTol) || d > int64(countTol) {
			t.Errorf("%s collections = %d, jstat %s = %v", name, gc.Collections, c.column, want)
		}
	}
	if seen == 0 {
		t.Errorf("jstat printed no collector counts: %v", j)
	}
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
	tests := []struct {
		name    string
		entries []testEntry
	}{
		{"no frequency", []testEntry{
			{name: "sun.gc.generation.0.space.0.used", typ: TypeLong, long: 1},
		}},
		{"no heap", []testEntry{
			{name: "sun.os.hrt.frequency", typ: TypeLong, long: 1e9},
		}},
		{"zero frequency", []testEntry{
			{name: "sun.os.hrt.frequency", typ: TypeLong, long: 0},
			{name: "sun.gc.generation.0.space.0.used", typ: TypeLong, long: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, encode(binaryLE, tt.entries))
			if _, err := s.Stats(); !errors.Is(err, ErrMissingCounter) {
				t.Errorf("Stats error = %v, want ErrMissingCounter", err)
			}
		})
	}
}

func TestMaxMetaspaceSize(t *testing.T) {
	tests := []struct {
		args, flags string
		want        uint64
	}{
		{"-Xmx64m", "", 0},
		{"-XX:MaxMetaspaceSize=128m", "", 128 * mib},
		{"-XX:MaxMetaspaceSize=1g -XX:MaxMetaspaceSize=256M", "", 256 * mib},
		{"-XX:MaxMetaspaceSize=1048576", "", mib},
		{"-XX:MaxMetaspaceSize=12x", "", 0},
		{"-XX:MaxMetaspaceSize=99999999999t", "", 0},
		{"-XX:MaxMetaspaceSize=64k", "-XX:MaxMetaspaceSize=1g", 64 << 10},
	}
	for _, tt := range tests {
		if got := maxMetaspaceSize(tt.args, tt.flags); got != tt.want {
			t.Errorf("maxMetaspaceSize(%q, %q) = %d, want %d", tt.args, tt.flags, got, tt.want)
		}
	}
}
