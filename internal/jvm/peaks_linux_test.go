package jvm

import (
	"slices"
	"time"

	"testing"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/nativemem"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

func g1Stats(eden, survivor, old uint64, collections uint64) hsperf.Stats {
	return hsperf.Stats{
		HeapUsed: eden + survivor + old, HeapCommitted: 512 * mib,
		Pools: []hsperf.Pool{
			{Name: "G1 Eden Space", Area: hsperf.AreaHeap, Used: eden},
			{Name: "G1 Survivor Space", Area: hsperf.AreaHeap, Used: survivor},
			{Name: "G1 Old Gen", Area: hsperf.AreaHeap, Used: old},
			{Name: "Metaspace", Area: hsperf.AreaNonHeap, Used: 40 * mib},
		},
		GCs: []hsperf.GC{{Name: "G1 young", Collections: collections}},
	}
}

func zStats(used uint64, collections uint64) hsperf.Stats {
	return hsperf.Stats{HeapUsed: used, Pools: []hsperf.Pool{{Name: "ZHeap", Area: hsperf.AreaHeap, Used: used}},
		GCs: []hsperf.GC{{Name: "ZGC Cycles", Collections: collections}}}
}

func TestHeapLive(t *testing.T) {
	g1 := g1Stats(300*mib, 10*mib, 90*mib, 4)
	z, zBefore, zSame := zStats(700*mib, 5), zStats(900*mib, 4), zStats(800*mib, 5)
	for _, tc := range []struct {
		name      string
		stats     hsperf.Stats
		prev      *hsperf.Stats
		want      uint64
		wantKnown bool
	}{
		{"generational: old and survivors, not eden", g1, nil, 100 * mib, true},
		{"one space after a collection", z, &zBefore, 700 * mib, true},
		{"one space, no collection since", z, &zSame, 0, false},
		{"one space, first read", z, nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, known := heapLive(&tc.stats, tc.prev)
			if got != tc.want || known != tc.wantKnown {
				t.Errorf("heapLive = %d MiB, %v; want %d MiB, %v", got/mib, known, tc.want/mib, tc.wantKnown)
			}
		})
	}
}

func TestReadPeaks(t *testing.T) {
	j := JVM{
		Sample: Sample{RSSJVM: 700 * mib, RSSOther: 20 * mib, RSSPython: 300 * mib, Peaks: Peaks{HeapLive: 100 * mib}},
		Stats:  g1Stats(0, 0, 0, 0), Counters: CountersHsperf,
		Cgroup: procmem.CgroupMemory{Peak: 1200 * mib, HasPeak: true}, HasCgroup: true,
	}
	want := Peaks{Container: 1200 * mib, Resident: 700 * mib, HeapLive: 100 * mib, NonHeap: (720 - 512) * mib, Python: 300 * mib}
	if got := readPeaks(&j); got != want {
		t.Errorf("readPeaks = %+v, want %+v", got, want)
	}

	// A young JVM has touched only part of its committed heap: the
	// breakdown says how much is resident.
	var n NativeMemory
	n.Last.Regions[nativemem.Heap] = 200 * mib
	j.Native = &n
	if got := readPeaks(&j).NonHeap; got != (720-200)*mib {
		t.Errorf("with 200 MiB of the heap resident, non-heap = %d MiB, want 520", got/mib)
	}

	// Without hsperfdata: no heap figures, and no non-heap; a kernel
	// without memory.peak: no container peak.
	j = JVM{Sample: Sample{RSSJVM: 700 * mib}, Counters: CountersNoFile, Cgroup: procmem.CgroupMemory{Usage: 1}, HasCgroup: true}
	if got, want := readPeaks(&j), (Peaks{Resident: 700 * mib}); got != want {
		t.Errorf("readPeaks without hsperfdata = %+v, want %+v", got, want)
	}
}

func TestPeaksMergeKeepsTheHighest(t *testing.T) {
	p := Peaks{Container: 5, Resident: 1, HeapLive: 9, NonHeap: 2, Python: 0}
	p.merge(Peaks{Container: 3, Resident: 4, HeapLive: 1, NonHeap: 8, Python: 6})
	if want := (Peaks{Container: 5, Resident: 4, HeapLive: 9, NonHeap: 8, Python: 6}); p != want {
		t.Errorf("merged = %+v, want %+v", p, want)
	}
}

func TestEndedRecordsRetentionAndCap(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	rs := newRecords()
	end := func(at time.Time, pids ...int) {
		for _, p := range pids {
			rs.end(rs.of(p, start), Sample{Identity: Identity{PID: p}, Peaks: Peaks{Resident: uint64(p)}}, at)
		}
	}
	ended := func(now time.Time) []int {
		var out []int
		for _, x := range rs.ended(now, time.Hour) {
			out = append(out, x.PID)
		}
		return out
	}
	noProcesses := &procmem.ProcessTable{} // ended records do not ask the table
	end(start, 10)
	rs.forget(noProcesses, start, time.Hour, 3)
	if got := ended(start); !slices.Equal(got, []int{10}) {
		t.Errorf("after one end: %v", got)
	}
	if s, ok := rs.lastSample(10); !ok || s.Peaks.Resident != 10 {
		t.Errorf("the last sample of an ended JVM: %+v, %v", s, ok)
	}
	// A new JVM that took pid 10 replaces the ended one.
	end(start.Add(time.Minute), 30, 20)
	rs.of(10, start.Add(time.Second))
	if got := ended(start.Add(time.Minute)); !slices.Equal(got, []int{20, 30}) {
		t.Errorf("with pid 10 taken: %v", got)
	}
	// Beyond the cap of 3, the oldest goes.
	end(start.Add(90*time.Second), 50)
	end(start.Add(2*time.Minute), 40)
	rs.forget(noProcesses, start.Add(2*time.Minute), time.Hour, 3)
	if got := ended(start.Add(2 * time.Minute)); !slices.Equal(got, []int{30, 40, 50}) && !slices.Equal(got, []int{20, 40, 50}) {
		t.Errorf("beyond the cap: %v", got)
	}
	rs.forget(noProcesses, start.Add(3*time.Hour), time.Hour, 3)
	if got := ended(start.Add(3 * time.Hour)); len(got) != 0 || len(rs.m) != 0 {
		t.Errorf("after the retention: %v, %d records", got, len(rs.m))
	}
}
