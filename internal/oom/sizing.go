package oom

import "fmt"

// The figures a kill's advice gives follow the rules by which the mixin's
// right-sizing recommends settings for an application (mixin/config.libsonnet,
// rightsizing; docs/runbook.md#right-sizing), applied to the one victim: a
// kill raises the setting that would have prevented it by at least
// KillBumpRatio and KillBumpBytes, and to at least what the victim's own
// peak needs, rounded up to SizingStep.
const (
	KillBumpRatio = 1.2
	KillBumpBytes = 256 << 20
	// SizingMargin is added to a non-heap or Python peak.
	SizingMargin = 0.15
	// HeapLiveTarget is the share of the heap its live data may take.
	HeapLiveTarget = 0.7
	SizingStep     = 64 << 20
)

// raised is what a kill asks a setting set to current to become, when the
// peak it must hold needs need.
func raised(current, need uint64) uint64 {
	bumped := max(uint64(float64(current)*KillBumpRatio), current+KillBumpBytes)
	return roundUp(max(bumped, need))
}

func roundUp(b uint64) uint64   { return (b + SizingStep - 1) / SizingStep * SizingStep }
func roundDown(b uint64) uint64 { return b / SizingStep * SizingStep }

func withMargin(b uint64) uint64 { return uint64(float64(b) * (1 + SizingMargin)) }

func inMiB(b uint64) string { return fmt.Sprintf("%d MiB", b>>20) }

// raiseBy says how much to raise a setting by, and to what, when it is
// known; by how much alone when it is not (current 0).
func raiseBy(setting string, current, need uint64) string {
	to := raised(current, need)
	if current == 0 {
		return fmt.Sprintf("set %s to %s at least", setting, inMiB(to))
	}
	return fmt.Sprintf("raise %s by %s to %s", setting, inMiB(to-current), inMiB(to))
}

// overheadSet is the room the container limit leaves beside the heap max:
// spark.executor.memoryOverhead, with spark.executor.pyspark.memory when it
// is set. 0 when either is unknown.
func (s Victim) overheadSet() uint64 {
	if s.CgroupLimit > s.HeapMax && s.HeapMax > 0 {
		return s.CgroupLimit - s.HeapMax
	}
	return 0
}

// overheadAdvice raises the overhead to what the victim held beside its
// heap, with the margin, and by the kill's bump at least.
func (s Victim) overheadAdvice(nonHeap uint64) string {
	return raiseBy("spark.executor.memoryOverhead", s.overheadSet(), withMargin(max(nonHeap, s.PeakNonHeap+s.PeakPython)))
}

// heapFilledNote explains why a kill of a full heap asks for overhead:
// Spark sizes the container as spark.executor.memory plus the overhead,
// so a heap at its max leaves the overhead all the rest, and more heap
// would only fill more of a container grown by as much.
const heapFilledNote = ": the heap filled its max, and Spark's container (heap + overhead) left too little beside it"

// pythonAdvice sets the Python workers' own budget to their peak with the
// margin, raised by the kill's bump.
func (s Victim) pythonAdvice() string {
	python := max(s.RSSPython, s.PeakPython)
	return fmt.Sprintf("set spark.executor.pyspark.memory to %s at least (or raise spark.executor.memoryOverhead by as much), or use less memory in Python UDFs",
		inMiB(raised(python, withMargin(python))))
}

// tooBigAdvice lowers the heap so that its max fits beside the non-heap
// memory, or raises the limit by what is missing.
func (s Victim) tooBigAdvice(nonHeap uint64) string {
	if s.CgroupLimit == 0 || s.HeapMax == 0 || s.CgroupLimit <= nonHeap {
		return "lower -Xmx (spark.executor.memory) or raise the limit"
	}
	return fmt.Sprintf("lower spark.executor.memory (-Xmx) to %s, or raise the container limit by %s",
		inMiB(roundDown(s.CgroupLimit-nonHeap)), inMiB(roundUp(s.HeapMax+nonHeap-s.CgroupLimit)))
}
