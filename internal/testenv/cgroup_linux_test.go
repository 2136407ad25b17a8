package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNewMemoryCgroup: the cgroup has the limit, a process put in it shows
// the cgroup's Path in /proc/<pid>/cgroup, and when the test ends the
// process is killed and the cgroup is gone.
func TestNewMemoryCgroup(t *testing.T) {
	var cg MemoryCgroup
	var cmd *exec.Cmd
	t.Run("inner", func(t *testing.T) {
		cg = NewMemoryCgroup(t, 64<<20)
		limitFile := "memory.limit_in_bytes"
		if cg.Version == 2 {
			limitFile = "memory.max"
		}
		if b, err := os.ReadFile(filepath.Join(cg.Dir, limitFile)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(64<<20) {
			t.Fatalf("%s = %q, %v; want %d", limitFile, b, err, 64<<20)
		}
		cmd = exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cg.Procs(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cgroup"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), ":"+cg.Path+"\n") {
			t.Errorf("/proc/<pid>/cgroup does not show %s:\n%s", cg.Path, b)
		}
	})
	if cmd == nil {
		return // skipped (no cgroups here) or failed
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the process in the cgroup ended with %v, want killed", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("the process in the cgroup was not killed when the test ended")
		_ = syscall.Rmdir(cg.Dir)
	}
	if _, err := os.Stat(cg.Dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s left behind: %v", cg.Dir, err)
	}
}

// TestMemoryCgroupChild: a child cgroup sits below its parent in
// /proc/<pid>/cgroup's terms, has its own limit, and is gone with it.
func TestMemoryCgroupChild(t *testing.T) {
	var child MemoryCgroup
	t.Run("inner", func(t *testing.T) {
		parent := NewMemoryCgroup(t, 128<<20)
		child = parent.Child(t, "container", 32<<20)
		if child.Path != parent.Path+"/container" || filepath.Dir(child.Dir) != parent.Dir {
			t.Errorf("child %+v of %+v", child, parent)
		}
		limitFile := "memory.limit_in_bytes"
		if child.Version == 2 {
			limitFile = "memory.max"
		}
		if b, err := os.ReadFile(filepath.Join(child.Dir, limitFile)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(32<<20) {
			t.Errorf("%s = %q, %v; want %d", limitFile, b, err, 32<<20)
		}
	})
	if child.Dir == "" {
		return // skipped (no cgroups here) or failed
	}
	if _, err := os.Stat(filepath.Dir(child.Dir)); !os.IsNotExist(err) {
		t.Errorf("cgroup %s left behind: %v", filepath.Dir(child.Dir), err)
	}
}
