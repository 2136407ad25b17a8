package oom

import "testing"

func TestRaised(t *testing.T) {
	const m = 1 << 20
	for _, tc := range []struct {
		current, need, want uint64
	}{
		{384 * m, 0, 640 * m},          // +256 MiB is more than x1.2
		{2048 * m, 0, 2496 * m},        // x1.2 (2457.6) is more, rounded up to 64 MiB
		{512 * m, 900 * m, 960 * m},    // the peak needs more than the bump
		{0, 100 * m, 256 * m},          // unknown setting: the bump alone
		{4096 * m, 4096 * m, 4928 * m}, // x1.2 = 4915.2, rounded up
	} {
		if got := raised(tc.current, tc.need); got != tc.want {
			t.Errorf("raised(%d MiB, %d MiB) = %d MiB, want %d MiB", tc.current/m, tc.need/m, got/m, tc.want/m)
		}
	}
}

func TestSizingAdvice(t *testing.T) {
	const m = 1 << 20
	executor := Victim{HeapMax: 2048 * m, CgroupLimit: 2560 * m, PeakHeapLive: 1900 * m, PeakNonHeap: 450 * m, RSSPython: 300 * m}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"overhead: the bump is more than the peak with its margin", executor.overheadAdvice(400 * m),
			"raise spark.executor.memoryOverhead by 256 MiB to 768 MiB"},
		{"overhead without a limit", Victim{HeapMax: 2048 * m, PeakNonHeap: 450 * m}.overheadAdvice(0),
			"set spark.executor.memoryOverhead to 576 MiB at least"},
		{"python", executor.pythonAdvice(),
			"set spark.executor.pyspark.memory to 576 MiB at least (or raise spark.executor.memoryOverhead by as much), or use less memory in Python UDFs"},
		{"heap max does not fit beside the non-heap", executor.tooBigAdvice(700 * m),
			"lower spark.executor.memory (-Xmx) to 1856 MiB, or raise the container limit by 192 MiB"},
		{"heap max does not fit, limit unknown", Victim{HeapMax: 2048 * m}.tooBigAdvice(700 * m),
			"lower -Xmx (spark.executor.memory) or raise the limit"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
}
