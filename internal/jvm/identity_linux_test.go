package jvm

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// The uid, command line and environment are read once per process and
// program: the same pid, start time and comm come from the record even when
// the files changed; a new start time (pid reuse) or comm (exec) reads again.
func TestIdentityCachedPerProcessAndProgram(t *testing.T) {
	f := newFakeProc(t)
	f.process(42, "42")
	write := func(uid, cmdline string) {
		status := "Name:\tjava\nUid:\t" + uid + "\t" + uid + "\t" + uid + "\t" + uid + "\nNSpid:\t42\n"
		mustWrite(t, filepath.Join(f.dir, "42", "status"), []byte(status))
		mustWrite(t, filepath.Join(f.dir, "42", "cmdline"), []byte(strings.ReplaceAll(cmdline, " ", "\x00")+"\x00"))
	}
	tracker, err := NewTracker(Config{ProcFS: f.dir, SysFS: t.TempDir(), MaxProcesses: 1}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	// As readJVM asks: the record of the process, made at its first read.
	identity := func(p procmem.Process) (identityEntry, error) {
		return tracker.ids.identity(tracker.recs.of(p.PID, p.StartTime), p)
	}
	start := time.Unix(1700000000, 0)
	proc := procmem.Process{PID: 42, Comm: "sh", StartTime: start}

	write("1000", "sh -c launch")
	first, err := identity(proc)
	if err != nil {
		t.Fatal(err)
	}
	if first.euid != 1000 || first.cmd.Role != RoleJVM {
		t.Fatalf("first read: euid %d role %q", first.euid, first.cmd.Role)
	}

	// The files change under the same process and program: cached.
	write("2000", "java org.apache.spark.executor.CoarseGrainedExecutorBackend --executor-id 7 --app-id app-1")
	if got, _ := identity(proc); got.euid != 1000 || got.cmd.Role != RoleJVM {
		t.Errorf("same pid, start and comm: euid %d role %q, want the cached 1000 %q", got.euid, got.cmd.Role, RoleJVM)
	}

	// The shell exec'd java: same pid and start time, new comm.
	proc.Comm = "java"
	got, err := identity(proc)
	if err != nil {
		t.Fatal(err)
	}
	if got.euid != 2000 || got.cmd.Role != RoleExecutor || got.cmd.ExecutorID != "7" {
		t.Errorf("after exec: euid %d role %q executor %q, want 2000 %q 7", got.euid, got.cmd.Role, got.cmd.ExecutorID, RoleExecutor)
	}

	// Between an exec's new name and its new arguments the command line
	// reads empty: that is not kept, the next read asks again.
	proc.StartTime = start.Add(time.Minute)
	mustWrite(t, filepath.Join(f.dir, "42", "cmdline"), nil)
	if got, _ := identity(proc); got.cmd.Role != RoleJVM {
		t.Errorf("empty command line: role %q, want %q", got.cmd.Role, RoleJVM)
	}
	write("2000", "java org.apache.spark.executor.CoarseGrainedExecutorBackend --executor-id 8 --app-id app-1")
	if got, _ := identity(proc); got.cmd.Role != RoleExecutor || got.cmd.ExecutorID != "8" {
		t.Errorf("the command line laid out after an empty read: role %q executor %q, want %q 8", got.cmd.Role, got.cmd.ExecutorID, RoleExecutor)
	}

	// The pid was reused by another process: new start time.
	write("3000", "java Other")
	proc.StartTime = start.Add(time.Hour)
	if got, _ := identity(proc); got.euid != 3000 || got.cmd.Role != RoleJVM {
		t.Errorf("reused pid: euid %d role %q, want 3000 %q", got.euid, got.cmd.Role, RoleJVM)
	}

	// Without a readable status there is no identity: an error, not a guess.
	proc.PID = 43
	if _, err := identity(proc); err == nil {
		t.Error("pid without a status: no error")
	}
}
