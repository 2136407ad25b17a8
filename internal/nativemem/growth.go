package nativemem

import (
	"fmt"
	"time"
)

// Reading is one breakdown of a JVM, with the container's tmpfs pages at
// the same time: what a verdict compares with the JVM's first minute.
type Reading struct {
	Time     time.Time
	Regions  Breakdown
	Shmem    uint64 // the container's shmem (memory.stat); 0 when unknown
	HasShmem bool
}

// Growth is what grew most outside the heap between two readings.
type Growth struct {
	Region string // a region's name, or Shmem; "" when nothing outside the heap grew
	Bytes  uint64 // how much it grew
	Total  int64  // how much everything outside the heap grew, net
	Since  time.Time
}

// TopGrowth compares last with first: the region outside the heap (or the
// container's shmem) that grew most, and the net growth outside the heap.
func TopGrowth(first, last Reading) Growth {
	g := Growth{Since: first.Time}
	for r := Region(0); r < NumRegions; r++ {
		if r == Heap {
			continue
		}
		d := int64(last.Regions[r]) - int64(first.Regions[r])
		g.Total += d
		if d > 0 && uint64(d) > g.Bytes {
			g.Region, g.Bytes = r.String(), uint64(d)
		}
	}
	if first.HasShmem && last.HasShmem {
		d := int64(last.Shmem) - int64(first.Shmem)
		g.Total += d
		if d > 0 && uint64(d) > g.Bytes {
			g.Region, g.Bytes = Shmem, uint64(d)
		}
	}
	return g
}

// String reads on its own in a log line: "malloc grew 412 MiB since 14:02:11".
func (g Growth) String() string {
	if g.Region == "" {
		return ""
	}
	return fmt.Sprintf("%s grew %.0f MiB since %s", g.Region, float64(g.Bytes)/(1<<20), g.Since.UTC().Format("15:04:05"))
}
