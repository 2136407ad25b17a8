package oom

import (
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

const mib = 1 << 20

func TestJudge(t *testing.T) {
	memcg := Kill{PID: 1, Constraint: ConstraintMemcg}
	for _, tc := range []struct {
		name   string
		kill   Kill
		sample jvm.Sample
		found  bool
		want   string
	}{
		{
			name: "global OOM is node whatever the sample says",
			kill: Kill{Constraint: ConstraintNone}, found: true,
			sample: jvm.Sample{HeapUsed: 990 * mib, HeapCommitted: 1000 * mib, HeapMax: 1000 * mib, CgroupUsage: 1100 * mib},
			want:   CauseNode,
		},
		{name: "cpuset OOM is node", kill: Kill{Constraint: ConstraintCpuset}, want: CauseNode},
		{name: "mempolicy OOM is node", kill: Kill{Constraint: ConstraintMemoryPolicy}, want: CauseNode},
		{name: "untracked victim", kill: memcg, want: CauseUnknown},
		{name: "sample without figures", kill: memcg, found: true, sample: jvm.Sample{HeapMax: 64 * mib}, want: CauseUnknown},
		{
			// The e2e native case: -Xmx64m, direct buffers fill a 256 MiB cgroup.
			name: "direct buffers fill the container", kill: memcg, found: true,
			sample: jvm.Sample{HeapUsed: 10 * mib, HeapCommitted: 40 * mib, HeapMax: 64 * mib, NonHeapCommitted: 30 * mib, CgroupLimit: 256 * mib, CgroupUsage: 240 * mib},
			want:   CauseNative,
		},
		{
			name: "PySpark worker fills the container", kill: memcg, found: true,
			sample: jvm.Sample{HeapUsed: 900 * mib, HeapCommitted: 1024 * mib, HeapMax: 2048 * mib, RSSJVM: 1200 * mib, RSSPython: 2500 * mib, CgroupLimit: 4096 * mib, CgroupUsage: 3900 * mib},
			want:   CauseNative,
		},
		{
			// The e2e heap case: -Xmx1g in a 256 MiB cgroup, the heap grows.
			name: "Xmx above the container limit", kill: memcg, found: true,
			sample: jvm.Sample{HeapUsed: 180 * mib, HeapCommitted: 200 * mib, HeapMax: 1024 * mib, CgroupLimit: 256 * mib, CgroupUsage: 240 * mib},
			want:   CauseHeap,
		},
		{
			name: "heap near max and the bulk", kill: memcg, found: true,
			sample: jvm.Sample{HeapUsed: 3700 * mib, HeapCommitted: 4096 * mib, HeapMax: 4096 * mib, CgroupLimit: 4300 * mib, CgroupUsage: 4250 * mib},
			want:   CauseHeap,
		},
		{
			// Spark's usual sizing: heap 4g, overhead 10 %. The heap is the
			// bulk but fits; native memory grew past the overhead.
			name: "heap the bulk but fits, native grew", kill: memcg, found: true,
			sample: jvm.Sample{HeapUsed: 2000 * mib, HeapCommitted: 4096 * mib, HeapMax: 4096 * mib, CgroupLimit: 4505 * mib, CgroupUsage: 4400 * mib},
			want:   CauseNative,
		},
		{
			name: "exactly half is the bulk", kill: memcg, found: true,
			sample: jvm.Sample{HeapUsed: 10 * mib, HeapCommitted: 100 * mib, HeapMax: 1000 * mib, CgroupLimit: 200 * mib, CgroupUsage: 200 * mib},
			want:   CauseHeap,
		},
		{
			name: "just under half is not", kill: memcg, found: true,
			sample: jvm.Sample{HeapUsed: 10 * mib, HeapCommitted: 99 * mib, HeapMax: 1000 * mib, CgroupLimit: 200 * mib, CgroupUsage: 200 * mib},
			want:   CauseNative,
		},
		{
			name: "no cgroup figures: resident memory instead", kill: Kill{Constraint: ConstraintMemcg}, found: true,
			sample: jvm.Sample{HeapUsed: 10 * mib, HeapCommitted: 50 * mib, HeapMax: 64 * mib, RSSJVM: 300 * mib},
			want:   CauseNative,
		},
		{
			name: "no constraint known (4.x killed line alone) is judged like a memcg kill", kill: Kill{}, found: true,
			sample: jvm.Sample{HeapUsed: 600 * mib, HeapCommitted: 640 * mib, HeapMax: 640 * mib, RSSJVM: 700 * mib},
			want:   CauseHeap,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.kill, tc.sample, tc.found)
			if v.Cause != tc.want {
				t.Errorf("Judge = %q (%s), want %q", v.Cause, v.Reason, tc.want)
			}
			if v.Reason == "" {
				t.Error("no reason given")
			}
		})
	}
}
