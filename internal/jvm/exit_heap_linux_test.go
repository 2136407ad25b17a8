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

// A read in the middle of HotSpot's second failing full collection finds
// the heap as the first left it; the second must count among the ones
// after that read, or the rule sees one failed collection where there were
// two.
func TestFullCollectionsUnderWay(t *testing.T) {
	young := hsperf.GC{Name: "G1 young collection pauses", Collections: 9, LastStarted: 100, LastEnded: 110}
	underWay := hsperf.GC{Name: "G1 full collection pauses", Collections: 2, LastStarted: 300, LastEnded: 200}
	ended := hsperf.GC{Name: "G1 full collection pauses", Collections: 2, LastStarted: 300, LastEnded: 400}
	atRead := &hsperf.Stats{GCs: []hsperf.GC{young, underWay}}
	atEnd := &hsperf.Stats{GCs: []hsperf.GC{young, ended}}
	if got := fullCollections(atRead); got != 1 {
		t.Errorf("at the read: %d full collections, want 1 (the second is under way)", got)
	}
	if got := fullCollections(atEnd); got != 2 {
		t.Errorf("at the end: %d full collections, want 2", got)
	}
	if !lastCollectionFull(atRead) {
		t.Error("the read's figures are what the first full collection left")
	}
}
