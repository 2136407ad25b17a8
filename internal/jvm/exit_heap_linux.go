package jvm

import (
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/jvmend"
)

// finalHeap reads the counters a dead JVM left in its file, from its
// start whatever was read before.
func finalHeap(fd int, size int64, marks [2]gcMark, fullRead gcMark) (jvmend.Heap, error) {
	if size > MaxHsperfBytes {
		return jvmend.Heap{}, ErrTooLarge
	}
	b := make([]byte, size)
	n, err := unix.Pread(fd, b, 0)
	if err != nil {
		return jvmend.Heap{}, err
	}
	snap, err := hsperf.Parse(b[:n])
	if err != nil {
		return jvmend.Heap{}, err
	}
	stats, err := snap.Stats()
	if err != nil {
		return jvmend.Heap{}, err
	}
	return heapAtEnd(snap, stats, marks, fullRead), nil
}

// heapAtEnd interprets a JVM's last counters: its heap, when its last full
// collection ended relative to its clock's last tick, the share of time
// spent collecting since the newest mark at least jvmend.MinGCWindow before
// the end, and how full the heap was at the last read, or at fullRead, the
// last read that found it full, when a later one found it emptied: a
// JVM's shutdown, after the task that filled the heap has gone, can take
// longer than the interval between two reads.
func heapAtEnd(snap *hsperf.Snapshot, stats hsperf.Stats, marks [2]gcMark, fullRead gcMark) jvmend.Heap {
	h := jvmend.Heap{Known: stats.HeapMax > 0, Source: "final counters", Used: stats.HeapUsed, Max: stats.HeapMax}
	for _, p := range stats.Pools {
		if p.Area == hsperf.AreaHeap && isOldPool(p.Name) {
			h.OldUsed, h.OldMax = p.Used, p.Max
		}
	}
	longs := map[string]int64{}
	names := map[string]string{}
	for _, e := range snap.Entries {
		switch {
		case e.Type == hsperf.TypeLong:
			longs[e.Name] = e.Long
		case strings.HasSuffix(e.Name, ".name"):
			names[e.Name] = e.String
		}
	}
	freq, ticks := longs["sun.os.hrt.frequency"], longs["sun.os.hrt.ticks"]
	if freq <= 0 || ticks <= 0 {
		return h
	}
	seconds := func(t int64) time.Duration { return time.Duration(float64(t) / float64(freq) * float64(time.Second)) }
	h.FullGCAgo, h.HasFullGC = lastFullGC(longs, names, ticks, seconds)
	var gc float64
	for _, g := range stats.GCs {
		gc += g.Seconds
	}
	m := marks[0]
	if m.liveShare < jvmend.HeapFullShare && fullRead.ticks > 0 {
		m = fullRead
	}
	if m.ticks > 0 && m.ticks <= ticks && m.liveShare > 0 {
		h.LiveShare, h.LiveAgo, h.LiveAfterFull = m.liveShare, seconds(ticks-m.ticks), m.afterFull
		if n := fullCollections(&stats); n > m.fullGCs {
			h.FullGCsSince = n - m.fullGCs
		}
	}
	// The newest mark, or the one before when the newest is too recent.
	for _, m := range marks {
		if m.ticks <= 0 || m.ticks >= ticks {
			continue
		}
		window := seconds(ticks - m.ticks)
		h.GCWindow, h.GCShare = window, (gc-m.gcSeconds)/window.Seconds()
		if window >= jvmend.MinGCWindow {
			break
		}
	}
	return h
}

// lastFullGC is how long before ticks the last full collection ended, by
// the collectors' counters; ok is false when none ran.
func lastFullGC(longs map[string]int64, names map[string]string, ticks int64, seconds func(int64) time.Duration) (ago time.Duration, ok bool) {
	for i := 0; ; i++ {
		prefix := "sun.gc.collector." + strconv.Itoa(i) + "."
		name, found := names[prefix+"name"]
		if !found {
			return ago, ok
		}
		exit := longs[prefix+"lastExitTime"]
		if !isFullCollector(name) || longs[prefix+"invocations"] == 0 || exit <= 0 || exit > ticks {
			continue
		}
		if a := seconds(ticks - exit); !ok || a < ago {
			ago, ok = a, true
		}
	}
}

// isFullCollector tells the collectors that collect the whole heap, by
// their hsperfdata names: "… full collection pauses" and "Shenandoah full"
// (JDK 17 and later), the old-generation collectors before that.
func isFullCollector(name string) bool {
	switch name {
	case "MarkSweepCompact", "PSMarkSweep", "PSParallelCompact", "G1 stop-the-world full collections":
		return true
	}
	return strings.Contains(strings.ToLower(name), "full")
}

// lastCollectionFull reports whether the JVM's last collection was a full
// one: nothing has been collected or promoted since, so the heap holds what
// that collection left, plus what was allocated since.
func lastCollectionFull(s *hsperf.Stats) bool {
	var full, other int64
	for _, g := range s.GCs {
		if isFullCollector(g.Name) {
			full = max(full, g.LastEnded)
		} else {
			other = max(other, g.LastEnded)
		}
	}
	return full > 0 && full >= other
}

// liveShare is how full a read found the heap: the larger of its live
// data over its max and its old generation over its own max.
func liveShare(stats *hsperf.Stats, live uint64) float64 {
	share := oldShare(stats)
	if stats.HeapMax > 0 {
		share = max(share, float64(live)/float64(stats.HeapMax))
	}
	return share
}

// isOldPool tells the old generation's pool by its name: G1 Old Gen, PS
// Old Gen, Tenured Gen, CMS Old Gen, ZGC Old Generation.
func isOldPool(name string) bool {
	return strings.Contains(name, "Old Gen") || strings.Contains(name, "Tenured")
}
