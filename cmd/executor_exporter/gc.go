package main

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the garbage collector's target unless GOGC says
// otherwise. The exporter's live heap is small (a few MiB) next to what one
// scrape allocates (about 1 MiB of const metrics and a gzip writer with 20
// JVMs), so at Go's default of 100 a collection runs after nearly every
// scrape. 150 cut the CPU of a scrape with 20 JVMs by about a fifth for
// about 2 MiB more resident memory (docs/performance.md, "Decisions").
const defaultGCPercent = 150

// tuneGC applies defaultGCPercent when the environment does not set GOGC,
// and returns the percentage in force.
func tuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		percent := debug.SetGCPercent(-1)
		debug.SetGCPercent(percent)
		return percent
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}
