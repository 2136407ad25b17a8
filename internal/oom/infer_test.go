package oom

import (
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// TestInferRegion: a native kill that no breakdown saw grow names its
// region by elimination, each piece of evidence at its threshold: tmpfs
// pages from the kernel's report, metaspace from hsperfdata against the
// breakdown, threads from the kernel stacks (v2) or kmem (v1), and what
// is left, anonymous memory, as direct_or_malloc.
func TestInferRegion(t *testing.T) {
	base := nativemem.Reading{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), HasShmem: true, Shmem: 2 * mib}
	base.Regions[nativemem.Heap] = 40 * mib
	base.Regions[nativemem.Metaspace] = 30 * mib
	base.Regions[nativemem.ThreadStacks] = 4 * mib
	base.Regions[nativemem.SharedLibraries] = 30 * mib
	// -Xmx64m in 256 MiB: the heap far from the bulk, a native kill.
	victim := func(metaCommitted uint64) Victim {
		return Victim{HeapUsed: 10 * mib, HeapCommitted: 40 * mib, HeapMax: 64 * mib, NonHeapCommitted: metaCommitted,
			RSSJVM: 104 * mib, CgroupLimit: 256 * mib, CgroupUsage: 250 * mib, Breakdown: base, HasBreakdown: true}
	}
	// The kill: the JVM held anon KiB, the report the rest.
	kill := func(anonMiB uint64, r Report) Kill {
		r.Known = true
		return Kill{PID: 1, Constraint: ConstraintMemcg, AnonRSSKiB: anonMiB << 10, FileRSSKiB: 20 << 10, Report: r}
	}
	for _, tc := range []struct {
		name   string
		kill   Kill
		victim Victim
		want   string
		from   string // in the detail
	}{
		{"direct buffers: anonymous growth, nothing else", kill(230, Report{Kmem: 2 * mib}), victim(31 * mib), RegionDirectOrMalloc, "none of it metaspace"},
		{"growth of 8 MiB is named", kill(92, Report{}), victim(30 * mib), RegionDirectOrMalloc, "8 MiB more"},
		{"growth under 8 MiB is not", kill(91, Report{}), victim(30 * mib), "", ""},
		// The JVM held 120 MiB, 16 more than the breakdown's 104.
		{"metaspace 8 MiB over the breakdown, half the growth", kill(100, Report{}), victim(38 * mib), "metaspace", "metaspace committed 38 MiB against 30 MiB"},
		{"metaspace a third of the growth", kill(108, Report{}), victim(38 * mib), "metaspace", ""},
		{"metaspace just under 8 MiB over it", kill(100, Report{}), victim(38*mib - 1), RegionDirectOrMalloc, ""},
		{"metaspace under a third of the growth", kill(109, Report{}), victim(38 * mib), RegionDirectOrMalloc, ""},
		{"tmpfs pages 8 MiB over the base", kill(90, Report{Shmem: 10 * mib}), victim(30 * mib), nativemem.Shmem, "(shmem) 10 MiB, 8 MiB more"},
		{"tmpfs pages just under", kill(90, Report{Shmem: 10*mib - 1}), victim(30 * mib), "", ""},
		{"tmpfs outgrowing metaspace", kill(90, Report{Shmem: 100 * mib}), victim(60 * mib), nativemem.Shmem, ""},
		{"metaspace outgrowing tmpfs", kill(90, Report{Shmem: 20 * mib}), victim(60 * mib), "metaspace", ""},
		{"threads: v2 kernel stacks", kill(230, Report{KernelStack: 8 * mib}), victim(30 * mib), "thread_stacks", "512 threads"},
		{"threads: v2 kernel stacks just under", kill(230, Report{KernelStack: 8*mib - 1}), victim(30 * mib), RegionDirectOrMalloc, ""},
		{"threads: v1 kmem", kill(230, Report{Kmem: 16 * mib}), victim(30 * mib), "thread_stacks", "kmem"},
		{"threads: v1 kmem just under", kill(230, Report{Kmem: 16*mib - 1}), victim(30 * mib), RegionDirectOrMalloc, ""},
		{
			"no breakdown: growth over the last sample's resident memory, metaspace unknown",
			kill(230, Report{}), Victim{HeapCommitted: 40 * mib, HeapMax: 64 * mib, NonHeapCommitted: 90 * mib, RSSJVM: 104 * mib, CgroupUsage: 250 * mib},
			RegionDirectOrMalloc, "the JVM had no breakdown",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			region, detail := inferRegion(tc.kill, tc.victim)
			if region != tc.want {
				t.Fatalf("region %q (%s), want %q", region, detail, tc.want)
			}
			if region != "" && !strings.Contains(detail, "inferred by elimination") {
				t.Errorf("detail %q does not say it was inferred", detail)
			}
			if !strings.Contains(detail, tc.from) {
				t.Errorf("detail %q does not say %q", detail, tc.from)
			}
		})
	}
}

// TestJudgeInfersOnlyWhatNoBreakdownSaw: a breakdown that saw a region
// grow by InferMinBytes names it; one that saw less leaves the region to
// the inference, whose detail and advice the verdict carries.
func TestJudgeInfersOnlyWhatNoBreakdownSaw(t *testing.T) {
	base := nativemem.Reading{Time: time.Unix(0, 0)}
	base.Regions[nativemem.Metaspace] = 30 * mib
	k := Kill{PID: 1, Constraint: ConstraintMemcg, AnonRSSKiB: 230 << 10, Report: Report{Known: true}}
	s := Victim{HeapUsed: 10 * mib, HeapCommitted: 40 * mib, HeapMax: 64 * mib, NonHeapCommitted: 30 * mib, RSSJVM: 100 * mib,
		CgroupLimit: 256 * mib, CgroupUsage: 250 * mib, Breakdown: base, HasBreakdown: true}

	s.Growth = nativemem.Growth{Region: "malloc", Bytes: InferMinBytes, Since: time.Unix(0, 0)}
	if v := Judge(k, s, true); v.Region != "malloc" || strings.Contains(v.Reason, "inferred") {
		t.Errorf("a breakdown that saw malloc grow 8 MiB: region %q, reason %q", v.Region, v.Reason)
	}
	s.Growth.Bytes = InferMinBytes - 1
	v := Judge(k, s, true)
	if v.Region != RegionDirectOrMalloc || !strings.Contains(v.Reason, "inferred by elimination") || !strings.Contains(v.Advice, "MaxDirectMemorySize") {
		t.Errorf("a breakdown that saw malloc grow under 8 MiB: region %q, reason %q, advice %q", v.Region, v.Reason, v.Advice)
	}
}
