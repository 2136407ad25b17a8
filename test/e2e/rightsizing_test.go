package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// rightsizingOverrides evaluate the right-sizing rules at the scrape
// interval, not every minute, so that the test waits seconds.
const rightsizingOverrides = `{ _config+:: { rightsizing+: { interval: '2s' } } }`

// rightsizingApp is one application of three executors, each in a memory
// cgroup of its own; one of them may die as the case says.
type rightsizingApp struct {
	name    string
	xmx     int // MiB: spark.executor.memory
	limit   int // MiB: memory + memoryOverhead
	args    []string
	victim  []string // the first executor's own arguments, when it dies
	victimX []string // its JVM options
}

// TestRightSizingRecommendsFromRealExecutors runs three applications of
// real executors, with the shipped right-sizing rules in Prometheus 3: one
// with far more heap than its live data, one whose executor is OOM-killed
// for native memory, one whose executor runs out of heap (exit 52). The
// first is told to lower spark.executor.memory to what still holds its
// live data; the second to raise memoryOverhead by the kill's bump at
// least; the third to raise spark.executor.memory likewise. Every panel of
// the Right-sizing dashboard has data.
func TestRightSizingRecommendsFromRealExecutors(t *testing.T) {
	if testing.Short() {
		t.Skip("real executors, a kernel OOM kill and Prometheus")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	requireKmsg(t)
	prom3 := os.Getenv("PROMETHEUS3")
	if prom3 == "" {
		testenv.Unavailable(t, "PROMETHEUS3 unset: the right-sizing rules are checked with Prometheus 3 (make prometheus3)")
	}
	apps := []rightsizingApp{
		{name: "app-rs-over", xmx: 1024, limit: 1536, args: []string{"--live-mb", "100", "--churn-mb-s", "20"}},
		{name: "app-rs-native", xmx: 128, limit: 512, args: []string{"--live-mb", "32", "--churn-mb-s", "4"},
			victim:  []string{"--leak", "--kind", "direct-small", "--after-s", "20", "--rate-mb-s", "16", "--target-mb", "2048"},
			victimX: []string{"-XX:MaxDirectMemorySize=2g"}},
		{name: "app-rs-heap", xmx: 192, limit: 1024, args: []string{"--live-mb", "32", "--churn-mb-s", "4"},
			// Spark's own end: System.exit(52) after an OutOfMemoryError.
			victim: []string{"--spark-exit", "--heap-mb", "1000", "--step-mb", "1", "--step-ms", "100", "--churn"}},
	}
	rules := renderMixin(t, rightsizingOverrides)
	e := startExporter(t, "--cloud.provider=none")
	prom := startPrometheus(t, promConfig{Binary: prom3, RulesDir: rules, Targets: []string{e.Addr}, Interval: scenarioInterval})

	for _, a := range apps {
		for i := 1; i <= 3; i++ {
			cg := testenv.NewMemoryCgroup(t, uint64(a.limit)<<20)
			args := append([]string{"--scenario"}, a.args...)
			jvmArgs := []string{fmt.Sprintf("-Xmx%dm", a.xmx), "-XX:+UseG1GC"}
			if i == 1 && a.victim != nil {
				args, jvmArgs = a.victim, append(jvmArgs, a.victimX...)
			}
			args = append(args, "--executor-id", strconv.Itoa(i), "--app-id", a.name, "--exit-after-s", "300")
			testjvm.Start(t, testjvm.Options{JVMArgs: jvmArgs, Args: args, Cgroup: cg.Procs()})
		}
	}

	const mib = 1 << 20
	recommended := func(app, setting string) (float64, bool) {
		res := prom.query(t, fmt.Sprintf(`app_name:executor_memory_recommended:bytes{app_name=%q, setting=%q}`, app, setting))
		if len(res) != 1 {
			return 0, false
		}
		return sampleValue(t, res[0]), true
	}
	one := func(expr string) float64 {
		t.Helper()
		res := prom.query(t, expr)
		if len(res) != 1 {
			t.Fatalf("%s: %d series, want 1", expr, len(res))
		}
		return sampleValue(t, res[0])
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, q := range []string{"executor_oom_kills_total", "executor_jvm_exits_total", "app_run:executor_kills:count",
				"app_name:executor_kills:count", "app_name:executors:count", "app_name:executor_memory_need:bytes",
				"app_name:executor_memory_setting:bytes", "app_name:executor_memory_recommended:bytes"} {
				res, err := prom.tryQuery(q)
				t.Logf("%s: %v %v", q, res, err)
			}
		}
	})
	testenv.WaitFor(t, 4*time.Minute, "recommendations after the kill and the heap exhaustion", func() bool {
		_, native := prom.tryQuery(`app_name:executor_memory_after_kills:bytes{app_name="app-rs-native", setting="spark.executor.memoryOverhead"}`)
		_, over := recommended("app-rs-over", "spark.executor.memory")
		if native != nil || !over {
			return false
		}
		for _, q := range []string{
			`app_name:executor_memory_after_kills:bytes{app_name="app-rs-native", setting="spark.executor.memoryOverhead"}`,
			`app_name:executor_memory_after_kills:bytes{app_name="app-rs-heap", setting="spark.executor.memory"}`,
		} {
			if len(prom.query(t, q)) == 0 {
				return false
			}
		}
		return true
	})

	// Over-provisioned: less heap, but room for its live data.
	live := one(`max(executor_jvm_memory_peak_bytes{app_id="app-rs-over", kind="heap_live"})`)
	rec, _ := recommended("app-rs-over", "spark.executor.memory")
	t.Logf("app-rs-over: heap 1024 MiB, live data peak %.0f MiB: spark.executor.memory %.0f MiB", live/mib, rec/mib)
	if rec >= 1024*mib || rec < live/0.7 {
		t.Errorf("app-rs-over: spark.executor.memory %.0f MiB, want below the 1024 MiB set and at least the live data's %.0f MiB / 0.7", rec/mib, live/mib)
	}

	// Killed for native memory: the overhead raised by the bump at least.
	current := one(`app_name:executor_memory_setting:bytes{app_name="app-rs-native", setting="spark.executor.memoryOverhead"}`)
	rec, _ = recommended("app-rs-native", "spark.executor.memoryOverhead")
	t.Logf("app-rs-native: memoryOverhead %.0f MiB, OOM-killed for native memory: %.0f MiB", current/mib, rec/mib)
	if rec < max(current*1.2, current+256*mib) {
		t.Errorf("app-rs-native: memoryOverhead %.0f MiB, want the %.0f MiB set raised by the bump at least", rec/mib, current/mib)
	}

	// Out of heap: spark.executor.memory raised by the bump at least.
	current = one(`app_name:executor_memory_setting:bytes{app_name="app-rs-heap", setting="spark.executor.memory"}`)
	rec, _ = recommended("app-rs-heap", "spark.executor.memory")
	t.Logf("app-rs-heap: spark.executor.memory %.0f MiB, exit 52: %.0f MiB", current/mib, rec/mib)
	if rec < max(current*1.2, current+256*mib) {
		t.Errorf("app-rs-heap: spark.executor.memory %.0f MiB, want the %.0f MiB set raised by the bump at least", rec/mib, current/mib)
	}

	checkDashboardHasData(t, prom, filepath.Join(filepath.Dir(filepath.Dir(rules)), "dashboards", "executor-rightsizing.json"),
		map[string]string{"job": "executor_exporter", "cluster": ".*", "app_name": ".*", "instance_type": ".*"})
}

// checkDashboardHasData runs every query of a rendered dashboard, with
// values for its variables, and fails on a panel without data.
func checkDashboardHasData(t *testing.T, prom *promServer, file string, values map[string]string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	for k, v := range grafanaBuiltins {
		values[k] = v
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if expr := substitute(tg.Expr, values); len(prom.query(t, expr)) == 0 {
				t.Errorf("%s: panel %q: no data for %s", filepath.Base(file), p.Title, expr)
			}
		}
	}
}

func sampleValue(t *testing.T, s promSample) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample value %v: %v", s.Value, err)
	}
	return v
}
