package e2e

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
	"github.com/executor-exporter/executor_exporter/internal/yarn/yarntest"
)

// TestYARNStockHadoop33: the stand-in NodeManager as Apache Hadoop 3.3.6
// on YARN's defaults (an empty configuration directory: no memory
// cgroups, resource.memory.enforced true). Its monitor switches the
// polling check off and no cgroup limit is written (YARN-11967): the
// exporter says nothing enforces, counts an idle node up in each of the
// three forms its list takes, and infers no YARN kill for an executor
// killed past its allocation while the NodeManager's word is not read.
func TestYARNStockHadoop33(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM and the exporter")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.AddApp(yarnApp, "nightly-etl", "etl")
	e := startYARNExporter(t, srv.URL, srv.URL, "--yarn.poll-interval=500ms")

	t.Run("no_enforcement", func(t *testing.T) {
		testenv.WaitFor(t, 30*time.Second, "the rule read from the node info", func() bool {
			_, ok := findSample(e.scrape(t), "executor_yarn_memory_enforcement_info", map[string]string{"rule": "3.3", "enforcer": "none",
				"why": "strict_without_cgroups", "yarn_11967": "no"})
			return ok
		})
		f := e.scrape(t)
		for _, check := range []string{"pmem", "vmem"} {
			if v, ok := findSample(f, "executor_yarn_memory_check_enabled", map[string]string{"check": check}); !ok || v != 0 {
				t.Errorf("executor_yarn_memory_check_enabled{check=%q} %v, %v; want 0", check, v, ok)
			}
		}
	})

	// An idle node: Hadoop 2's null, Hadoop 3's {}, trunk's "".
	t.Run("idle_node_up", func(t *testing.T) {
		for _, form := range []string{yarntest.IdleNull, yarntest.IdleEmpty, yarntest.IdleJersey2} {
			srv.SetIdle(form)
			polls := srv.Requests("/ws/v1/node/containers")
			testenv.WaitFor(t, 30*time.Second, "two polls of "+form, func() bool { return srv.Requests("/ws/v1/node/containers") >= polls+2 })
			f := e.scrape(t)
			up, _ := findSample(f, "executor_yarn_nodemanager_up", nil)
			parse, _ := findSample(f, "executor_yarn_request_errors_total", map[string]string{"target": "nodemanager", "kind": "parse"})
			if up != 1 || parse != 0 || len(f["executor_yarn_containers"].GetMetric()) != 0 {
				t.Errorf("%s: up %v, %v parse errors, %d container states; want up with none", form, up, parse, len(f["executor_yarn_containers"].GetMetric()))
			}
		}
	})
	if t.Failed() {
		return
	}

	// An executor past its allocation, then SIGKILLed while the
	// NodeManager does not answer: nothing here enforces, so the end is
	// no inferred YARN kill.
	t.Run("no_inferred_kill", func(t *testing.T) {
		c := startYARNContainer(t, yarnApp, "container_1700000000000_0042_01_000011", "11", 128, "", "export MALLOC_ARENA_MAX=2 && ",
			[]string{"-Xmx64m", "-XX:+UseSerialGC", "-XX:MaxDirectMemorySize=1g"},
			[]string{"--leak", "--kind", "direct-large", "--target-mb", "256", "--rate-mb-s", "64", "--step-mb", "4", "--exit-after-s", "300"})
		srv.Launch(c.id, c.mb)
		pid := strconv.Itoa(c.jvm.PID)
		testenv.WaitFor(t, time.Minute, "the executor's tree over its 128 MiB allocation", func() bool {
			v, ok := findSample(e.scrape(t), "executor_process_resident_memory_bytes", map[string]string{"pid": pid, "kind": "jvm"})
			return ok && v > 160<<20
		})
		srv.SetMode(yarntest.ModeForbidden)
		defer srv.SetMode(yarntest.ModeOK)
		time.Sleep(time.Second) // a sample over the allocation, seconds before the end
		_ = syscall.Kill(-c.jvm.PID, syscall.SIGKILL)
		got := exitOf(t, e, c)
		line := logLineOf(e, c.jvm.PID)
		t.Logf("log: %s", line)
		if got["reason"] != "killed" || strings.Contains(line, "inferred") {
			t.Errorf("counted %v, want killed, nothing inferred", got)
		}
	})
}

// TestYARNExternalKills: exit 137 with "Killed by external signal" is
// never the NodeManager's pmem kill. Under elastic control (memory cgroups
// on, elastic on, Hadoop 3.3: the monitor polls as well) the handler's
// SIGKILL to a container in its own cgroup is yarn_elastic_oom, named by
// the container's cgroup; on a node without it, or for a JVM outside its
// container's cgroup, the same end is someone's kill, with no evidence of
// whose.
func TestYARNExternalKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs and the exporter")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.AddApp(yarnApp, "nightly-etl", "etl")
	elastic := startYARNExporterSite(t, srv.URL, srv.URL, map[string]string{"yarn.nodemanager.resource.memory.enabled": "true",
		"yarn.nodemanager.elastic-memory-control.enabled": "true", "yarn.nodemanager.resource.memory.enforced": "false",
		"yarn.nodemanager.vmem-check-enabled": "false"})
	plain := startYARNExporterSite(t, srv.URL, srv.URL, pollingSite)

	// YARN's hierarchy: a cgroup for the NodeManager, one per container.
	const inCg, agent = "container_1700000000000_0042_01_000012", "container_1700000000000_0042_01_000013"
	yarnCg := testenv.NewMemoryCgroup(t, 4<<30)
	cg := yarnCg.Child(t, inCg, 4<<30)
	args := []string{"--heap-mb", "8", "--exit-after-s", "300"}
	c := startYARNContainer(t, yarnApp, inCg, "12", 512, cg.Procs(), "", []string{"-Xmx64m"}, args)
	a := startYARNContainer(t, yarnApp, agent, "13", 512, "", "", []string{"-Xmx64m"}, args)
	srv.Launch(c.id, c.mb)
	srv.Launch(a.id, a.mb)
	testenv.WaitFor(t, time.Minute, "the elastic rule and both executors read", func() bool {
		f := elastic.scrape(t)
		_, rule := findSample(f, "executor_yarn_memory_enforcement_info", map[string]string{"rule": "3.3", "enforcer": "polling+elastic"})
		_, one := findSample(f, "executor_container_memory_limit_bytes", map[string]string{"pid": strconv.Itoa(c.jvm.PID)})
		_, two := findSample(plain.scrape(t), "executor_container_memory_limit_bytes", map[string]string{"pid": strconv.Itoa(a.jvm.PID)})
		return rule && one && two
	})
	// DefaultOOMHandler.sigKill: SIGKILL to what the container's cgroup
	// holds, through signalContainer; the NodeManager had not asked for a
	// kill and reads the end as external. A node agent does the same to
	// the other.
	for _, x := range []yarnContainer{c, a} {
		_ = syscall.Kill(-x.jvm.PID, syscall.SIGKILL)
		if code := x.jvm.ExitCode(t, time.Minute); code != 137 {
			t.Fatalf("%s: exit %d, want 137", x.id, code)
		}
		srv.Killed(x.id, 137)
	}

	got := exitOf(t, elastic, c)
	line := logLineOf(elastic, c.jvm.PID)
	t.Logf("elastic: %s", line)
	if got["reason"] != "yarn_elastic_oom" || !strings.Contains(line, "evidence: the container's cgroup "+cg.Path) {
		t.Errorf("the elastic handler's kill counted %v; log %s", got, line)
	}
	got = exitOf(t, plain, a)
	line = logLineOf(plain, a.jvm.PID)
	t.Logf("agent: %s", line)
	if got["reason"] != "killed" || !strings.Contains(line, "not the NodeManager") || !strings.Contains(line, "evidence: none") {
		t.Errorf("a node agent's kill counted %v; log %s", got, line)
	}
	// Under elastic control too, a JVM outside its container's cgroup was
	// not the handler's to kill.
	if got = exitOf(t, elastic, a); got["reason"] != "killed" {
		t.Errorf("under elastic control, the kill of a JVM outside its container's cgroup counted %v", got)
	}
}

// TestYARNStrictCgroupKernelKill: a container in a strict-mode memory
// cgroup whose limit is its allocation; the polling check is off and the
// kernel kills. The end is oom_killed as on any machine, with the
// container label the YARN container id.
func TestYARNStrictCgroupKernelKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM and a kernel OOM kill")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	requireKmsg(t)
	const mb = 256
	cg := testenv.NewMemoryCgroup(t, mb<<20)
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.AddApp(yarnApp, "nightly-etl", "etl")
	e := startYARNExporter(t, srv.URL, srv.URL)
	c := startYARNContainer(t, yarnApp, "container_1700000000000_0042_01_000008", "8", mb, cg.Procs(), "",
		[]string{"-Xmx1g", "-XX:-AlwaysPreTouch"}, []string{"--heap-mb", "600", "--step-mb", "4", "--step-ms", "100", "--exit-after-s", "300"})
	m := yarntest.NewMonitor(srv)
	m.Strict, m.Interval = true, time.Second
	m.Watch(c.id, c.jvm.PID, mb)
	m.Start()
	defer m.Stop()
	if code := c.jvm.ExitCode(t, 2*time.Minute); code != 137 {
		t.Fatalf("exit %d, want the kernel's SIGKILL", code)
	}
	if n := cg.OOMKills(t); n < 1 {
		t.Fatalf("the cgroup counts %d OOM kills; the JVM died of something else", n)
	}
	srv.Exited(c.id, 137) // "Container killed on request. Exit code is 137", "Killed by external signal"
	got := exitOf(t, e, c)
	if got["reason"] != "oom_killed" || got["container"] != c.id {
		t.Errorf("kernel kill in a strict cgroup counted %v, want oom_killed with container %s", got, c.id)
	}
	// Named by its evidence, the kernel's report (a matched kill decides
	// at once, before the NodeManager's "Killed by external signal" is
	// read).
	if line := logLineOf(e, c.jvm.PID); !strings.Contains(line, "reason oom_killed: kernel OOM kill") {
		t.Errorf("the log line: %s", line)
	}
}
