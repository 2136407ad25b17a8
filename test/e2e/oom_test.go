package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// requireKmsg stops the test when the kernel log cannot be read.
func requireKmsg(t *testing.T) {
	t.Helper()
	f, err := os.Open("/dev/kmsg")
	if err != nil {
		testenv.Unavailable(t, "/dev/kmsg unreadable: %v", err)
	}
	f.Close()
}

// oomCase is one real kernel OOM kill of the stand-in executor.
type oomCase struct {
	name       string
	jvmArgs    []string
	workerArgs []string
}

type oomResult struct {
	exporter        *exporter
	executor        *testjvm.JVM
	sentinel        *testjvm.JVM
	cgroup          testenv.MemoryCgroup
	nodeKillsBefore float64
}

const oomCgroupLimit = 256 << 20

// runOOMCase starts the exporter, a small sentinel JVM and the stand-in
// executor in a 256 MiB memory cgroup, and waits until the kernel kills
// the executor. The sentinel (the executor has oom_score_adj 1000, so the
// sentinel is not the victim) keeps the cgroup in the JVM collector's view
// after the kill.
func runOOMCase(t *testing.T, tc oomCase, exporterArgs ...string) oomResult {
	t.Helper()
	testenv.RequireRoot(t)
	requireKmsg(t)
	testjvm.RequireJava(t)
	cg := testenv.NewMemoryCgroup(t, oomCgroupLimit)

	e := startExporter(t, append([]string{"--jvm.sample-interval=500ms", "--cloud.provider=none"}, exporterArgs...)...)
	sentinel := startSentinel(t, e, cg)
	before, ok := findSample(e.scrape(t), "executor_node_oom_kills_total", nil)
	if !ok {
		t.Fatal("no executor_node_oom_kills_total before the kill")
	}

	executor := testjvm.Start(t, testjvm.Options{
		Cgroup: cg.Procs(),
		// Raising one's own score needs no privilege (lowering the
		// sentinel's would need CAP_SYS_RESOURCE): the executor is the
		// victim, whatever the sentinel holds.
		Prelude: "echo 1000 > /proc/self/oom_score_adj && ",
		JVMArgs: tc.jvmArgs,
		Args: append([]string{"--executor-id", "3", "--app-id", "app-oom-test", "--exit-after-s", "120",
			"--step-mb", "4", "--step-ms", "100"}, tc.workerArgs...),
	})
	started := time.Now()
	select {
	case <-executor.Done():
	case <-time.After(90 * time.Second):
		t.Fatal("the executor was not OOM-killed within 90 s")
	}
	var exit *exec.ExitError
	if !errors.As(executor.Err(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the executor ended with %v, want killed by SIGKILL", executor.Err())
	}
	t.Logf("the kernel killed the executor %.1fs after it started allocating", time.Since(started).Seconds())
	if n := cg.OOMKills(t); n < 1 {
		t.Fatalf("the cgroup counts %d OOM kills; the executor died of something else", n)
	}
	return oomResult{exporter: e, executor: executor, sentinel: sentinel, cgroup: cg, nodeKillsBefore: before}
}

// checkCounters checks what the other collectors report of the same kill.
func (r oomResult) checkCounters(t *testing.T) {
	t.Helper()
	families := r.exporter.scrape(t)
	if after, _ := findSample(families, "executor_node_oom_kills_total", nil); after < r.nodeKillsBefore+1 {
		t.Errorf("executor_node_oom_kills_total went from %v to %v, want +1 at least", r.nodeKillsBefore, after)
	}
	sentinel := r.sentinel
	select {
	case <-sentinel.Done():
		// A second kill while the executor's memory was being freed took
		// the sentinel too (a loaded machine has seen it): the cgroup
		// keeps its count, which a new sentinel reads.
		t.Logf("the sentinel ended too (%v): a new one reads the cgroup", sentinel.Err())
		sentinel = startSentinel(t, r.exporter, r.cgroup)
	default:
	}
	testenv.WaitFor(t, 30*time.Second, "executor_container_oom_kills_total of the sentinel's cgroup to count the kill", func() bool {
		v, ok := findSample(r.exporter.scrape(t), "executor_container_oom_kills_total", map[string]string{"pid": strconv.Itoa(sentinel.PID)})
		return ok && v >= 1
	})
	logs := r.exporter.Logs()
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "OOM kill") {
			t.Logf("exporter: %s", line)
		}
	}
	if !strings.Contains(logs, "OOM kill: Spark executor 3 of app-oom-test (pid "+strconv.Itoa(r.executor.PID)+")") {
		t.Errorf("no kill line naming the executor in the exporter's log:\n%s", logs)
	}
}

// startSentinel starts a small idle JVM in cg and waits until the
// exporter reads its cgroup.
func startSentinel(t *testing.T, e *exporter, cg testenv.MemoryCgroup) *testjvm.JVM {
	t.Helper()
	j := testjvm.Start(t, testjvm.Options{
		MainClass: testjvm.IdleClass,
		JVMArgs:   []string{"-Xmx16m", "-XX:+UseSerialGC", "-Xss256k"},
		Cgroup:    cg.Procs(),
	})
	jvmSample(t, e, j.PID, "executor_container_oom_kills_total", nil)
	return j
}

func killLabels(r oomResult, cause string) map[string]string {
	return map[string]string{
		"pid": strconv.Itoa(r.executor.PID), "role": "executor", "executor_id": "3", "app_id": "app-oom-test",
		"constraint": "CONSTRAINT_MEMCG", "cause": cause, "task": "java",
	}
}

// TestOOMKillNative: direct buffers fill a 256 MiB container while the
// 64 MiB heap has room; the kernel kills the executor; a real Prometheus
// scraping the exporter sees increase() > 0 on the first kill, and the
// verdict is native.
func TestOOMKillNative(t *testing.T) {
	testenv.RequireRoot(t)
	prom := startPrometheus(t, promConfig{RulesDir: filepath.Join(testenv.RepoRoot(), "mixin", "generated")})
	r := runOOMCase(t, oomCase{
		name:       "native",
		jvmArgs:    []string{"-Xmx64m", "-XX:MaxDirectMemorySize=1g"},
		workerArgs: []string{"--direct-mb", "400"},
	})
	prom.scrape(t, r.exporter.Addr)

	// Only Prometheus scrapes the exporter until the alert expression
	// holds: the test's own scrapes would take the series' first, zero,
	// reading away from it.
	query := `increase(executor_oom_kills_total{executor_id="3",app_id="app-oom-test",cause="native"}[1m]) > 0`
	killed := time.Now()
	testenv.WaitFor(t, 60*time.Second, "Prometheus: "+query, func() bool { return len(prom.query(t, query)) > 0 })
	t.Logf("%s held %.1fs after the kill", query, time.Since(killed).Seconds())
	alert := `ALERTS{alertname="ExecutorOOMKilled",alertstate="firing",executor_id="3",app_id="app-oom-test",cause="native"}`
	testenv.WaitFor(t, 30*time.Second, "the mixin's alert "+alert, func() bool { return len(prom.query(t, alert)) > 0 })
	first := prom.query(t, `executor_oom_kills_total{executor_id="3",app_id="app-oom-test"}[5m]`)
	if len(first) != 1 || len(first[0].Values) < 2 || first[0].Values[0][1] != "0" {
		t.Errorf("in Prometheus the victim's series should start at 0 and then count: %+v", first)
	}

	families := r.exporter.scrape(t)
	if v, ok := findSample(families, "executor_oom_kills_total", killLabels(r, "native")); !ok || v != 1 {
		t.Errorf("executor_oom_kills_total%v = %v, %v; want 1\n%s", killLabels(r, "native"), v, ok, r.exporter.scrapeText(t))
	}
	r.checkCounters(t)
	promtoolCheckMetrics(t, r.exporter.scrapeText(t))
}

// TestOOMKillHeap: -Xmx1g in a 256 MiB container, the heap grows until the
// kernel kills the executor; the verdict is heap.
func TestOOMKillHeap(t *testing.T) {
	r := runOOMCase(t, oomCase{
		name:       "heap",
		jvmArgs:    []string{"-Xmx1g", "-XX:-AlwaysPreTouch"},
		workerArgs: []string{"--heap-mb", "600"},
	})
	labels := killLabels(r, "heap")
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("executor_oom_kills_total%v = 1", labels), func() bool {
		v, ok := findSample(r.exporter.scrape(t), "executor_oom_kills_total", labels)
		return ok && v == 1
	})
	r.checkCounters(t)
}

// TestOOMKmsgUnreadable: with a kernel log it cannot open, the exporter
// reports the oom collector failed, says why once, and the rest works —
// vmstat still counts kills.
func TestOOMKmsgUnreadable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "kmsg")
	e := startExporter(t, "--oom.kmsg-path="+missing, "--cloud.provider=none")
	var families map[string]*dto.MetricFamily
	testenv.WaitFor(t, 30*time.Second, `executor_scrape_collector_success{collector="oom"} 0`, func() bool {
		families = e.scrape(t)
		v, ok := findSample(families, "executor_scrape_collector_success", map[string]string{"collector": "oom"})
		return ok && v == 0
	})
	if v, ok := findSample(families, "executor_scrape_collector_success", map[string]string{"collector": "memory"}); !ok || v != 1 {
		t.Errorf(`executor_scrape_collector_success{collector="memory"} = %v, %v; want 1`, v, ok)
	}
	if _, ok := findSample(families, "executor_node_oom_kills_total", nil); !ok {
		t.Error("executor_node_oom_kills_total missing while the kernel log is unreadable")
	}
	for i := 0; i < 3; i++ {
		e.scrape(t)
	}
	if n := strings.Count(e.Logs(), "cannot read the kernel log"); n != 1 {
		t.Errorf("the oom collector said %d times that it cannot read the kernel log, want once:\n%s", n, e.Logs())
	}
}
