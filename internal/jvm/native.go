package jvm

import (
	"time"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// NativeMemory is a JVM's resident memory by region: the last breakdown,
// and the one its growth is measured from (the first taken after the
// JVM's first minute, whenever the exporter came; until then its first).
// It is never modified once made; a new breakdown makes a new one.
type NativeMemory struct {
	First, Last nativemem.Reading
	// Checked is when Last was last found still true: a cheap look at the
	// process's mappings and resident size showed nothing had moved.
	Checked time.Time
}

// Growth is what grew most outside the heap since First.
func (n *NativeMemory) Growth() nativemem.Growth {
	if n == nil {
		return nativemem.Growth{}
	}
	return nativemem.TopGrowth(n.First, n.Last)
}
