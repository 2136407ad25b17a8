package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/statuspage"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
	"github.com/executor-exporter/executor_exporter/internal/yarn/yarntest"
)

const yarnApp = "application_1700000000000_0042"

// yarnContainer is a stand-in executor launched as a YARN container: the
// NodeManager's launch (CONTAINER_ID, working directory, log directory),
// YarnCoarseGrainedExecutorBackend with YARN's arguments, no cgroup limit
// unless cg is given.
type yarnContainer struct {
	id  string
	mb  int64
	jvm *testjvm.JVM
}

func startYARNContainer(t *testing.T, appID, id, executorID string, mb int64, cg string, prelude string, jvmArgs, args []string) yarnContainer {
	t.Helper()
	l, err := yarntest.Launch(t.TempDir(), "yarn", appID, id)
	if err != nil {
		t.Fatal(err)
	}
	j := testjvm.Start(t, testjvm.Options{MainClass: testjvm.YarnExecutorClass, Cgroup: cg, Prelude: l.Prelude + prelude,
		JVMArgs: append(l.JVMArgs, jvmArgs...), Args: append(testjvm.YarnExecutorArgs(appID, executorID), args...)})
	return yarnContainer{id: id, mb: mb, jvm: j}
}

// startYARNExporter runs the built exporter against the stand-in
// NodeManager and ResourceManager, with an empty Hadoop configuration
// directory (YARN's defaults; the URLs come from the flags).
func startYARNExporter(t *testing.T, nm, rm string, extra ...string) *exporter {
	t.Helper()
	return startYARNExporterSite(t, nm, rm, nil, extra...)
}

// startYARNExporterSite is startYARNExporter with these properties in the
// configuration directory's yarn-site.xml.
func startYARNExporterSite(t *testing.T, nm, rm string, props map[string]string, extra ...string) *exporter {
	t.Helper()
	dir := t.TempDir()
	if len(props) > 0 {
		var b strings.Builder
		b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
		for k, v := range props {
			fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", k, v)
		}
		b.WriteString("</configuration>\n")
		if err := os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return startExporter(t, append([]string{"--jvm.sample-interval=500ms", "--cloud.provider=none", "--exits.new-series-hold=2s",
		"--yarn.conf-dir=" + dir, "--yarn.nodemanager.url=" + nm, "--yarn.resourcemanager.url=" + rm}, extra...)...)
}

// pollingSite: strict enforcement off, no cgroups: the monitor of every
// Hadoop 3 line polls (YARN-11967's way round).
var pollingSite = map[string]string{"yarn.nodemanager.resource.memory.enforced": "false"}

// exitOf waits until e counts j's end once, under a reason, and returns
// the reason and the exit's labels.
func exitOf(t *testing.T, e *exporter, c yarnContainer) map[string]string {
	t.Helper()
	var got map[string]string
	testenv.WaitFor(t, 90*time.Second, "the exporter to count container "+c.id+"'s end", func() bool {
		mf := e.scrape(t)["executor_jvm_exits_total"]
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, map[string]string{"pid": strconv.Itoa(c.jvm.PID)}) && metricValue(m) == 1 {
				got = map[string]string{}
				for _, lp := range m.GetLabel() {
					got[lp.GetName()] = lp.GetValue()
				}
				return true
			}
		}
		return false
	})
	return got
}

// logLineOf returns the exporter's log line about the JVM's end.
func logLineOf(e *exporter, pid int) string {
	for _, l := range strings.Split(e.Logs(), "\n") {
		if strings.Contains(l, "JVM ended:") && strings.Contains(l, "(pid "+strconv.Itoa(pid)+")") {
			return l
		}
	}
	return ""
}

// TestYARNContainers runs the built exporter against the stand-in
// NodeManager and ResourceManager of Hadoop 3.3 while the stand-in's
// Monitor enforces the polling rule (both checks on, ratio 2.1, strict
// enforcement off in yarn-site.xml so that 3.3's monitor polls) on four
// real executor containers without a cgroup limit: one leaking direct
// buffers past its allocation (killed -104), one whose threads' stacks
// take its address space past 2.1 × its allocation (killed -103), one
// Spark releases through the ResourceManager (-106), and one killed -104
// whose diagnostics the NodeManager cut from the front (a small
// container-diagnostics-maximum-size), header and all.
func TestYARNContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs and the exporter")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.AddApp(yarnApp, "nightly-etl", "etl")
	e := startYARNExporterSite(t, srv.URL, srv.URL, pollingSite)

	// Small reservations and two malloc arenas, so that the tree's
	// resident memory passes the allocation before its address space
	// passes 2.1 × it and the vmem check, which comes first, lets the pmem
	// check kill.
	small := []string{"-Xmx64m", "-XX:+UseSerialGC", "-XX:CompressedClassSpaceSize=16m", "-XX:ReservedCodeCacheSize=16m",
		"-XX:MaxDirectMemorySize=2g"}
	pmem := startYARNContainer(t, yarnApp, "container_1700000000000_0042_01_000002", "1", 512, "", "export MALLOC_ARENA_MAX=2 && ",
		small, []string{"--leak", "--kind", "direct-large", "--target-mb", "1536", "--rate-mb-s", "32", "--step-mb", "4", "--on-signal", "USR1"})
	// A JVM's usual reservations with 4 MiB stacks: 64 threads a second add
	// 256 MiB of address space and little resident memory.
	vmem := startYARNContainer(t, yarnApp, "container_1700000000000_0042_01_000003", "2", 1536, "", "",
		[]string{"-Xmx64m", "-Xss4m"}, []string{"--leak", "--kind", "threads", "--stack-kb", "16", "--target-mb", "12",
			"--step-mb", "0.25", "--rate-mb-s", "1", "--on-signal", "USR1"})
	released := startYARNContainer(t, yarnApp, "container_1700000000000_0042_01_000004", "3", 1024, "", "export MALLOC_ARENA_MAX=2 && ",
		small, []string{"--heap-mb", "8", "--exit-after-s", "300"})
	cut := startYARNContainer(t, yarnApp, "container_1700000000000_0042_01_000005", "4", 384, "", "export MALLOC_ARENA_MAX=2 && ",
		small, []string{"--leak", "--kind", "direct-large", "--target-mb", "1024", "--rate-mb-s", "32", "--step-mb", "4", "--on-signal", "USR1"})
	srv.SetDiagnosticsMax(cut.id, 300)
	all := []yarnContainer{pmem, vmem, released, cut}
	m := yarntest.NewMonitor(srv)
	m.Interval = time.Second
	for _, c := range all {
		m.Watch(c.id, c.jvm.PID, c.mb) // lists each RUNNING with its allocation
	}

	// d: without a cgroup limit, each executor's budget is its
	// container's allocation, in /metrics and on the status page.
	t.Run("d_budget_is_allocation", func(t *testing.T) {
		for _, c := range all {
			pid := strconv.Itoa(c.jvm.PID)
			var last float64
			testenv.WaitFor(t, time.Minute, "container "+c.id+"'s allocation in /metrics", func() bool {
				v, ok := findSample(e.scrape(t), "executor_container_memory_limit_bytes", map[string]string{"pid": pid})
				last = v
				return ok && v == float64(c.mb<<20)
			})
			var j *statuspage.JVM
			testenv.WaitFor(t, 30*time.Second, "container "+c.id+"'s budget on the status page", func() bool {
				j = findJVM(getStatus(t, e), c.jvm.PID)
				return j != nil && j.ContainerLimit == uint64(c.mb)<<20 && j.ContainerUsage > 0
			})
			t.Logf("%s: limit %v in /metrics, %d MiB of %d MiB on the status page", c.id, last, j.ContainerUsage>>20, j.ContainerLimit>>20)
		}
	})

	// e: the application's name is the ResourceManager's, on
	// executor_jvm_info in the label right-sizing reads; its container
	// label is the YARN container.
	t.Run("e_app_name_and_container", func(t *testing.T) {
		for _, c := range all {
			pid := strconv.Itoa(c.jvm.PID)
			testenv.WaitFor(t, 30*time.Second, "container "+c.id+"'s executor_jvm_info with its container and application name", func() bool {
				_, ok := findSample(e.scrape(t), "executor_jvm_info", map[string]string{"pid": pid, "container": c.id,
					"main_class": testjvm.YarnExecutorClass, "app_id": yarnApp, "label_spark_app_name": "nightly-etl"})
				return ok
			})
		}
	})
	if t.Failed() {
		return
	}

	m.Start()
	defer m.Stop()
	// 3.3's rule on these settings: the monitor polls, both checks.
	if _, ok := findSample(e.scrape(t), "executor_yarn_memory_enforcement_info", map[string]string{"rule": "3.3", "enforcer": "polling",
		"why": "polling_checks", "yarn_11967": "no"}); !ok {
		t.Errorf("executor_yarn_memory_enforcement_info does not say 3.3's monitor polls")
	}
	_ = syscall.Kill(pmem.jvm.PID, syscall.SIGUSR1)
	_ = syscall.Kill(vmem.jvm.PID, syscall.SIGUSR1)
	_ = syscall.Kill(cut.jvm.PID, syscall.SIGUSR1)
	// Spark gives the third back (YarnAllocator.killExecutor): the
	// ResourceManager has the NodeManager stop it (SIGTERM to its group),
	// listed -106.
	srv.Release(released.id)
	_ = syscall.Kill(-released.jvm.PID, syscall.SIGTERM)
	for _, c := range all {
		if code := c.jvm.ExitCode(t, 2*time.Minute); code != 143 && code != 137 {
			t.Errorf("container %s: exit %d, want a SIGTERM or SIGKILL end", c.id, code)
		}
	}

	// a: the native leak's kill is yarn_pmem_limit, from the NodeManager's
	// -104, with the region that grew and an overhead raise. 4 MiB direct
	// buffers are malloc's own mappings: native_mmap when a breakdown saw
	// them grow, direct_or_malloc when inferred.
	directRegion := func(r string) bool { return r == "native_mmap" || r == "direct_or_malloc" }
	t.Run("a_pmem_kill", func(t *testing.T) {
		got := exitOf(t, e, pmem)
		line := logLineOf(e, pmem.jvm.PID)
		t.Logf("log: %s", line)
		if got["reason"] != "yarn_pmem_limit" || got["container"] != pmem.id || got["app_id"] != yarnApp || !directRegion(got["region"]) {
			t.Errorf("counted %v, want reason yarn_pmem_limit, container %s, region native_mmap or direct_or_malloc", got, pmem.id)
		}
		if !strings.Contains(line, "reason yarn_pmem_limit: NodeManager exit status -104, ") {
			t.Errorf("the log line does not give the NodeManager's -104: %s", line)
		}
		if !strings.Contains(line, "raise spark.executor.memoryOverhead by ") || !strings.Contains(line, " region="+got["region"]) {
			t.Errorf("the log line lacks the region or the overhead raise: %s", line)
		}
		if strings.Contains(line, " 0 MiB of mapped files") {
			t.Errorf("the log line blames an over-count on no mapped files: %s", line)
		}
		if x := findExit(getStatus(t, e), pmem.jvm.PID); x == nil || x.Reason != "yarn_pmem_limit" || !directRegion(x.Region) ||
			!strings.Contains(x.Detail, "raise spark.executor.memoryOverhead by ") {
			t.Errorf("on the status page: %+v", x)
		}
	})

	// b: the vmem kill is yarn_vmem_limit, from the NodeManager's -103, with
	// the configuration advice and no more memory.
	t.Run("b_vmem_kill", func(t *testing.T) {
		got := exitOf(t, e, vmem)
		line := logLineOf(e, vmem.jvm.PID)
		t.Logf("log: %s", line)
		if got["reason"] != "yarn_vmem_limit" || got["container"] != vmem.id || got["region"] != "" {
			t.Errorf("counted %v, want reason yarn_vmem_limit, container %s, no region", got, vmem.id)
		}
		if !strings.Contains(line, "reason yarn_vmem_limit: NodeManager exit status -103, ") ||
			!strings.Contains(line, "yarn.nodemanager.vmem-check-enabled=false") || !strings.Contains(line, "yarn.nodemanager.vmem-pmem-ratio") ||
			strings.Contains(line, "raise spark.executor.memoryOverhead") {
			t.Errorf("the log line: %s", line)
		}
		if x := findExit(getStatus(t, e), vmem.jvm.PID); x == nil || x.Reason != "yarn_vmem_limit" ||
			!strings.Contains(x.Detail, "vmem-check-enabled=false") || !strings.Contains(x.Detail, "vmem-pmem-ratio") {
			t.Errorf("on the status page: %+v", x)
		}
	})

	// c: Spark's release (-106) is no memory kill, and says so.
	t.Run("c_release_no_memory_kill", func(t *testing.T) {
		got := exitOf(t, e, released)
		line := logLineOf(e, released.jvm.PID)
		t.Logf("log: %s", line)
		if r := got["reason"]; strings.HasPrefix(r, "yarn_") || r == "oom_killed" || r == "" || got["container"] != released.id {
			t.Errorf("counted %v, want no memory kill, container %s", got, released.id)
		}
		if !strings.Contains(line, "released through the ResourceManager (exit status -106") || strings.Contains(line, "memoryOverhead") {
			t.Errorf("the log line does not name the release or gives memory advice: %s", line)
		}
	})

	// d: the header was cut away with the front of the diagnostics: the
	// exit status still says the monitor killed it.
	t.Run("d_header_cut_from_the_front", func(t *testing.T) {
		got := exitOf(t, e, cut)
		line := logLineOf(e, cut.jvm.PID)
		t.Logf("log: %s", line)
		if got["reason"] != "yarn_pmem_limit" || !strings.Contains(line, "NodeManager exit status -104, over its 384 MiB physical limit") {
			t.Errorf("counted %v; log %s; want yarn_pmem_limit from the exit status", got, line)
		}
	})
}

// TestYARNAPIFailures: a NodeManager and ResourceManager that are down,
// hang, answer 403 or send 50 MB of garbage leave scrapes as they were
// (fast, every other family there) and are counted in
// executor_yarn_request_errors_total.
func TestYARNAPIFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM and the exporter")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	srv := yarntest.NewServer()
	defer srv.Close()
	down := "http://" + testenv.FreeAddr(t)
	e := startYARNExporter(t, srv.URL, srv.URL, "--yarn.timeout=20s", "--yarn.poll-interval=1s")
	j := startYARNContainer(t, yarnApp, "container_1700000000000_0042_01_000009", "9", 512, "", "", []string{"-Xmx64m"},
		[]string{"--heap-mb", "8", "--exit-after-s", "300"})
	srv.Launch(j.id, j.mb)
	testenv.WaitFor(t, time.Minute, "the exporter to read the container", func() bool {
		_, ok := findSample(e.scrape(t), "executor_container_memory_limit_bytes", map[string]string{"pid": strconv.Itoa(j.jvm.PID)})
		return ok
	})
	healthy := e.scrape(t)

	errorsOf := func(t *testing.T, target, kind string) float64 {
		v, _ := findSample(e.scrape(t), "executor_yarn_request_errors_total", map[string]string{"target": target, "kind": kind})
		return v
	}
	check := func(t *testing.T, what string) {
		t.Helper()
		start := time.Now()
		f := e.scrape(t)
		// A scrape that waited on the NodeManager would take the 20 s
		// timeout.
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: a scrape took %v", what, d)
		}
		for name := range healthy {
			if _, ok := f[name]; !ok && !strings.HasPrefix(name, "executor_yarn_containers") {
				t.Errorf("%s: %s missing from the scrape", what, name)
			}
		}
		if _, ok := findSample(f, "executor_jvm_info", map[string]string{"pid": strconv.Itoa(j.jvm.PID)}); !ok {
			t.Errorf("%s: the executor is gone from the scrape", what)
		}
		if v, _ := findSample(f, "executor_scrape_collector_success", map[string]string{"collector": "yarn"}); v != 1 {
			t.Errorf("%s: the yarn collector failed the scrape", what)
		}
	}
	for _, tc := range []struct{ mode, kind string }{
		{yarntest.ModeForbidden, "http_403"},
		{yarntest.ModeHang, "timeout"},
		{yarntest.ModeGarbage, "too_large"},
	} {
		t.Run("f_nodemanager_"+tc.mode, func(t *testing.T) {
			before := errorsOf(t, "nodemanager", tc.kind)
			srv.SetMode(tc.mode)
			defer srv.SetMode(yarntest.ModeOK)
			// Every scrape while the NodeManager misbehaves is checked,
			// over the whole of a hang's timeout.
			testenv.WaitFor(t, time.Minute, fmt.Sprintf("a %s NodeManager counted as %s", tc.mode, tc.kind), func() bool {
				check(t, tc.mode)
				return errorsOf(t, "nodemanager", tc.kind) > before
			})
			if v, _ := findSample(e.scrape(t), "executor_yarn_nodemanager_up", nil); v != 0 {
				t.Errorf("executor_yarn_nodemanager_up %v, want 0", v)
			}
			srv.SetMode(yarntest.ModeOK)
			testenv.WaitFor(t, time.Minute, "the NodeManager read again after "+tc.mode, func() bool {
				v, _ := findSample(e.scrape(t), "executor_yarn_nodemanager_up", nil)
				return v == 1
			})
		})
	}

	// Down: nothing listens at either address.
	t.Run("f_down", func(t *testing.T) {
		e2 := startYARNExporter(t, down, down, "--yarn.poll-interval=1s")
		testenv.WaitFor(t, time.Minute, "a NodeManager that is down counted", func() bool {
			v, _ := findSample(e2.scrape(t), "executor_yarn_request_errors_total", map[string]string{"target": "nodemanager", "kind": "down"})
			return v > 0
		})
		start := time.Now()
		f := e2.scrape(t)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("a scrape took %v", d)
		}
		if _, ok := findSample(f, "executor_jvm_info", map[string]string{"pid": strconv.Itoa(j.jvm.PID)}); !ok {
			t.Errorf("the executor is missing from the scrape")
		}
	})
}
