package jvm

import (
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
)

func TestLastCollectionFull(t *testing.T) {
	young := func(ended int64) hsperf.GC {
		return hsperf.GC{Name: "G1 young collection pauses", Collections: 3, LastEnded: ended}
	}
	full := func(ended int64) hsperf.GC {
		return hsperf.GC{Name: "G1 full collection pauses", Collections: 2, LastEnded: ended}
	}
	for _, tc := range []struct {
		name string
		gcs  []hsperf.GC
		want bool
	}{
		{"full after young", []hsperf.GC{young(100), full(200)}, true},
		{"young after full", []hsperf.GC{young(300), full(200)}, false},
		{"no full collection yet", []hsperf.GC{young(100), full(0)}, false},
		{"no collection at all", []hsperf.GC{young(0), full(0)}, false},
		{"parallel collector", []hsperf.GC{{Name: "PSScavenge", LastEnded: 5}, {Name: "PSParallelCompact", LastEnded: 9}}, true},
		{"ZGC has no full collector", []hsperf.GC{{Name: "ZGC Cycles", LastEnded: 9}}, false},
	} {
		if got := lastCollectionFull(&hsperf.Stats{GCs: tc.gcs}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
