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

func TestKeepEndedRetentionAndCap(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	tr := &Tracker{cfg: Config{EndedRetention: time.Hour, MaxProcesses: 3}, ended: map[int]endedJVM{}}
	gone := func(pids ...int) []Exit {
		var out []Exit
		for _, p := range pids {
			out = append(out, Exit{Last: Sample{Identity: Identity{PID: p}, Peaks: Peaks{Resident: uint64(p)}}})
		}
		return out
	}
	pids := func(s []Sample) []int {
		var out []int
		for _, x := range s {
			out = append(out, x.PID)
		}
		return out
	}
	if got := pids(tr.keepEnded(gone(10), nil, start)); !slices.Equal(got, []int{10}) {
		t.Errorf("after one end: %v", got)
	}
	// A live JVM that took pid 10 hides the ended one.
	got := pids(tr.keepEnded(gone(30, 20), []JVM{{Sample: Sample{Identity: Identity{PID: 10}}}}, start.Add(time.Minute)))
	if !slices.Equal(got, []int{20, 30}) || len(tr.ended) != 3 {
		t.Errorf("with pid 10 taken: %v (kept %d)", got, len(tr.ended))
	}
	// Beyond the cap of 3, the oldest goes.
	if got := pids(tr.keepEnded(gone(40), nil, start.Add(2*time.Minute))); !slices.Equal(got, []int{20, 30, 40}) {
		t.Errorf("beyond the cap: %v", got)
	}
	if got := pids(tr.keepEnded(nil, nil, start.Add(3*time.Hour))); len(got) != 0 {
		t.Errorf("after the retention: %v", got)
	}
}
