package yarntest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
	"github.com/executor-exporter/executor_exporter/internal/yarn"
	"github.com/executor-exporter/executor_exporter/internal/yarn/yarntest"
)

const app = "application_1700000000000_0042"

// startContainer starts the stand-in executor as a YARN container would
// run it, and returns it with the container's launch.
func startContainer(t *testing.T, id string, jvmArgs, args []string) (*testjvm.JVM, yarntest.ContainerLaunch) {
	t.Helper()
	l, err := yarntest.Launch(t.TempDir(), "yarn", app, id)
	if err != nil {
		t.Fatal(err)
	}
	j := testjvm.Start(t, testjvm.Options{MainClass: testjvm.YarnExecutorClass, JVMArgs: append(l.JVMArgs, jvmArgs...),
		Args: append(testjvm.YarnExecutorArgs(app, "2"), args...), Prelude: l.Prelude})
	return j, l
}

func listed(t *testing.T, srv *yarntest.Server, id string) yarn.APIContainer {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/ws/v1/node/containers/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 1<<20)
	n, _ := resp.Body.Read(buf)
	for m := n; m > 0 && n < len(buf); n += m {
		m, _ = resp.Body.Read(buf[n:])
	}
	c, err := yarn.ParseContainer(buf[:n])
	if err != nil {
		t.Fatalf("container %s: %v", id, err)
	}
	return c
}

// A native leak past the allocation: the monitor kills the container with
// -104 and Hadoop's diagnostics, the JVM ends on SIGTERM (143) or the
// SIGKILL after it (137), and the container is listed for Linger only.
func TestMonitorPmemKill(t *testing.T) {
	testjvm.RequireJava(t)
	const id = "container_1700000000000_0042_01_000002"
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.Linger = time.Second
	j, l := startContainer(t, id, []string{"-Xmx64m", "-XX:MaxDirectMemorySize=2g", "-XX:+UseSerialGC"},
		[]string{"--leak", "--kind", "direct-large", "--target-mb", "1024", "--rate-mb-s", "64", "--step-mb", "4",
			"--executor-id", "2", "--app-id", app})
	checkLaunch(t, j.PID, id, l)
	m := yarntest.NewMonitor(srv)
	m.Interval, m.VmemCheck = 300*time.Millisecond, false
	m.Watch(id, j.PID, 256)
	m.Start()
	defer m.Stop()

	code := j.ExitCode(t, 60*time.Second)
	if code != 143 && code != 137 {
		t.Errorf("JVM exit %d, want 143 (SIGTERM) or 137 (SIGKILL)", code)
	}
	c := listed(t, srv, id)
	k := yarn.ParseDiagnostics(c.Diagnostics)
	if ended, _ := yarn.Ended(c.State); !ended || c.ExitCode != yarn.ExitKilledPmem || k.Kind != yarn.KillPmem || k.PmemLimit != 256<<20 ||
		k.PmemUsed <= 256<<20 || k.PID != j.PID || k.ContainerID != id {
		t.Errorf("after the kill: %+v\nparsed %+v", c, k)
	}
	// Hadoop 3.3's text: stamped entries, the dump with the JVM's line.
	if !strings.HasPrefix(c.Diagnostics, "[") || !strings.Contains(c.Diagnostics, fmt.Sprintf("\t|- %d ", j.PID)) ||
		!strings.Contains(c.Diagnostics, "]Container killed on request. Exit code is 143\n") {
		t.Errorf("diagnostics not as Hadoop 3.3 writes them:\n%s", c.Diagnostics)
	}
	// Over the limit but under twice it: killed only once its processes
	// were older than one pass, so at most the leak of two passes over.
	if max := uint64(256+2*64) << 20; k.PmemUsed > max+64<<20 {
		t.Errorf("killed at %d MiB, beyond one pass's leak over the limit", k.PmemUsed>>20)
	}
	testenv.WaitFor(t, 30*time.Second, "the NodeManager to drop the container", func() bool { return !srv.Listed(id) })
}

// An executor's address space over allocation × ratio: the vmem check,
// first, kills it with -103 although its RSS is far under the allocation.
func TestMonitorVmemKill(t *testing.T) {
	testjvm.RequireJava(t)
	const id = "container_1700000000000_0042_01_000003"
	srv := yarntest.NewServer()
	defer srv.Close()
	j, _ := startContainer(t, id, []string{"-Xmx64m", "-XX:+UseSerialGC"},
		[]string{"--leak", "--kind", "threads", "--threads", "200", "--stack-kb", "64", "--target-mb", "16"})
	m := yarntest.NewMonitor(srv)
	m.Interval = 300 * time.Millisecond
	// The JVM reserves far more address space than 2.1 × 200 MiB (heap,
	// code cache, metaspace, thread stacks) while resident well under it.
	m.Watch(id, j.PID, 200)
	m.Start()
	defer m.Stop()
	j.ExitCode(t, 60*time.Second)
	c := listed(t, srv, id)
	k := yarn.ParseDiagnostics(c.Diagnostics)
	if c.ExitCode != yarn.ExitKilledVmem || k.Kind != yarn.KillVmem || k.VmemLimit>>20 != 420 {
		t.Errorf("after the kill: exit %d, parsed %+v\n%s", c.ExitCode, k, c.Diagnostics)
	}
	if k.PmemUsed >= 200<<20 {
		t.Errorf("resident %d MiB: the test wants a vmem kill under the physical limit", k.PmemUsed>>20)
	}
}

// Under its allocation, a container lives through passes.
func TestMonitorUnderLimit(t *testing.T) {
	testjvm.RequireJava(t)
	const id = "container_1700000000000_0042_01_000004"
	srv := yarntest.NewServer()
	defer srv.Close()
	j, _ := startContainer(t, id, []string{"-Xmx64m"}, []string{"--executor-id", "4", "--app-id", app})
	m := yarntest.NewMonitor(srv)
	m.VmemCheck = false
	m.Watch(id, j.PID, 1024)
	for range 3 {
		m.Pass()
	}
	rss, _ := m.Last(id)
	if c := listed(t, srv, id); c.State != "RUNNING" || c.ExitCode != yarntest.ExitInvalid || rss == 0 || rss >= 1024<<20 {
		t.Errorf("after three passes at %d MiB of 1024: %+v", rss>>20, c)
	}
	// The same tree against an allocation it exceeds more than twice: the
	// first pass kills it, before any process is a pass old.
	m2 := yarntest.NewMonitor(srv)
	m2.VmemCheck = false
	const id2 = "container_1700000000000_0042_01_000005"
	m2.Watch(id2, j.PID, int64(rss>>20)/3)
	m2.Pass()
	if c := listed(t, srv, id2); c.ExitCode != yarn.ExitKilledPmem {
		t.Errorf("a tree over twice its allocation not killed at the first pass: %+v", c)
	}
	j.ExitCode(t, 30*time.Second)
}

// Spark's release (through the ResourceManager, -106) and an
// ApplicationMaster's stop (-105) are no memory kills; the NodeManager
// lists them KILLING, then DONE.
func TestReleaseAndStop(t *testing.T) {
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.Launch("container_1700000000000_0042_01_000006", 1024)
	srv.Launch("container_1700000000000_0042_01_000007", 1024)
	srv.Release("container_1700000000000_0042_01_000006")
	srv.StopByAM("container_1700000000000_0042_01_000007")
	if c := listed(t, srv, "container_1700000000000_0042_01_000006"); c.ExitCode != yarn.ExitKilledByRM || c.State != yarn.StateKilling ||
		yarn.ParseDiagnostics(c.Diagnostics).Kind != yarn.KillNone || !strings.Contains(c.Diagnostics, "]Container Killed by ResourceManager\n") {
		t.Errorf("release: %+v", c)
	}
	if c := listed(t, srv, "container_1700000000000_0042_01_000007"); c.ExitCode != yarn.ExitKilledByAppMaster || yarn.ParseDiagnostics(c.Diagnostics).Kind != yarn.KillNone {
		t.Errorf("stop: %+v", c)
	}
	testenv.WaitFor(t, 10*time.Second, "DONE after the clean-up", func() bool {
		return listed(t, srv, "container_1700000000000_0042_01_000006").State == yarn.StateDone
	})
}

// Long2String as TraditionalBinaryPrefix writes sizes.
func TestLong2String(t *testing.T) {
	for n, want := range map[uint64]string{512: "512", 448 << 20: "448 M", 1536 << 20: "1.5 G", 2 << 30: "2 G", 5905580032: "5.5 G",
		(1 << 30) - 1: "1.0 G", 1023 << 10: "1023 K"} {
		if got := yarntest.Long2String(n); got != want {
			t.Errorf("Long2String(%d) = %q, want %q", n, got, want)
		}
	}
}

// checkLaunch: the JVM carries its container as a NodeManager's would.
func checkLaunch(t *testing.T, pid int, id string, l yarntest.ContainerLaunch) {
	t.Helper()
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.Contains(string(env), "CONTAINER_ID="+id+"\x00") || cwd != l.Dir || !strings.HasSuffix(cwd, "/appcache/"+app+"/"+id) ||
		!strings.Contains(string(cmdline), "-Dspark.yarn.app.container.log.dir="+l.LogDir) ||
		!strings.Contains(string(cmdline), "\x00"+testjvm.YarnExecutorClass+"\x00--driver-url\x00") {
		t.Errorf("launch: cwd %q, environ has CONTAINER_ID %v, cmdline %q", cwd, strings.Contains(string(env), "CONTAINER_ID="+id), cmdline)
	}
}

// Strict cgroup enforcement: the container's cgroup limit is its
// allocation, the polling check is off, and the kernel kills. The
// NodeManager then reports exit 137 "Killed by external signal", which is
// no NodeManager kill: the exporter's kernel OOM attribution decides.
func TestStrictCgroupKernelKill(t *testing.T) {
	testjvm.RequireJava(t)
	const id = "container_1700000000000_0042_01_000008"
	cg := testenv.NewMemoryCgroup(t, 256<<20)
	srv := yarntest.NewServer()
	defer srv.Close()
	l, err := yarntest.Launch(t.TempDir(), "yarn", app, id)
	if err != nil {
		t.Fatal(err)
	}
	j := testjvm.Start(t, testjvm.Options{Cgroup: cg.Procs(), Prelude: l.Prelude,
		JVMArgs: append(l.JVMArgs, "-Xmx64m", "-XX:MaxDirectMemorySize=2g", "-XX:+UseSerialGC"),
		Args:    []string{"--leak", "--kind", "direct-large", "--target-mb", "1024", "--rate-mb-s", "64", "--step-mb", "4"}})
	m := yarntest.NewMonitor(srv)
	m.Interval, m.Strict = 200*time.Millisecond, true
	// An allocation under the cgroup's limit: a polling check, were it
	// on, would kill before the kernel.
	m.Watch(id, j.PID, 128)
	m.Start()
	defer m.Stop()
	if code := j.ExitCode(t, 60*time.Second); code != 137 {
		t.Fatalf("JVM exit %d, want 137 (the kernel's SIGKILL)", code)
	}
	if n := cg.OOMKills(t); n == 0 {
		t.Fatal("no OOM kill in the container's cgroup")
	}
	if c := listed(t, srv, id); c.State != "RUNNING" {
		t.Fatalf("the monitor judged a strict container: %+v", c)
	}
	srv.Exited(id, 137)
	c := listed(t, srv, id)
	if k := yarn.ParseDiagnostics(c.Diagnostics); c.ExitCode != 137 || k.Kind != yarn.KillSignal {
		t.Errorf("after the kernel's kill: exit %d, parsed %+v", c.ExitCode, k)
	}
}
