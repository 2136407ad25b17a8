package oom

import (
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

const mib = 1 << 20

func TestJudge(t *testing.T) {
	memcg := Kill{PID: 1, Constraint: ConstraintMemcg}
	// A memcg kill whose limit was oom's, of a victim in task.
	memcgAt := func(oom, task string) Kill {
		return Kill{PID: 1, Constraint: ConstraintMemcg, OOMMemcg: oom, TaskMemcg: task}
	}
	// Off-heap memory filled the container: native, if the container's limit was hit.
	offHeapFull := Victim{HeapUsed: 10 * mib, HeapCommitted: 40 * mib, HeapMax: 64 * mib, CgroupUsage: 240 * mib, CgroupLimit: 256 * mib}
	for _, tc := range []struct {
		name   string
		kill   Kill
		sample Victim
		found  bool
		want   string
	}{
		{
			name: "global OOM is node whatever the sample says",
			kill: Kill{Constraint: ConstraintNone}, found: true,
			sample: Victim{HeapUsed: 990 * mib, HeapCommitted: 1000 * mib, HeapMax: 1000 * mib, CgroupUsage: 1100 * mib},
			want:   CauseNode,
		},
		{name: "cpuset OOM is node", kill: Kill{Constraint: ConstraintCpuset}, want: CauseNode},
		{
			name: "memcg OOM of the group above the container is node", found: true,
			kill:   memcgAt("/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-a.scope"),
			sample: Victim{HeapUsed: 990 * mib, HeapCommitted: 1000 * mib, HeapMax: 1000 * mib, CgroupUsage: 1100 * mib, CgroupLimit: 2000 * mib},
			want:   CauseNode,
		},
		{
			// A real kubelet's (cgroupfs driver, cgroup v1) pod of one
			// container: the pod's cgroup, limited to the container's
			// limit, also holds the sandbox, and is the one that runs out.
			name: "memcg OOM of the victim's pod's own cgroup is the container's", found: true,
			kill:   memcgAt("/node/kubepods/burstable/pod1186e7b8-3cf1-43ef-82c4-8e20a839fe2c", "/node/kubepods/burstable/pod1186e7b8-3cf1-43ef-82c4-8e20a839fe2c/"+strings.Repeat("ab", 32)),
			sample: offHeapFull, want: CauseNative,
		},
		{
			name: "memcg OOM of the victim's pod's own slice is the container's", found: true,
			kill:   memcgAt("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1186e7b8_3cf1_43ef_82c4_8e20a839fe2c.slice", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1186e7b8_3cf1_43ef_82c4_8e20a839fe2c.slice/cri-containerd-"+strings.Repeat("ab", 32)+".scope"),
			sample: offHeapFull, want: CauseNative,
		},
		{
			name: "memcg OOM of the QoS class's cgroup is node", found: true,
			kill:   memcgAt("/node/kubepods/burstable", "/node/kubepods/burstable/pod1186e7b8-3cf1-43ef-82c4-8e20a839fe2c/"+strings.Repeat("ab", 32)),
			sample: offHeapFull, want: CauseNode,
		},
		{name: "memcg OOM of the root group is node", kill: memcgAt("/", "/yarn/container_1"), found: true, sample: offHeapFull, want: CauseNode},
		// A sibling whose name the victim's extends is not above it.
		{name: "memcg OOM of a sibling named like a prefix is not above the container", kill: memcgAt("/yarn/container_1", "/yarn/container_12"), found: true, sample: offHeapFull, want: CauseNative},
		{name: "memcg OOM of the container itself", kill: memcgAt("/yarn/container_1", "/yarn/container_1"), found: true, sample: offHeapFull, want: CauseNative},
		{name: "mempolicy OOM is node", kill: Kill{Constraint: ConstraintMemoryPolicy}, want: CauseNode},
		{name: "untracked victim", kill: memcg, want: CauseUnknown},
		{name: "sample without figures", kill: memcg, found: true, sample: Victim{HeapMax: 64 * mib}, want: CauseUnknown},
		{
			// The e2e native case: -Xmx64m, direct buffers fill a 256 MiB cgroup.
			name: "direct buffers fill the container", kill: memcg, found: true,
			sample: Victim{HeapUsed: 10 * mib, HeapCommitted: 40 * mib, HeapMax: 64 * mib, NonHeapCommitted: 30 * mib, CgroupLimit: 256 * mib, CgroupUsage: 240 * mib},
			want:   CauseNative,
		},
		{
			name: "PySpark worker fills the container", kill: memcg, found: true,
			sample: Victim{HeapUsed: 900 * mib, HeapCommitted: 1024 * mib, HeapMax: 2048 * mib, RSSJVM: 1200 * mib, RSSPython: 2500 * mib, CgroupLimit: 4096 * mib, CgroupUsage: 3900 * mib},
			want:   CauseNative,
		},
		{
			// The e2e heap case: -Xmx1g in a 256 MiB cgroup, the heap grows.
			name: "Xmx above the container limit", kill: memcg, found: true,
			sample: Victim{HeapUsed: 180 * mib, HeapCommitted: 200 * mib, HeapMax: 1024 * mib, CgroupLimit: 256 * mib, CgroupUsage: 240 * mib},
			want:   CauseHeap,
		},
		{
			name: "heap near max and the bulk", kill: memcg, found: true,
			sample: Victim{HeapUsed: 3700 * mib, HeapCommitted: 4096 * mib, HeapMax: 4096 * mib, CgroupLimit: 4300 * mib, CgroupUsage: 4250 * mib},
			want:   CauseHeap,
		},
		{
			// Spark's usual sizing: heap 4g, overhead 10 %. The heap is the
			// bulk but fits; native memory grew past the overhead.
			name: "heap the bulk but fits, native grew", kill: memcg, found: true,
			sample: Victim{HeapUsed: 2000 * mib, HeapCommitted: 4096 * mib, HeapMax: 4096 * mib, CgroupLimit: 4505 * mib, CgroupUsage: 4400 * mib},
			want:   CauseNative,
		},
		{
			name: "exactly half is the bulk", kill: memcg, found: true,
			sample: Victim{HeapUsed: 10 * mib, HeapCommitted: 100 * mib, HeapMax: 1000 * mib, CgroupLimit: 200 * mib, CgroupUsage: 200 * mib},
			want:   CauseHeap,
		},
		{
			name: "just under half is not", kill: memcg, found: true,
			sample: Victim{HeapUsed: 10 * mib, HeapCommitted: 99 * mib, HeapMax: 1000 * mib, CgroupLimit: 200 * mib, CgroupUsage: 200 * mib},
			want:   CauseNative,
		},
		{
			name: "no cgroup figures: resident memory instead", kill: Kill{Constraint: ConstraintMemcg}, found: true,
			sample: Victim{HeapUsed: 10 * mib, HeapCommitted: 50 * mib, HeapMax: 64 * mib, RSSJVM: 300 * mib},
			want:   CauseNative,
		},
		{
			name: "no constraint known (4.x killed line alone) is judged like a memcg kill", kill: Kill{}, found: true,
			sample: Victim{HeapUsed: 600 * mib, HeapCommitted: 640 * mib, HeapMax: 640 * mib, RSSJVM: 700 * mib},
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
			// Advice names what to change when the container's memory
			// was misjudged; a node OOM or an unknown victim has none.
			if wantAdvice := v.Cause == CauseHeap || v.Cause == CauseNative; (v.Advice != "") != wantAdvice || strings.Contains(v.Reason, "spark.") {
				t.Errorf("cause %s: reason %q, advice %q; want the setting to change in the advice only, and for heap and native only", v.Cause, v.Reason, v.Advice)
			}
		})
	}
}

// The thresholds are policy: each is pinned by a case exactly at it and
// one just on the other side, so a changed share or comparison fails.
func TestJudgeThresholdBoundaries(t *testing.T) {
	memcg := Kill{PID: 1, Constraint: ConstraintMemcg}
	// The heap is the bulk of usage and its max fits in the limit beside
	// the rest, so only "near max" decides between heap and native.
	nearMax := func(used uint64) Victim {
		return Victim{HeapUsed: used, HeapCommitted: 1000 * mib, HeapMax: 1000 * mib, CgroupLimit: 2000 * mib, CgroupUsage: 1200 * mib}
	}
	// Used heap far from max, max far below the limit: only "the bulk"
	// decides, and the heap is not judged the cause unless it is too big.
	bulk := func(committed uint64) Victim {
		return Victim{HeapUsed: committed, HeapCommitted: committed, HeapMax: 4000 * mib, CgroupLimit: 1000 * mib, CgroupUsage: 1000 * mib}
	}
	for _, tc := range []struct {
		name string
		v    Victim
		want string
	}{
		{"heap used exactly at the near-max share", nearMax(900 * mib), CauseHeap},
		{"heap used just below the near-max share", nearMax(900*mib - 1), CauseNative},
		{"heap used just above half of max is not near it", nearMax(501 * mib), CauseNative},
		{"committed heap exactly at the bulk share", bulk(500 * mib), CauseHeap},
		{"committed heap just below the bulk share", bulk(500*mib - 1), CauseNative},
		{"heap max exactly fills the limit beside non-heap", Victim{HeapUsed: 100 * mib, HeapCommitted: 600 * mib, HeapMax: 800 * mib, CgroupLimit: 1000 * mib, CgroupUsage: 800 * mib}, CauseNative},
		{"heap max one byte over the limit beside non-heap", Victim{HeapUsed: 100 * mib, HeapCommitted: 600 * mib, HeapMax: 800*mib + 1, CgroupLimit: 1000 * mib, CgroupUsage: 800 * mib}, CauseHeap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v := Judge(memcg, tc.v, true); v.Cause != tc.want {
				t.Errorf("Judge = %q (%s), want %q", v.Cause, v.Reason, tc.want)
			}
		})
	}
}

// A native verdict names what grew and gives that region's advice; a heap
// verdict names none.
func TestJudgeNamesRegion(t *testing.T) {
	memcg := Kill{PID: 1, Constraint: ConstraintMemcg}
	native := Victim{HeapUsed: 10 * mib, HeapCommitted: 40 * mib, HeapMax: 64 * mib, RSSJVM: 230 * mib, CgroupLimit: 256 * mib, CgroupUsage: 240 * mib}
	grew := func(v Victim, region string, bytes uint64) Victim {
		v.Growth = nativemem.Growth{Region: region, Bytes: bytes, Total: int64(bytes)}
		return v
	}
	for _, tc := range []struct {
		name       string
		sample     Victim
		wantCause  string
		wantRegion string
		wantAdvice string
	}{
		{"direct buffers above the mmap threshold", grew(native, "native_mmap", 180*mib), CauseNative, "native_mmap", "MaxDirectMemorySize"},
		{"arenas", grew(native, "malloc", 150*mib), CauseNative, "malloc", "MALLOC_ARENA_MAX"},
		{"threads", grew(native, "thread_stacks", 90*mib), CauseNative, "thread_stacks", "thread dump"},
		{"classes", grew(native, "metaspace", 140*mib), CauseNative, "metaspace", "MaxMetaspaceSize"},
		{"tmpfs", grew(native, nativemem.Shmem, 200*mib), CauseNative, "shmem", "tmpfs"},
		{"no breakdown", native, CauseNative, "", "memoryOverhead"},
		{
			"python holds more than the region grew",
			func() Victim { v := grew(native, "malloc", 40*mib); v.RSSPython = 120 * mib; return v }(),
			CauseNative, RegionPython, "pyspark.memory",
		},
		{
			// Just under a quarter of what is not heap (200 MiB): not named without a breakdown.
			"small python without a breakdown",
			func() Victim { v := native; v.RSSPython = 49 * mib; return v }(),
			CauseNative, "", "memoryOverhead",
		},
		{
			"heap kill names no region",
			grew(Victim{HeapUsed: 240 * mib, HeapCommitted: 250 * mib, HeapMax: 256 * mib, CgroupLimit: 300 * mib, CgroupUsage: 295 * mib}, "malloc", 10*mib),
			CauseHeap, "", "spark.executor.memoryOverhead by",
		},
	} {
		v := Judge(memcg, tc.sample, true)
		if v.Cause != tc.wantCause || v.Region != tc.wantRegion || !strings.Contains(v.Advice, tc.wantAdvice) {
			t.Errorf("%s: got cause %q region %q advice %q; want %q, %q, advice with %q", tc.name, v.Cause, v.Region, v.Advice, tc.wantCause, tc.wantRegion, tc.wantAdvice)
		}
		if tc.wantRegion != "" && tc.wantRegion != RegionPython && !strings.Contains(v.Reason, tc.wantRegion+" grew") {
			t.Errorf("%s: reason %q does not say what grew", tc.name, v.Reason)
		}
	}
}
