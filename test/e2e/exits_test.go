package e2e

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// TestExitsEndToEnd runs the built exporter twice on this machine — one
// told by the AWS metadata stand-in that a spot interruption is pending,
// one on a machine without a cloud — while four real executor stand-ins
// end: one SIGKILLed, one stopped with SIGTERM, one that fills its heap and
// exits 52 from its OutOfMemoryError handler as Spark does, one the kernel
// OOM-kills in its memory cgroup. Each exporter counts each end once, with
// the executor's identity and the reason its machine's state gives; Prometheus (Debian's 2 and the pinned 3) with the
// mixin's rules fires ExecutorHeapExhausted with the heap figures and the
// Spark setting to change.
func TestExitsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs, two exporters and Prometheus")
	}
	testjvm.RequireJava(t)
	// Two Prometheus servers scrape it: a new counter must read 0 long
	// enough for both to see the 0, or increase() misses the first end.
	plain := startExporter(t, "--jvm.sample-interval=500ms", "--cloud.provider=none", "--exits.new-series-hold=5s")
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	imds.Set(cloudtest.AWSInstanceTypePath, "r5.xlarge")
	imds.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2030-01-01T00:00:00Z"}`)
	spot := startExporter(t, "--jvm.sample-interval=500ms", "--cloud.provider=aws", "--cloud.aws.metadata-url="+imds.URL,
		"--cloud.interruption-poll-interval=1s")
	testenv.WaitFor(t, time.Minute, "the spot exporter to see the notice", func() bool {
		v, ok := findSample(spot.scrape(t), "executor_instance_interruption_pending", map[string]string{"event": "spot_interruption"})
		return ok && v == 1
	})
	rules := renderMixin(t, alertTestOverrides)
	proms := map[string]*promServer{}
	for name, bin := range prometheusBinaries(t) {
		proms[name] = startPrometheus(t, promConfig{Binary: bin, RulesDir: rules, Targets: []string{plain.Addr}})
	}

	// Each in a private /tmp, as in a container: a JVM of another test
	// starting in a shared /tmp would delete a killed one's file.
	start := func(id string, args ...string) *testjvm.JVM {
		return testjvm.Start(t, testjvm.InContainer(t, testjvm.Options{JVMArgs: []string{"-Xmx64m"},
			Args: append([]string{"--executor-id", id, "--app-id", "app-exits-e2e", "--exit-after-s", "300"}, args...)}))
	}
	killed := start("1", "--heap-mb", "8")
	stopped := start("2", "--heap-mb", "8")
	// Slow enough that Prometheus scrapes the heap on its way up: the
	// alert's description shows it.
	heap := start("3", "--spark-exit", "--heap-mb", "1000", "--step-mb", "1", "--step-ms", "400", "--churn")
	// The kernel OOM-kills the fourth: -Xmx1g in a 256 MiB memory cgroup.
	requireKmsg(t)
	cg := testenv.NewMemoryCgroup(t, 256<<20)
	oom := testjvm.Start(t, testjvm.InContainer(t, testjvm.Options{Cgroup: cg.Procs(), JVMArgs: []string{"-Xmx1g", "-XX:-AlwaysPreTouch"},
		Args: []string{"--executor-id", "4", "--app-id", "app-exits-e2e", "--exit-after-s", "300", "--heap-mb", "600", "--step-mb", "4", "--step-ms", "100"}}))
	// The description's heap figures are what Prometheus scraped while the
	// JVM lived; the heap fills in about 25 s, so each server scrapes it.
	for name, p := range proms {
		testenv.WaitFor(t, time.Minute, name+" to scrape the heap stand-in's heap", func() bool {
			got, err := p.tryQuery(`executor_jvm_memory_used_bytes{area="heap", pid="` + strconv.Itoa(heap.PID) + `"}`)
			return err == nil && len(got) > 0
		})
	}
	for _, j := range []*testjvm.JVM{killed, stopped} {
		testenv.WaitFor(t, time.Minute, "both exporters to sample the executors", func() bool {
			_, a := findSample(plain.scrape(t), "executor_jvm_info", map[string]string{"pid": strconv.Itoa(j.PID)})
			_, b := findSample(spot.scrape(t), "executor_jvm_info", map[string]string{"pid": strconv.Itoa(j.PID)})
			return a && b
		})
	}
	_ = syscall.Kill(killed.PID, syscall.SIGKILL)
	_ = syscall.Kill(stopped.PID, syscall.SIGTERM)
	if code := endOf(t, heap); code != 52 {
		t.Fatalf("the heap stand-in ended with %d, want 52", code)
	}
	endOf(t, killed)
	endOf(t, stopped)
	endOf(t, oom)
	if n := cg.OOMKills(t); n < 1 {
		t.Fatalf("the fourth stand-in's cgroup counts %d OOM kills; it died of something else", n)
	}

	for _, tc := range []struct {
		e    *exporter
		j    *testjvm.JVM
		id   string
		want string
	}{
		{plain, killed, "1", "killed"},
		{plain, stopped, "2", "exited"},
		{plain, heap, "3", "heap_exhausted"},
		{spot, killed, "1", "interrupted"},
		{spot, stopped, "2", "interrupted"},
		{spot, heap, "3", "heap_exhausted"}, // its own heap, notice or not
		{plain, oom, "4", "oom_killed"},
		{spot, oom, "4", "oom_killed"}, // the kernel's kill, notice or not
	} {
		labels := map[string]string{"pid": strconv.Itoa(tc.j.PID), "app_id": "app-exits-e2e", "executor_id": tc.id, "role": "executor", "reason": tc.want}
		testenv.WaitFor(t, time.Minute, "executor "+tc.id+" counted as "+tc.want, func() bool {
			v, ok := findSample(tc.e.scrape(t), "executor_jvm_exits_total", labels)
			return ok && v == 1
		})
		families := tc.e.scrape(t)
		for _, m := range families["executor_jvm_exits_total"].GetMetric() {
			if labelsMatch(m, map[string]string{"pid": strconv.Itoa(tc.j.PID)}) && !labelsMatch(m, labels) {
				t.Errorf("executor %s counted again: %v", tc.id, m.GetLabel())
			}
		}
		if n := strings.Count(tc.e.Logs(), "JVM ended: Spark executor "+tc.id+" of app-exits-e2e (pid "+strconv.Itoa(tc.j.PID)+")"); n != 1 {
			t.Errorf("%d log lines for executor %s's end", n, tc.id)
		}
	}

	for name, p := range proms {
		var got promAlert
		testenv.WaitFor(t, 2*time.Minute, name+": ExecutorHeapExhausted to fire", func() bool {
			alerts, err := p.alerts()
			if err != nil {
				return false
			}
			for _, a := range alerts {
				if a.Labels["alertname"] == "ExecutorHeapExhausted" && a.State == "firing" && a.Labels["pid"] == strconv.Itoa(heap.PID) {
					got = a
					return true
				}
			}
			return false
		})
		if got.Labels["executor_id"] != "3" || got.Labels["app_id"] != "app-exits-e2e" {
			t.Errorf("%s: alert labels %v", name, got.Labels)
		}
		for _, want := range []string{"executor 3", "64MiB", "spark.executor.memory"} {
			if !strings.Contains(got.Annotations["description"], want) {
				t.Errorf("%s: description %q lacks %q", name, got.Annotations["description"], want)
			}
		}
		t.Logf("%s: %s", name, got.Annotations["description"])

		// What the dashboards and recording rules show of these ends.
		for _, q := range []struct{ expr, what string }{
			{`instance_type:executor_jvm_exits:increase1h{reason="heap_exhausted"} > 0`, "the fleet's exits per instance type"},
			{`max by(app_id, executor_id, pid, reason) (max_over_time(executor_jvm_exits_total{app_id="app-exits-e2e"}[5m])) > 0`, "the executor dashboard's How it ended"},
		} {
			testenv.WaitFor(t, time.Minute, name+": "+q.what, func() bool {
				res, err := p.tryQuery(q.expr)
				return err == nil && len(res) > 0
			})
		}
		if rows := p.query(t, `max by(app_id, executor_id, pid, reason) (max_over_time(executor_jvm_exits_total{app_id="app-exits-e2e"}[5m])) > 0`); len(rows) != 4 {
			t.Errorf("%s: How it ended shows %d rows, want one per executor: %v", name, len(rows), rows)
		}
	}
}

// endOf waits for a stand-in to end and returns its exit code (128 + the
// signal when killed).
func endOf(t *testing.T, j *testjvm.JVM) int { return j.ExitCode(t, 90*time.Second) }
