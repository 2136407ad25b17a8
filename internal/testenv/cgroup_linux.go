package testenv

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// MemoryCgroup is a memory cgroup a test made, in whichever hierarchy the
// machine has (v1 memory controller or v2 unified).
type MemoryCgroup struct {
	Dir     string // its directory under /sys/fs/cgroup
	Path    string // its path as /proc/<pid>/cgroup shows it
	Version int    // 1 or 2
}

// Procs is the file a process joins the cgroup by.
func (c MemoryCgroup) Procs() string { return filepath.Join(c.Dir, "cgroup.procs") }

// OOMKills is the cgroup's own count of OOM kills: oom_kill in
// memory.oom_control (v1) or memory.events (v2).
func (c MemoryCgroup) OOMKills(t testing.TB) uint64 {
	t.Helper()
	file := "memory.events"
	if c.Version == 1 {
		file = "memory.oom_control"
	}
	data, err := os.ReadFile(filepath.Join(c.Dir, file))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			return n
		}
	}
	t.Fatalf("no oom_kill line in %s:\n%s", file, data)
	return 0
}

// NewMemoryCgroup creates a memory cgroup limited to limit bytes, without
// swap, so that going over the limit is an OOM kill. When the test ends,
// whatever is still in it is killed and it is removed. Register it before
// starting the processes that join it: cleanups run last-in first-out, so
// the test's own cleanups stop those processes first.
func NewMemoryCgroup(t testing.TB, limit uint64) MemoryCgroup {
	t.Helper()
	RequireRoot(t)
	name := cgroupName(t)
	switch {
	case exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
		return makeCgroup(t, MemoryCgroup{Dir: "/sys/fs/cgroup/memory/" + name, Path: "/" + name, Version: 1}, limit)
	case hasWord("/sys/fs/cgroup/cgroup.subtree_control", "memory"):
		return makeCgroup(t, MemoryCgroup{Dir: "/sys/fs/cgroup/" + name, Path: "/" + name, Version: 2}, limit)
	}
	Unavailable(t, "no memory cgroup controller (v1 at /sys/fs/cgroup/memory, or v2 enabled in /sys/fs/cgroup/cgroup.subtree_control)")
	return MemoryCgroup{}
}

// Child creates a memory cgroup called name inside c, limited to limit
// bytes, as a container's cgroup sits inside its pod's and the node's. It
// is emptied and removed when the test ends, before c.
func (c MemoryCgroup) Child(t testing.TB, name string, limit uint64) MemoryCgroup {
	t.Helper()
	if c.Version == 2 {
		// v2 gives children a controller only when the parent hands it down.
		if err := os.WriteFile(filepath.Join(c.Dir, "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
			t.Fatalf("enabling the memory controller below %s: %v", c.Dir, err)
		}
	}
	return makeCgroup(t, MemoryCgroup{Dir: filepath.Join(c.Dir, name), Path: c.Path + "/" + name, Version: c.Version}, limit)
}

// makeCgroup creates cg's directory, removes it at the end of the test and
// sets the limit with swap off.
func makeCgroup(t testing.TB, cg MemoryCgroup, limit uint64) MemoryCgroup {
	t.Helper()
	if err := os.Mkdir(cg.Dir, 0o755); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			Unavailable(t, "cannot create a memory cgroup here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(t, cg) })
	limits := [][2]string{{"memory.limit_in_bytes", ""}, {"memory.swappiness", "0"}}
	if cg.Version == 2 {
		limits = [][2]string{{"memory.max", ""}, {"memory.swap.max", "0"}}
	}
	limits[0][1] = strconv.FormatUint(limit, 10)
	for _, kv := range limits {
		err := os.WriteFile(filepath.Join(cg.Dir, kv[0]), []byte(kv[1]), 0o644)
		// A v2 kernel without swap accounting has no memory.swap.max: it
		// cannot swap the cgroup out either.
		if err != nil && (kv[0] != "memory.swap.max" || !errors.Is(err, os.ErrNotExist)) {
			t.Fatalf("%s: %v", kv[0], err)
		}
	}
	return cg
}

// removeCgroup kills the cgroup's tasks and removes it, retrying: rmdir
// fails with EBUSY until the last task has gone.
func removeCgroup(t testing.TB, cg MemoryCgroup) {
	var err error
	for range 100 {
		procs, _ := os.ReadFile(cg.Procs())
		for _, f := range strings.Fields(string(procs)) {
			if pid, perr := strconv.Atoi(f); perr == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if err = syscall.Rmdir(cg.Dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("could not remove cgroup %s: %v", cg.Dir, err)
}

// cgroupName names a test's cgroup after the test (a leftover says where
// it came from) and makes it unique.
func cgroupName(t testing.TB) string {
	var b strings.Builder
	b.WriteString("executor-exporter-test-")
	for _, r := range t.Name() {
		if b.Len() >= 80 {
			break
		}
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return b.String() + "-" + hex.EncodeToString(suffix)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func hasWord(file, word string) bool {
	b, _ := os.ReadFile(file)
	return strings.Contains(" "+strings.Join(strings.Fields(string(b)), " ")+" ", " "+word+" ")
}

// RemoveCgroupTree removes a cgroup directory and the cgroups made below it
// (by systemd, containerd or the kubelet), deepest first, retrying for a
// minute while their last tasks go: on a loaded machine a stopped
// machine's or pod's processes take seconds to end.
func RemoveCgroupTree(t testing.TB, dir string) {
	t.Helper()
	var err error
	for range 600 {
		var dirs []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, werr error) error {
			if werr == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		err = nil
		for i := len(dirs) - 1; i >= 0; i-- {
			if rerr := syscall.Rmdir(dirs[i]); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = rerr
			}
		}
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("could not remove cgroup %s: %v%s", dir, err, cgroupTasks(dir))
}

// cgroupTasks lists what is left in the cgroups below dir: each one's
// threads (tasks, or cgroup.threads on the unified hierarchy) with their
// state and parent, and cgroup.events where there is one.
func cgroupTasks(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			describeCgroup(&b, p)
		}
		return nil
	})
	return b.String()
}

func describeCgroup(b *strings.Builder, p string) {
	fmt.Fprintf(b, "\n  %s", p)
	if ev, err := os.ReadFile(filepath.Join(p, "cgroup.events")); err == nil {
		fmt.Fprintf(b, " [%s]", strings.Join(strings.Fields(string(ev)), " "))
	}
	for _, f := range []string{"tasks", "cgroup.threads"} {
		ids, err := os.ReadFile(filepath.Join(p, f))
		if err != nil {
			continue
		}
		for _, id := range strings.Fields(string(ids)) {
			stat, _ := os.ReadFile("/proc/" + id + "/stat")
			fmt.Fprintf(b, "\n    %s %s", id, strings.TrimSpace(string(stat)))
		}
		return
	}
}
