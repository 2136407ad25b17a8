package jvm

import (
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
)

const mib = 1 << 20

// reading is a JVM in a container with a limit, read at the given time,
// long past its start-up.
func reading(at time.Time, usage, limit uint64) *JVM {
	return &JVM{
		Sample:       Sample{Time: at, CgroupUsage: usage, CgroupLimit: limit, HeapMax: 1 << 30, HeapUsed: 100 * mib},
		ProcessStart: at.Add(-time.Hour),
	}
}

func TestIntervalFollowsRisk(t *testing.T) {
	cfg := DefaultSampling.normalized()
	t0 := time.Unix(1_800_000_000, 0)
	const limit = 4096 * mib
	for _, tc := range []struct {
		name      string
		prev, cur *JVM
		want      time.Duration
	}{
		// 2496 MiB of headroom at 64 MiB/s: 39 s, sampled twice in it.
		{"idle far from its limit: sized by the headroom", reading(t0, 1600*mib, limit), reading(t0.Add(30*time.Second), 1600*mib, limit), 19500 * time.Millisecond},
		{"first reading far from its limit", nil, reading(t0, 1600*mib, limit), 19500 * time.Millisecond},
		{"a large limit, far from it", nil, reading(t0, 1600*mib, 16*limit), 30 * time.Second},
		{"above 75 %", nil, reading(t0, 3200*mib, limit), 5 * time.Second},
		{"above 90 %", nil, reading(t0, 3800*mib, limit), time.Second},
		{"usage above the limit (v1 counts a little over)", nil, reading(t0, limit+mib, limit), time.Second},
		{"near", nil, reading(t0, 3600*mib, limit), 3875 * time.Millisecond},
		{"small: not below Fastest", nil, reading(t0, 400*mib, 512*mib), time.Second},
		// 64 MiB/s for 10 s, 1536 MiB left: 24 s to the limit.
		{"growing", reading(t0, 1920*mib, limit), reading(t0.Add(10*time.Second), 2560*mib, limit), 12 * time.Second},
		{"growing fast", reading(t0, 1000*mib, limit), reading(t0.Add(time.Second), 2560*mib, limit), time.Second},
		// 2176 MiB of headroom: 17 s.
		{"shrinking", reading(t0, 2560*mib, limit), reading(t0.Add(10*time.Second), 1920*mib, limit), 17 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cfg.interval(tc.prev, tc.cur); got != tc.want {
				t.Errorf("interval = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIntervalWithoutALimit(t *testing.T) {
	cfg := DefaultSampling.normalized()
	t0 := time.Unix(1_800_000_000, 0)
	prev, cur := reading(t0, 0, 0), reading(t0.Add(30*time.Second), 0, 0)
	prev.RSSJVM, cur.RSSJVM = 1000*mib, 1010*mib
	if got := cfg.interval(prev, cur); got != 30*time.Second {
		t.Errorf("steady, no limit: %v, want 30s", got)
	}
	cur.RSSPython = 64 * mib // a PySpark worker grew
	if got := cfg.interval(prev, cur); got != 5*time.Second {
		t.Errorf("tree grew by 74 MiB, no limit: %v, want 5s", got)
	}
}

func TestIntervalHeapAndCollections(t *testing.T) {
	cfg := DefaultSampling.normalized()
	t0 := time.Unix(1_800_000_000, 0)
	prev, cur := reading(t0, 0, 0), reading(t0.Add(30*time.Second), 0, 0)
	cur.HeapUsed = 950 * mib
	if got := cfg.interval(prev, cur); got != 5*time.Second {
		t.Errorf("heap 95 %% full: %v, want 5s", got)
	}
	cur.HeapUsed = 100 * mib
	cur.Stats.Pools = []hsperf.Pool{{Name: "G1 Eden Space", Used: 50 * mib, Max: 1 << 30}, {Name: "G1 Old Gen", Used: 800 * mib, Max: 1 << 30}}
	if got := cfg.interval(prev, cur); got != 5*time.Second {
		t.Errorf("old generation 78 %% full: %v, want 5s", got)
	}
	cur.Stats.Pools[1].Used = 400 * mib
	if got := cfg.interval(prev, cur); got != 30*time.Second {
		t.Errorf("old generation 39 %% full: %v, want 30s", got)
	}
	prev.Stats.GCs = []hsperf.GC{{Name: "G1 young collections", Collections: 10}, {Name: "G1 stop-the-world full collections", Collections: 1}}
	cur.Stats.GCs = []hsperf.GC{{Name: "G1 young collections", Collections: 20}, {Name: "G1 stop-the-world full collections", Collections: 1}}
	if got := cfg.interval(prev, cur); got != 30*time.Second {
		t.Errorf("young collections only: %v, want 30s", got)
	}
	cur.Stats.GCs[1].Collections = 2
	if got := cfg.interval(prev, cur); got != 5*time.Second {
		t.Errorf("after a full collection: %v, want 5s", got)
	}
	young := reading(t0, 0, 0)
	young.ProcessStart = t0.Add(-10 * time.Second)
	if got := cfg.interval(nil, young); got != 5*time.Second {
		t.Errorf("starting: %v, want 5s", got)
	}
}

// A small --jvm.sample-interval caps every interval: every JVM is then
// read at least that often.
func TestSamplingNormalized(t *testing.T) {
	c := SamplingConfig{Slowest: 500 * time.Millisecond, AtRisk: 5 * time.Second, Fastest: time.Second, Discovery: 5 * time.Second}.normalized()
	if c.AtRisk != 500*time.Millisecond || c.Fastest != 500*time.Millisecond || c.Discovery != 500*time.Millisecond {
		t.Errorf("normalized: %+v, want everything at 500ms", c)
	}
	if c := (SamplingConfig{}).normalized(); c != (SamplingConfig{}) {
		t.Errorf("off: %+v", c)
	}
	if got := c.interval(nil, reading(time.Now(), 0, 0)); got != 500*time.Millisecond {
		t.Errorf("interval = %v, want 500ms", got)
	}
}

func TestScheduleDue(t *testing.T) {
	s := newSchedule(newRecords())
	t0 := time.Unix(1_800_000_000, 0)
	start := t0.Add(-time.Hour)
	if !s.due(1, start, t0) {
		t.Error("a JVM never read is not due")
	}
	s.plan(1, start, t0.Add(30*time.Second), false)
	s.plan(2, start, t0.Add(10*time.Second), true)
	s.plan(3, start, t0.Add(5*time.Second), false)
	if s.due(1, start, t0.Add(29*time.Second)) || !s.due(1, start, t0.Add(30*time.Second)) {
		t.Error("due before or not at its time")
	}
	if !s.due(1, start.Add(time.Minute), t0) {
		t.Error("a reused pid is not due at once")
	}
	if got, ok := s.earliest(); !ok || !got.Equal(t0.Add(10*time.Second)) {
		t.Errorf("earliest = %v, want the JVM due sooner than discovery", got)
	}
	s.keep(func(pid int) bool { return pid == 2 })
	if !s.due(1, start, t0) || !s.due(3, start, t0) || s.due(2, start, t0) {
		t.Error("keep: the plans of the JVMs not kept stand, or the one kept is gone")
	}
}

// Due times move back onto the grid of their interval, never later, and
// discovery scans stay on theirs: JVMs read as often are read together.
func TestScheduleGrid(t *testing.T) {
	s := newSchedule(newRecords())
	e := s.epoch
	for _, tc := range []struct {
		at, step, want time.Duration
	}{
		{47 * time.Second, 30 * time.Second, 30 * time.Second},
		{30 * time.Second, 30 * time.Second, 30 * time.Second},
		{59999 * time.Millisecond, 30 * time.Second, 30 * time.Second},
		{7 * time.Second, 5 * time.Second, 5 * time.Second},
		{3 * time.Second, 0, 3 * time.Second},
	} {
		if got := s.aligned(e.Add(tc.at), tc.step).Sub(e); got != tc.want {
			t.Errorf("aligned(epoch+%v, %v) = epoch+%v, want epoch+%v", tc.at, tc.step, got, tc.want)
		}
	}
	if before := e.Add(-time.Second); !s.aligned(before, 30*time.Second).Equal(before) {
		t.Error("a time before the epoch moved")
	}
	for _, tc := range []struct{ now, want time.Duration }{
		{7 * time.Second, 10 * time.Second},
		{10 * time.Second, 15 * time.Second},
		{0, 5 * time.Second},
	} {
		if got := s.nextScan(e.Add(tc.now), 5*time.Second).Sub(e); got != tc.want {
			t.Errorf("nextScan(epoch+%v) = epoch+%v, want epoch+%v", tc.now, got, tc.want)
		}
	}
}

// Under YARN without a cgroup limit the container's allocation is the
// budget, and the process tree's resident memory what fills it: the
// same risk rules, and the NodeManager polled often near it.
func TestIntervalOfAYARNContainer(t *testing.T) {
	cfg := DefaultSampling.normalized()
	t0 := time.Unix(1_800_000_000, 0)
	yarn := func(rss, allocation uint64) *JVM {
		j := reading(t0, 0, 0)
		j.RSSJVM, j.Allocation, j.YARNContainer = rss, allocation, "container_1700000000000_0042_01_000002"
		return j
	}
	for _, tc := range []struct {
		name string
		cur  *JVM
		want time.Duration
		near bool
	}{
		{"above 90 % of its allocation", yarn(3800*mib, 4096*mib), time.Second, true},
		{"above 75 %", yarn(3200*mib, 4096*mib), 5 * time.Second, true},
		{"far from it: the headroom", yarn(1600*mib, 4096*mib), 19500 * time.Millisecond, false},
		{"no allocation known", yarn(3800*mib, 0), 30 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cfg.interval(nil, tc.cur)
			if got != tc.want {
				t.Errorf("interval = %v, want %v", got, tc.want)
			}
			if near := nearAllocation(tc.cur, got, cfg); near != tc.near {
				t.Errorf("nearAllocation = %v, want %v", near, tc.near)
			}
		})
	}
	// A cgroup limit, where there is one, is the budget.
	limited := yarn(3800*mib, 4096*mib)
	limited.CgroupLimit, limited.CgroupUsage = 8192*mib, 1000*mib
	if limit, used := limited.Budget(); limit != 8192*mib || used != 1000*mib {
		t.Errorf("Budget with a cgroup limit = %d, %d", limit, used)
	}
	if nearAllocation(limited, time.Second, cfg) {
		t.Error("a JVM with a cgroup limit hurries the NodeManager")
	}
}
