package procmem

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// requireLive stops a live test that cannot run here (testenv: a failure
// in CI, which runs as root with python3; a skip with the reason elsewhere).
func requireLive(t *testing.T, needRoot bool, tools ...string) {
	t.Helper()
	if needRoot {
		testenv.RequireRoot(t) // to create memory cgroups
	}
	for _, tool := range tools {
		testenv.RequireTool(t, tool)
	}
}

// holdPython is a python3 program that makes mb MiB resident (every page
// written), says "ready" and sleeps until killed.
func holdPython(mb int) string {
	return fmt.Sprintf(`import sys, time
b = bytearray(%d << 20)
for i in range(0, len(b), 4096): b[i] = 1
sys.stdout.write("ready\n"); sys.stdout.flush()
time.sleep(120)
`, mb)
}

// startUntilReady runs cmd, waits for a "ready" line on its stdout, and
// kills its process group when the test ends.
func startUntilReady(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("%v exited before it was ready", cmd.Args)
		}
	case <-time.After(60 * time.Second): // bounds a hang only
		t.Fatalf("%v not ready after 60s", cmd.Args)
	}
}

// A real process in a real memory cgroup with a 256 MiB limit, holding 64 MiB.
func TestLiveCgroupMemory(t *testing.T) {
	requireLive(t, true, "python3")
	cg := testenv.NewMemoryCgroup(t, 256<<20)

	script := fmt.Sprintf("echo $$ > %s && exec python3 -c '%s'", cg.Procs(), holdPython(64))
	cmd := exec.Command("sh", "-c", script)
	startUntilReady(t, cmd)

	m, err := ReadCgroupMemory("/proc", "/sys", cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", m)
	if m.Path != cg.Path || m.Version != cg.Version {
		t.Errorf("path, version = %q, %d; want %q, %d", m.Path, m.Version, cg.Path, cg.Version)
	}
	if m.Limit != 256<<20 {
		t.Errorf("limit = %d, want %d", m.Limit, 256<<20)
	}
	if m.Usage < 64<<20 || m.Usage > 256<<20 {
		t.Errorf("usage = %d, want between 64 MiB and the 256 MiB limit", m.Usage)
	}
	if m.WorkingSet > m.Usage || m.WorkingSet < 64<<20 {
		t.Errorf("working set = %d, want between 64 MiB (anonymous) and usage %d", m.WorkingSet, m.Usage)
	}
	// Kernel >= 4.13 has oom_kill; a fresh cgroup has seen none.
	if !m.HasOOMKills || m.OOMKills != 0 {
		t.Errorf("oom kills = %d (has %v), want 0 (true)", m.OOMKills, m.HasOOMKills)
	}

	// The exporter's own cgroup reads as well: it is the host's view.
	if _, err := ReadCgroupMemory("/proc", "/sys", os.Getpid()); err != nil {
		t.Errorf("own cgroup: %v", err)
	}
}

// A shell parent with a python child holding 50 MiB.
func TestLiveTreeRSSShellParent(t *testing.T) {
	requireLive(t, false, "python3")
	// "; wait" keeps sh from exec'ing python: we want a real parent.
	cmd := exec.Command("sh", "-c", "python3 -c '"+holdPython(50)+"' & wait")
	startUntilReady(t, cmd)

	table := liveTable(t)
	parent, ok := table.Process(cmd.Process.Pid)
	if !ok {
		t.Fatalf("parent %d not in the table", cmd.Process.Pid)
	}
	got := table.TreeRSS(cmd.Process.Pid)
	t.Logf("sh parent %+v: %+v", parent, got)
	if got.Python < 50<<20 {
		t.Errorf("python RSS = %d, want >= 50 MiB", got.Python)
	}
	if got.Other < parent.RSS || parent.RSS == 0 {
		t.Errorf("other RSS = %d, want >= the shell's %d (> 0)", got.Other, parent.RSS)
	}
	if got.JVM != 0 {
		t.Errorf("JVM RSS = %d, want 0", got.JVM)
	}
}

// A real JVM (the stand-in executor) with a PySpark-like python child.
func TestLiveTreeRSSJVMWithPythonChild(t *testing.T) {
	requireLive(t, false, "python3")
	jvm := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx64m"}, Args: []string{"--python-child", "--python-mb", "50"}})

	// The stand-in reports ready before its child has filled its buffer:
	// poll until it has (the deadline only bounds a hang).
	var got TreeRSS
	var java Process
	testenv.WaitFor(t, 60*time.Second, "the python child's 50 MiB", func() bool {
		table := liveTable(t)
		var ok bool
		if java, ok = table.Process(jvm.PID); !ok {
			t.Fatalf("java %d not in the table", jvm.PID)
		}
		got = table.TreeRSS(jvm.PID)
		return got.Python >= 50<<20
	})
	t.Logf("java %+v: %+v", java, got)
	if java.Comm != "java" {
		t.Errorf("comm = %q, want java", java.Comm)
	}
	if got.Python < 50<<20 {
		t.Errorf("python RSS = %d, want >= 50 MiB", got.Python)
	}
	if got.JVM < java.RSS || java.RSS == 0 {
		t.Errorf("JVM RSS = %d, want >= the java process's %d (> 0)", got.JVM, java.RSS)
	}
	if since := time.Since(java.StartTime); since < -2*time.Second || since > 5*time.Minute {
		t.Errorf("java start time %v is %v from now", java.StartTime, since)
	}
}

func liveTable(t *testing.T) *ProcessTable { return tableAt(t, "/proc") }

// Kernel threads are told apart by their flags, not their names: discovery
// skips them. kthreadd is pid 2 wherever the kernel's threads are visible.
func TestLiveKernelThreads(t *testing.T) {
	table := liveTable(t)
	self, ok := table.Process(os.Getpid())
	if !ok || self.KernelThread {
		t.Errorf("this process: %+v, %v; want a user process", self, ok)
	}
	comm, err := os.ReadFile("/proc/2/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "kthreadd" {
		t.Logf("no kthreadd at pid 2 here (a pid namespace without kernel threads)")
		return
	}
	if k, ok := table.Process(2); !ok || !k.KernelThread {
		t.Errorf("kthreadd: %+v, %v; want a kernel thread", k, ok)
	}
}
