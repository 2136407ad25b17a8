package procmem

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// quietFor is how long a test waits to see that nothing fires. The kernel
// signals within milliseconds of a charge, so it is ample.
const quietFor = 300 * time.Millisecond

// firesWithin only bounds a hang: a busy machine may be slow to run dd.
const firesWithin = 10 * time.Second

func newTestNotifier(t *testing.T) *UsageNotifier {
	t.Helper()
	n, err := NewUsageNotifier()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func expectFired(t *testing.T, n *UsageNotifier, key, after string) {
	t.Helper()
	start := time.Now()
	select {
	case got := <-n.Events():
		if got != key {
			t.Fatalf("%s: Events gave %q, want %q", after, got, key)
		}
		t.Logf("%s: %q fired %v after the test looked", after, key, time.Since(start).Round(time.Millisecond))
	case <-time.After(firesWithin):
		t.Fatalf("%s: %q did not fire within %v", after, key, firesWithin)
	}
}

func expectQuiet(t *testing.T, n *UsageNotifier, during string) {
	t.Helper()
	select {
	case got := <-n.Events():
		t.Fatalf("%s: Events gave %q", during, got)
	case <-time.After(quietFor):
	}
}

// allocateIn writes mib MiB to a new file in dir from a process that
// first joins the cgroups of procsFiles, and waits for it. Written to tmpfs
// the pages stay charged to its memory cgroup after it exits; written to
// disk they are page cache the cgroup must reclaim once full.
func allocateIn(t *testing.T, dir string, mib int, procsFiles ...string) {
	t.Helper()
	script := `d=$1 n=$2; shift 2; for p; do echo $$ > "$p" || exit 1; done
exec dd if=/dev/zero of="$(mktemp -p "$d")" bs=1M count="$n" status=none`
	args := append([]string{"-c", script, "sh", dir, strconv.Itoa(mib)}, procsFiles...)
	if out, err := exec.Command("sh", args...).CombinedOutput(); err != nil {
		t.Fatalf("writing %d MiB: %v\n%s", mib, err, out)
	}
}

// shmDir is a directory on tmpfs, whose pages are charged to the cgroup
// of the process that writes them and stay charged until removed.
func shmDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "executor-exporter-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// requireV1 stops a test of usage thresholds, cgroup v1's alone, on a
// machine whose memory cgroups are v2, after checking that Watch chooses
// the v2 mechanism there.
func requireV1(t *testing.T, cg testenv.MemoryCgroup) {
	t.Helper()
	if cg.Version == 1 {
		return
	}
	n := newTestNotifier(t)
	if mech, err := n.Watch("c", cg.Dir, []uint64{1 << 20}); mech != NotifyEvents || err != nil {
		t.Fatalf("Watch on the v2 cgroup %s = %q, %v; want %q", cg.Dir, mech, err, NotifyEvents)
	}
	t.Skip("usage thresholds are cgroup v1's; this machine's memory cgroups are v2")
}

func usageOf(t *testing.T, cg testenv.MemoryCgroup) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cg.Dir, "memory.usage_in_bytes"))
	v, perr := parseSingleUint(b)
	if err = errors.Join(err, perr); err != nil {
		t.Fatal(err)
	}
	return v
}

// expectNoLeak notes this process's descriptors and goroutines, and
// returns a check that there are no more of either.
func expectNoLeak(t *testing.T) (check func(after string)) {
	t.Helper()
	openFDs := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	fds, goroutines := openFDs(), runtime.NumGoroutine()
	return func(after string) {
		t.Helper()
		if got := openFDs(); got != fds {
			t.Errorf("%d descriptors open after %s, %d before", got, after, fds)
		}
		testenv.WaitFor(t, 5*time.Second, "goroutines to end after "+after, func() bool { return runtime.NumGoroutine() <= goroutines })
	}
}

// Thresholds at 50 % and 75 % of 64 MiB: nothing fires below them, each
// fires when usage crosses it, and the kernel signals them once more when
// the cgroup is removed.
func TestUsageNotifierFiresOnCrossing(t *testing.T) {
	cg := testenv.NewMemoryCgroup(t, 64<<20)
	requireV1(t, cg)
	shm := shmDir(t)
	n := newTestNotifier(t)
	mech, err := n.Watch("c", cg.Dir, []uint64{32 << 20, 48 << 20})
	if err != nil || mech != NotifyThreshold {
		t.Fatalf("Watch = %q, %v; want %q", mech, err, NotifyThreshold)
	}
	expectQuiet(t, n, "before any allocation")
	allocateIn(t, shm, 8, cg.Procs())
	expectQuiet(t, n, fmt.Sprintf("at %d MiB, below 50 %%", usageOf(t, cg)>>20))
	allocateIn(t, shm, 32, cg.Procs())
	expectFired(t, n, "c", fmt.Sprintf("crossing 50 %% (now %d MiB)", usageOf(t, cg)>>20))
	expectQuiet(t, n, fmt.Sprintf("at %d MiB, between 50 %% and 75 %%", usageOf(t, cg)>>20))
	allocateIn(t, shm, 12, cg.Procs())
	expectFired(t, n, "c", fmt.Sprintf("crossing 75 %% (now %d MiB)", usageOf(t, cg)>>20))
	if err := syscall.Rmdir(cg.Dir); err != nil {
		t.Fatal(err)
	}
	expectFired(t, n, "c", "removing the cgroup")
}

// After Unwatch its descriptors are closed and a crossing says nothing.
func TestUsageNotifierUnwatch(t *testing.T) {
	cg := testenv.NewMemoryCgroup(t, 64<<20)
	requireV1(t, cg)
	n := newTestNotifier(t)
	noLeak := expectNoLeak(t)
	if _, err := n.Watch("c", cg.Dir, []uint64{32 << 20}); err != nil {
		t.Fatal(err)
	}
	n.Unwatch("c")
	noLeak("Watch and Unwatch")
	allocateIn(t, shmDir(t), 40, cg.Procs())
	if u := usageOf(t, cg); u < 32<<20 {
		t.Fatalf("usage %d MiB did not cross 32 MiB", u>>20)
	}
	expectQuiet(t, n, "crossing after Unwatch")
}

// Close ends the goroutine, closes Events and every descriptor, and may
// be called again; a Watch after it fails without leaking.
func TestUsageNotifierClose(t *testing.T) {
	cg := testenv.NewMemoryCgroup(t, 64<<20)
	noLeak := expectNoLeak(t)
	n, err := NewUsageNotifier()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Watch("c", cg.Dir, []uint64{32 << 20, 48 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, open := <-n.Events(); open {
		t.Error("Events still open after Close")
	}
	if _, err := n.Watch("c", cg.Dir, []uint64{32 << 20}); !errors.Is(err, errNotifierClosed) {
		t.Errorf("Watch after Close: %v, want %v", err, errNotifierClosed)
	}
	n.Unwatch("c")
	noLeak("Close")
}

// Watch fails on what is not a memory cgroup, writes nothing to regular
// files named like cgroup files (nor does a PSI trigger), leaks nothing,
// and drops the key's earlier watch.
func TestUsageNotifierWatchErrors(t *testing.T) {
	cg := testenv.NewMemoryCgroup(t, 64<<20)
	fake := func(files ...string) string {
		dir := t.TempDir()
		for _, f := range files {
			mustWrite(t, filepath.Join(dir, f), "")
		}
		return dir
	}
	mechanism := NotifyThreshold
	if cg.Version == 2 {
		mechanism = NotifyEvents
	}
	fakeV2 := fake("memory.pressure")
	fakeV2fd := openTestDir(t, fakeV2)
	n := newTestNotifier(t)
	noLeak := expectNoLeak(t)
	for _, tc := range []struct {
		name, dir  string
		thresholds []uint64
		want       string
	}{
		{"relative", "sys/fs/cgroup", nil, "not an absolute path"},
		{"missing", filepath.Join(t.TempDir(), "gone"), nil, "no such file"},
		{"empty", fake(), nil, "neither cgroup.event_control"},
		{"fake v1", fake("cgroup.event_control", "memory.usage_in_bytes"), []uint64{1}, "memory.usage_in_bytes: not on a cgroup file system"},
		{"fake v2", fake("memory.events", "memory.pressure"), nil, "memory.events: not on a cgroup file system"},
		{"no thresholds", cg.Dir, nil, "no thresholds"},
	} {
		if tc.name == "no thresholds" && cg.Version == 2 {
			continue // v2 has none to give
		}
		if mech, err := n.Watch("c", cg.Dir, []uint64{32 << 20}); err != nil || mech != mechanism {
			t.Fatalf("Watch on %s = %q, %v; want %q", cg.Dir, mech, err, mechanism)
		}
		mech, err := n.Watch("c", tc.dir, tc.thresholds)
		if err == nil || !strings.Contains(err.Error(), tc.want) || mech != "" {
			t.Errorf("%s: Watch = %q, %v; want an error saying %q", tc.name, mech, err, tc.want)
		}
		n.mu.Lock()
		_, watched := n.watches["c"]
		n.mu.Unlock()
		if watched {
			t.Errorf("%s: the earlier watch of the key survived the failed Watch", tc.name)
		}
		entries, _ := os.ReadDir(tc.dir)
		for _, e := range entries {
			if info, err := e.Info(); err == nil && info.Size() != 0 {
				t.Errorf("%s: %s was written to", tc.name, e.Name())
			}
		}
	}
	if _, err := openPressureTrigger(fakeV2fd, pressureTrigger); err == nil || !strings.Contains(err.Error(), "memory.pressure: not on a cgroup file system") {
		t.Errorf("openPressureTrigger on a regular file: %v, want an error saying it is not on a cgroup file system", err)
	}
	if b, _ := os.ReadFile(filepath.Join(fakeV2, "memory.pressure")); len(b) != 0 {
		t.Errorf("the regular memory.pressure was written: %q", b)
	}
	noLeak("the failed Watches")
}

func openTestDir(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// newCgroup2Dir makes a cgroup in the machine's v2 hierarchy, which need
// not have the memory controller (a hybrid machine's /sys/fs/cgroup/unified
// has none): the kernfs notification and the PSI trigger NotifyEvents uses
// are in every v2 cgroup. It is emptied and removed when the test ends.
func newCgroup2Dir(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t)
	mounts, _ := os.ReadFile("/proc/self/mounts")
	root := ""
	for line := range strings.Lines(string(mounts)) {
		if f := strings.Fields(line); root == "" && len(f) > 2 && f[2] == "cgroup2" {
			root = f[1]
		}
	}
	if root == "" {
		testenv.Unavailable(t, "no cgroup2 file system mounted")
	}
	dir, err := os.MkdirTemp(root, "executor-exporter-test-")
	if err != nil {
		testenv.Unavailable(t, "cannot create a cgroup under %s: %v", root, err)
	}
	t.Cleanup(func() {
		testenv.WaitFor(t, 10*time.Second, "removing "+dir, func() bool {
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, pid := range strings.Fields(string(procs)) {
				if p, err := strconv.Atoi(pid); err == nil && p > 1 {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			err := syscall.Rmdir(dir)
			return err == nil || errors.Is(err, os.ErrNotExist)
		})
	})
	return dir
}

// A kernfs file that the kernel notifies (here cgroup.events, which says
// whether the cgroup has processes; memory.events goes the same way)
// fires once per change, not before the first. Removed with a change
// unread, it polls ready for ever (kernfs reports an error for a removed
// file): it must fire once, then stay quiet.
func TestChangedFileFires(t *testing.T) {
	dir := newCgroup2Dir(t)
	n := newTestNotifier(t)
	f, err := openChangedFile(openTestDir(t, dir), "cgroup.events")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.add("e", []*notifyFD{f}); err != nil {
		t.Fatal(err)
	}
	expectQuiet(t, n, "before any change")
	pid := sleepIn(t, filepath.Join(dir, "cgroup.procs"), "/"+filepath.Base(dir))
	expectFired(t, n, "e", "a process joining")
	expectQuiet(t, n, "after the first change")
	n.mu.Lock() // the reader cannot acknowledge the change before the removal
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "rmdir "+dir, func() bool { return syscall.Rmdir(dir) == nil })
	n.mu.Unlock()
	expectFired(t, n, "e", "the process leaving and the cgroup removed")
	expectQuiet(t, n, "after the removal, which must leave the epoll set")
}

// The kernel accepts the PSI trigger Watch registers, and a trigger on a
// cgroup fires when a process in it stalls reclaiming memory: dd in a 16
// MiB memory cgroup writing 64 MiB of page cache. The trigger of a removed
// cgroup polls ready for ever; it must fire once, then stay quiet.
func TestPressureTriggerFires(t *testing.T) {
	cg := testenv.NewMemoryCgroup(t, 16<<20)
	dir, procs := cg.Dir, []string{cg.Procs()}
	if cg.Version == 1 {
		dir = newCgroup2Dir(t)
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	dirfd := openTestDir(t, dir)
	f, err := openPressureTrigger(dirfd, pressureTrigger)
	if err != nil {
		t.Fatal(err)
	}
	_ = unix.Close(f.fd)
	// 1 ms of stall within 2 s: a few reclaims.
	f, err = openPressureTrigger(dirfd, "some 1000 2000000\x00")
	if err != nil {
		t.Fatal(err)
	}
	n := newTestNotifier(t)
	if err := n.add("p", []*notifyFD{f}); err != nil {
		t.Fatal(err)
	}
	expectQuiet(t, n, "before any allocation")
	allocateIn(t, t.TempDir(), 64, procs...)
	expectFired(t, n, "p", "writing 64 MiB through a 16 MiB cgroup")
	if err := syscall.Rmdir(dir); err != nil {
		t.Fatal(err)
	}
	select { // the removal fires, unless it coalesced with a late stall
	case <-n.Events():
	case <-time.After(quietFor):
	}
	expectQuiet(t, n, "after the removal, which must leave the epoll set")
}

// BenchmarkUsageRead is what polling a cgroup costs each time: a pread
// of its usage through a descriptor kept open, and the parse.
func BenchmarkUsageRead(b *testing.B) {
	cg := testenv.NewMemoryCgroup(b, 64<<20)
	name := "memory.usage_in_bytes"
	if cg.Version == 2 {
		name = "memory.current"
	}
	fd, err := unix.Open(filepath.Join(cg.Dir, name), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 64)
	reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
	for b.Loop() {
		k, err := unix.Pread(fd, buf, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := parseSingleUint(buf[:k]); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU()
}
