package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OpenFDsOn counts this process's descriptors open on path, for tests of
// code that keeps files open between calls and must close them.
func OpenFDsOn(t testing.TB, path string) int {
	t.Helper()
	return countFDs(t, func(target string) bool { return target == path })
}

// OpenFDsBeneath counts this process's descriptors open on files beneath
// the directory dir.
func OpenFDsBeneath(t testing.TB, dir string) int {
	t.Helper()
	return countFDs(t, func(target string) bool { return strings.HasPrefix(target, dir+"/") })
}

func countFDs(t testing.TB, match func(target string) bool) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && match(target) {
			n++
		}
	}
	return n
}
