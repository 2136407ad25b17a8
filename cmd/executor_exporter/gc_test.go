package main

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv("GOGC", "")
	// An empty GOGC is set: the runtime read it as its default (100), and
	// the exporter leaves what the operator wrote alone.
	debug.SetGCPercent(100)
	if got := tuneGC(); got != 100 {
		t.Errorf("GOGC set: tuneGC() = %d, want the runtime's 100", got)
	}

	debug.SetGCPercent(80) // as GOGC=80 would have made it at start-up
	t.Setenv("GOGC", "80")
	if got := tuneGC(); got != 80 {
		t.Errorf("GOGC=80: tuneGC() = %d, want 80", got)
	}
	if got := debug.SetGCPercent(80); got != 80 {
		t.Errorf("GOGC=80: runtime percent %d, want 80", got)
	}
}

func TestTuneGCDefault(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	unsetenv(t, "GOGC")
	if got := tuneGC(); got != defaultGCPercent {
		t.Errorf("tuneGC() = %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("runtime percent %d, want %d", got, defaultGCPercent)
	}
}

// unsetenv removes an environment variable for the test and restores it.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
