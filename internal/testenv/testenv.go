// Package testenv holds what the project's tests ask of the machine (a
// tool on PATH, root, the repository, the built exporter, a memory cgroup,
// a free port) and the one polling helper, WaitFor. It is imported only
// from _test.go files (depguard enforces it).
//
// The rule it enforces: a test that cannot run here fails in CI (the CI
// environment variable is set, and `make test` installs everything) and is
// skipped, with the reason, anywhere else. Nothing is skipped silently.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// InCI reports whether the tests run in CI, where nothing may be missing.
func InCI() bool { return os.Getenv("CI") != "" }

// Unavailable stops a test that cannot run here: a failure in CI, a skip
// with the reason elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI must provide this; see scripts/install-test-deps.sh)", reason)
	}
	t.Skip(reason)
}

// RequireTool returns the path of a command the test runs.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, "%s not found on PATH", name)
	}
	return p
}

// RequireRoot stops a test that needs root (cgroups, namespaces,
// /dev/kmsg, switching users); CI runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root (running as uid %d)", os.Geteuid())
	}
}

// RepoRoot returns the repository root, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// ExporterBinary returns $EXPORTER_BIN (make test sets it to what `make
// build` made) or builds the exporter once per test binary.
func ExporterBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("EXPORTER_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "executor-exporter-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "executor_exporter")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/executor_exporter")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// CPUPerOp starts counting CPU time — user plus system, of this process
// (syscall.RUSAGE_SELF) or of its waited-for children
// (syscall.RUSAGE_CHILDREN) — and returns a func that reports what was used
// since, per b.N, as the cpu-ns/op metric. The budgets are CPU time: wall
// time (ns/op) on a shared machine says little.
func CPUPerOp(b *testing.B, who int) (report func()) {
	b.Helper()
	start := cpuTime(b, who)
	return func() {
		b.Helper()
		b.ReportMetric(float64((cpuTime(b, who)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime(b *testing.B, who int) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReleaseDir returns $RELEASE_DIR, where `make release` wrote the archives
// and sha256sums.txt (.tarballs; `make test` sets it after making them).
func ReleaseDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("RELEASE_DIR")
	if dir == "" {
		Unavailable(t, "RELEASE_DIR is not set: run `make release` and set RELEASE_DIR=$PWD/.tarballs (make test does both)")
	}
	if _, err := os.Stat(filepath.Join(dir, "sha256sums.txt")); err != nil {
		t.Fatalf("RELEASE_DIR=%s holds no release: %v", dir, err)
	}
	return dir
}

// Version is the VERSION file's: the release being built.
func Version(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
