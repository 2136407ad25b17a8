package main

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the garbage collector's target unless GOGC says
// otherwise. It was 150 while a scrape built ~1 MiB of const metrics; now
// the per-JVM series are built once per sample and served from bytes, a
// scrape allocates a few hundred KiB, and Go's own 100 keeps the resident
// memory under its budget with 100 JVMs for a tenth more CPU per served
// scrape (docs/performance.md, "Decisions").
const defaultGCPercent = 100

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
