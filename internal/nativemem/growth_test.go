package nativemem

import (
	"strings"
	"testing"
	"time"
)

func reading(kv map[Region]uint64) Reading {
	b := breakdownOf(kv)
	return Reading{Regions: b}
}

func withShmem(r Reading, shmem uint64) Reading {
	r.Shmem, r.HasShmem = shmem, true
	return r
}

func TestTopGrowth(t *testing.T) {
	const mi = int64(mib)
	t0 := time.Date(2024, 5, 1, 14, 2, 11, 0, time.UTC)
	base := map[Region]uint64{Heap: 200 * mib, Metaspace: 50 * mib, Malloc: 100 * mib, ThreadStacks: 20 * mib, NativeMmap: 10 * mib}
	grown := func(d map[Region]int64) Reading {
		kv := map[Region]uint64{}
		for r, v := range base {
			kv[r] = v
		}
		for r, v := range d {
			kv[r] = uint64(int64(kv[r]) + v)
		}
		return reading(kv)
	}
	first := reading(base)
	first.Time = t0
	cases := []struct {
		name        string
		first, last Reading
		want        Growth
	}{
		{"the largest growth wins", first, grown(map[Region]int64{Malloc: 300 * mi, NativeMmap: 200 * mi}),
			Growth{Region: "malloc", Bytes: 300 * mib, Total: 500 * mi}},
		{"one byte more wins", first, grown(map[Region]int64{Malloc: 300 * mi, NativeMmap: 300*mi + 1}),
			Growth{Region: "native_mmap", Bytes: 300*mib + 1, Total: 600*mi + 1}},
		{"a tie goes to the first region", first, grown(map[Region]int64{Malloc: 300 * mi, NativeMmap: 300 * mi}),
			Growth{Region: "malloc", Bytes: 300 * mib, Total: 600 * mi}},
		{"a tie with shmem goes to the region", withShmem(first, 0), withShmem(grown(map[Region]int64{NativeMmap: 300 * mi}), 300*mib),
			Growth{Region: "native_mmap", Bytes: 300 * mib, Total: 600 * mi}},
		{"the heap is not native memory", first, grown(map[Region]int64{Heap: 1024 * mi, ThreadStacks: 4 * mi}),
			Growth{Region: "thread_stacks", Bytes: 4 * mib, Total: 4 * mi}},
		{"only the heap grew", first, grown(map[Region]int64{Heap: 1024 * mi}),
			Growth{}},
		{"shrinking counts in the net, never as growth", first, grown(map[Region]int64{Malloc: -80 * mi, Metaspace: 30 * mi}),
			Growth{Region: "metaspace", Bytes: 30 * mib, Total: -50 * mi}},
		{"everything shrank", first, grown(map[Region]int64{Malloc: -80 * mi}),
			Growth{Total: -80 * mi}},
		{"nothing changed", first, grown(nil), Growth{}},
		{"shmem grew most", withShmem(first, 10*mib), withShmem(grown(map[Region]int64{Malloc: 100 * mi}), 410*mib),
			Growth{Region: Shmem, Bytes: 400 * mib, Total: 500 * mi}},
		{"shmem grew, but a region more", withShmem(first, 10*mib), withShmem(grown(map[Region]int64{Malloc: 100*mi + 1}), 110*mib),
			Growth{Region: "malloc", Bytes: 100*mib + 1, Total: 200*mi + 1}},
		{"shmem unknown at first", first, withShmem(grown(map[Region]int64{Malloc: mi}), 400*mib),
			Growth{Region: "malloc", Bytes: mib, Total: mi}},
		{"shmem unknown at last", withShmem(first, 0), grown(map[Region]int64{Malloc: mi}),
			Growth{Region: "malloc", Bytes: mib, Total: mi}},
		{"shmem freed", withShmem(first, 400*mib), withShmem(grown(map[Region]int64{Malloc: mi}), 0),
			Growth{Region: "malloc", Bytes: mib, Total: mi - 400*mi}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.first.Time = t0
			c.want.Since = t0
			if got := TopGrowth(c.first, c.last); got != c.want {
				t.Errorf("TopGrowth = %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestGrowthString(t *testing.T) {
	since := time.Date(2024, 5, 1, 16, 2, 11, 0, time.FixedZone("CEST", 2*3600))
	g := Growth{Region: "malloc", Bytes: 412 * mib, Total: 500 * int64(mib), Since: since}
	if got, want := g.String(), "malloc grew 412 MiB since 14:02:11"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (Growth{Total: -5, Since: since}).String(); got != "" {
		t.Errorf("String() of no growth = %q, want empty", got)
	}
}

// Every region (and shmem) has advice; RegionNames follows the Region
// order and String names each.
func TestRegionNamesAndAdvice(t *testing.T) {
	names := RegionNames()
	if len(names) != int(NumRegions) {
		t.Fatalf("RegionNames() has %d names, want %d", len(names), NumRegions)
	}
	for r := Region(0); r < NumRegions; r++ {
		if names[r] != r.String() {
			t.Errorf("RegionNames()[%d] = %q, Region(%d).String() = %q", r, names[r], r, r.String())
		}
		if strings.TrimSpace(Advice(r.String())) == "" {
			t.Errorf("no advice for %q", r)
		}
	}
	names[0] = "changed"
	if RegionNames()[0] != "heap" {
		t.Error("RegionNames returns the package's own slice")
	}
	if Advice(Shmem) == "" || Advice(Python) == "" {
		t.Error("no advice for shmem or python")
	}
	if Advice("nonsense") != "" || Region(-1).String() != "unknown" || NumRegions.String() != "unknown" {
		t.Error("unknown regions are not unknown")
	}
}
