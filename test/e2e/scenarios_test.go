package e2e

// The alert scenarios: real JVMs (the Scenario stand-in, test/java) in real
// memory cgroups, sized as Spark sizes executors but in hundreds of MiB,
// the built exporter, a real Prometheus evaluating the shipped rules
// (mixin/generated) and Alertmanager notifying a webhook. Each scenario
// records when each alert first went pending and firing, and when the
// executor was killed. `make scenarios` runs them all and writes
// mixin/scenarios.md; `make test` runs the short ones.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Spark on Kubernetes sizes an executor's container as spark.executor.memory
// (the heap) + spark.executor.memoryOverhead (max(384 MiB, 10 %)) +
// spark.executor.pyspark.memory. At 4 GiB and more the heap is about 90 %
// of the limit: here a 576 MiB heap in a 640 MiB container.
const (
	sparkHeap  = 576
	sparkLimit = 640
)

// scenarioJVM is one executor of a scenario.
type scenarioJVM struct {
	JVMArgs []string
	Args    []string // Scenario stand-in flags (see test/java/standin/Scenario.java)
	Limit   uint64   // its container's limit, MiB
	Leak    bool     // Args are the Leak stand-in's (test/java/standin/Leak.java)
}

type scenario struct {
	Name      string
	What      string // one line for the table
	Healthy   bool   // no alert may be pending or firing after the first minute
	Short     bool   // also runs in make test
	Node      uint64 // MiB: the executors' containers are inside a "node" cgroup this big
	Executors []scenarioJVM
	Watch     time.Duration // how long to watch a healthy case; the longest wait for an end
	// Region is what the kill's verdict must name: the region of native
	// memory that grew (executor_oom_kills_total's region label).
	Region string
	// LeakStart is when a leak starts after the JVM (0: not said, the
	// JVM's start); what a leak's warning is held to (checkScenario) is
	// measured from it.
	LeakStart time.Duration
}

var (
	g1        = []string{"-XX:+UseG1GC"}
	sparkFull = append([]string{"-Xms576m", "-Xmx576m", "-XX:+AlwaysPreTouch"}, g1...)
)

func one(limit uint64, jvmArgs []string, args ...string) []scenarioJVM {
	return []scenarioJVM{{JVMArgs: jvmArgs, Args: args, Limit: limit}}
}

var scenarios = []scenario{
	{
		Name: "healthy", Healthy: true, Watch: 5 * time.Minute,
		What:      "Spark's proportions (576 MiB heap in 640 MiB), heap fully touched (-Xms = -Xmx, AlwaysPreTouch), 250 MiB live, 40 MiB/s garbage",
		Executors: one(sparkLimit, sparkFull, "--live-mb", "250", "--churn-mb-s", "40"),
	},
	{
		Name: "healthy-young", Healthy: true, Watch: 5 * time.Minute,
		What:      "the same container, heap grown from nothing (-Xmx only): live data ramps to 300 MiB in the first minute, 40 MiB/s garbage",
		Executors: one(sparkLimit, append([]string{"-Xmx576m"}, g1...), "--live-mb", "300", "--ramp-mb-s", "5", "--churn-mb-s", "40"),
	},
	{
		Name: "native-leak-slow", Watch: 12 * time.Minute,
		What:      "healthy, then direct buffers leak 0.06 MiB/s after a minute",
		Executors: one(sparkLimit, append([]string{"-XX:MaxDirectMemorySize=1g"}, sparkFull...), "--live-mb", "250", "--churn-mb-s", "40", "--leak-after-s", "60", "--direct-leak-mb-s", "0.06"),
	},
	{
		Name: "native-leak-fast", Watch: 4 * time.Minute,
		What:      "healthy, then direct buffers leak 8 MiB/s after a minute",
		Executors: one(sparkLimit, append([]string{"-XX:MaxDirectMemorySize=1g"}, sparkFull...), "--live-mb", "250", "--churn-mb-s", "40", "--leak-after-s", "60", "--direct-leak-mb-s", "8"),
	},
	{
		Name: "heap-leak", Watch: 12 * time.Minute,
		What:      "correct -Xmx, 450 MiB live, then the live data grows 0.4 MiB/s after 30 s: ends in OutOfMemoryError (exit 52)",
		Executors: one(sparkLimit, sparkFull, "--live-mb", "450", "--churn-mb-s", "40", "--leak-after-s", "30", "--heap-leak-mb-s", "0.4"),
	},
	{
		Name: "xmx-above-limit", Short: true, Watch: 10 * time.Minute,
		What:      "-Xmx768m in the 640 MiB container, live data growing 2.5 MiB/s",
		Executors: one(sparkLimit, append([]string{"-Xmx768m"}, g1...), "--live-mb", "700", "--ramp-mb-s", "2.5", "--churn-mb-s", "20"),
	},
	{
		Name: "pyspark-worker", Watch: 12 * time.Minute,
		What:      "512 MiB heap + 64 MiB overhead + 64 MiB spark.executor.pyspark.memory; a Python worker holding 32 MiB grows 0.2 MiB/s after a minute",
		Executors: one(sparkLimit, append([]string{"-Xms512m", "-Xmx512m", "-XX:+AlwaysPreTouch"}, g1...), "--live-mb", "200", "--churn-mb-s", "40", "--python-mb", "32", "--leak-after-s", "60", "--python-leak-mb-s", "0.2"),
	},
	// One native leak of each kind that a container limit ends, each named
	// in the kill's verdict. 256 MiB heap in 640 MiB; the leak starts after
	// the JVM's first minute, whose last breakdown is the base, at 16 MiB/s.
	leakScenario("leak-direct-large", "native_mmap", "4 MiB direct buffers (above glibc's mmap threshold)", "--kind", "direct-large"),
	leakScenario("leak-direct-small", "malloc", "64 KiB direct buffers from 8 threads (glibc arenas)", "--kind", "direct-small"),
	leakScenario("leak-threads", "thread_stacks", "threads that never end, 160 KiB of stack each", "--kind", "threads", "--stack-kb", "160"),
	leakScenario("leak-classes", "metaspace", "generated classes, one class loader each", "--kind", "classes"),
	leakScenario("leak-tmpfs", "shmem", "spill files written to /dev/shm (tmpfs pages charged to the container)", "--kind", "shm", "--file", "/dev/shm/executor-exporter-scenario-leak-tmpfs"),
	// Leaks at the rates a time to limit is for (1, 3 and 10 MiB/s), of
	// each kind of memory outside the heap, in the same container: 256 MiB
	// heap in 640 MiB, the leak starting after the JVM's first minute.
	trendScenario("trend-direct-1", "native_mmap", 1, 4, "4 MiB direct buffers", "--kind", "direct-large"),
	trendScenario("trend-malloc-3", "malloc", 3, 1, "64 KiB direct buffers from 8 threads (glibc arenas)", "--kind", "direct-small"),
	trendScenario("trend-threads-3", "thread_stacks", 3, 1, "threads that never end, 160 KiB of stack each", "--kind", "threads", "--stack-kb", "160"),
	trendScenario("trend-classes-3", "metaspace", 3, 1, "generated classes, one class loader each", "--kind", "classes"),
	trendScenario("trend-tmpfs-3", "shmem", 3, 1, "spill files written to /dev/shm", "--kind", "shm", "--file", "/dev/shm/executor-exporter-scenario-trend-tmpfs"),
	trendScenario("trend-direct-10", "native_mmap", 10, 4, "4 MiB direct buffers", "--kind", "direct-large"),
	{
		Name: "trend-python-1", Region: "python", Watch: 14 * time.Minute, LeakStart: 65 * time.Second,
		What:      "256 MiB heap in 640 MiB; a Python worker holding 32 MiB grows 1 MiB/s after 65 s",
		Executors: one(sparkLimit, append([]string{"-Xmx256m"}, g1...), "--live-mb", "100", "--churn-mb-s", "20", "--python-mb", "32", "--leak-after-s", "65", "--python-leak-mb-s", "1"),
	},
	// Healthy shapes a time to limit must not take for a leak.
	{
		Name: "healthy-small-xms", Healthy: true, Watch: 5 * time.Minute,
		What:      "512 MiB heap grown from a small -Xms (ParallelGC, -Xms32m) in 640 MiB: live data ramps to 300 MiB at 2 MiB/s, past the first minute, 40 MiB/s garbage",
		Executors: one(sparkLimit, []string{"-Xms32m", "-Xmx512m", "-XX:+UseParallelGC"}, "--live-mb", "300", "--ramp-mb-s", "2", "--churn-mb-s", "40"),
	},
	{
		Name: "healthy-churn", Healthy: true, Watch: 5 * time.Minute,
		What:      "the same container, heap from nothing (-Xmx only), 100 MiB live, 200 MiB/s garbage",
		Executors: one(sparkLimit, append([]string{"-Xmx576m"}, g1...), "--live-mb", "100", "--churn-mb-s", "200"),
	},
	{
		Name: "healthy-pyspark-idle", Healthy: true, Watch: 5 * time.Minute,
		What:      "512 MiB heap (fully touched) + 128 MiB; an idle Python worker holding 48 MiB",
		Executors: one(sparkLimit, append([]string{"-Xms512m", "-Xmx512m", "-XX:+AlwaysPreTouch"}, g1...), "--live-mb", "200", "--churn-mb-s", "40", "--python-mb", "48"),
	},
	{
		Name: "healthy-page-cache", Healthy: true, Watch: 5 * time.Minute,
		What:      "256 MiB heap in 640 MiB; a 1 GiB file on disk read again and again at 64 MiB/s: the container full of page cache",
		Executors: one(sparkLimit, append([]string{"-Xmx256m"}, g1...), "--live-mb", "150", "--churn-mb-s", "40", "--page-cache-mb", "1024", "--page-cache-file", pageCacheFile),
	},
	{
		Name: "node-overcommit", Node: 1024, Watch: 10 * time.Minute,
		What: "three executors, each healthy alone (320 MiB heap in 384 MiB), on a 1 GiB node; heaps grow 1.5 MiB/s to 300 MiB live",
		Executors: func() []scenarioJVM {
			var jvms []scenarioJVM
			for range 3 {
				jvms = append(jvms, one(384, append([]string{"-Xmx320m"}, g1...), "--live-mb", "300", "--ramp-mb-s", "1.5", "--churn-mb-s", "20")...)
			}
			return jvms
		}(),
	},
}

// trendScenario is a leak of rate MiB/s in steps of step MiB, of the
// Leak stand-in's kind, starting 65 s after the JVM.
func trendScenario(name, region string, rate, step float64, what string, args ...string) scenario {
	watch := 14 * time.Minute
	if rate >= 3 {
		watch = 6 * time.Minute
	}
	return scenario{
		Name: name, Region: region, Watch: watch, LeakStart: 65 * time.Second,
		What: fmt.Sprintf("256 MiB heap in 640 MiB; after 65 s, %s leak %g MiB/s", what, rate),
		Executors: []scenarioJVM{{
			JVMArgs: append([]string{"-Xmx256m", "-XX:MaxDirectMemorySize=2g"}, g1...),
			Args: append([]string{"--after-s", "65", "--rate-mb-s", fmt.Sprint(rate), "--step-mb", fmt.Sprint(step),
				"--target-mb", "2048"}, args...),
			Limit: sparkLimit, Leak: true,
		}},
	}
}

// pageCacheFile is on a disk (not tmpfs), so that its pages are page
// cache charged to the container.
const pageCacheFile = "/var/tmp/executor-exporter-scenario-page-cache"

func leakScenario(name, region, what string, args ...string) scenario {
	return scenario{
		Name: name, Region: region, Watch: 5 * time.Minute, LeakStart: 65 * time.Second,
		What: "256 MiB heap in 640 MiB; after a minute, " + what + " leak 16 MiB/s",
		Executors: []scenarioJVM{{
			JVMArgs: append([]string{"-Xmx256m", "-XX:MaxDirectMemorySize=2g"}, g1...),
			Args:    append([]string{"--after-s", "65", "--rate-mb-s", "16", "--target-mb", "2048"}, args...),
			Limit:   sparkLimit, Leak: true,
		}},
	}
}

// TestScenarios runs the short scenarios, or with SCENARIOS=all every one
// (or SCENARIOS=name,name those), all at once on one exporter and one
// Prometheus; with SCENARIOS_REPORT=file it writes the results table.
func TestScenarios(t *testing.T) {
	var run []scenario
	want := os.Getenv("SCENARIOS")
	for _, sc := range scenarios {
		if want == "all" || (want == "" && sc.Short) || strings.Contains(","+want+",", ","+sc.Name+",") {
			run = append(run, sc)
		}
	}
	if len(run) == 0 {
		t.Fatalf("SCENARIOS=%q names no scenario", want)
	}
	// The tmpfs leak's files outlive the JVM that wrote them.
	t.Cleanup(func() {
		files, _ := filepath.Glob("/dev/shm/executor-exporter-scenario-*")
		files = append(files, pageCacheFile)
		for _, f := range files {
			os.Remove(f)
		}
	})
	lab := startScenarioLab(t, run)
	results := make([]*scenarioResult, len(run))
	t.Run("scenarios", func(t *testing.T) {
		for i, sc := range run {
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel()
				results[i] = lab.run(t, sc)
				checkScenario(t, sc, results[i])
			})
		}
	})
	rows := scenarioRightSizing(t, lab, run, results)
	if path := os.Getenv("SCENARIOS_REPORT"); path != "" {
		writeScenarioReport(t, path, lab, run, results, rows)
	}
}

// checkScenario holds a scenario to what the mixin promises.
func checkScenario(t *testing.T, sc scenario, r *scenarioResult) {
	t.Helper()
	if r == nil {
		return
	}
	for _, a := range r.Alerts {
		t.Logf("%s: %s %v pending at %s, firing at %s", sc.Name, a.Name, a.Labels, fmtSince(a.Pending, r.Start), fmtSince(a.Firing, r.Start))
	}
	if sc.Healthy {
		if r.End.Kind != "" {
			t.Errorf("the healthy executor ended: %s at %s", r.End.Kind, fmtSince(r.End.At, r.Start))
		}
		for _, a := range r.Alerts {
			if a.LastSeen.Sub(r.Start) > time.Minute {
				t.Errorf("%s pending or firing on a healthy executor after its first minute (from %s to %s)", a.Name, fmtSince(a.Pending, r.Start), fmtSince(a.LastSeen, r.Start))
			}
		}
		return
	}
	if r.End.Kind == "" {
		t.Fatalf("no kill and no OutOfMemoryError within %v", sc.Watch)
	}
	// A leak's time is from its start to the executor's end.
	took := r.End.At.Sub(r.Start.Add(sc.LeakStart))
	first := r.firstWarning()
	if took >= 2*time.Minute && (first == nil || r.End.At.Sub(first.Pending) < time.Minute) {
		t.Errorf("%s after %v, but no warning was pending 60 s before it (first: %v)", r.End.Kind, took.Round(time.Second), first)
	}
	// A leak outside the heap of 5 minutes or more is warned of for half
	// its time at least: pending by the middle of the time from its start
	// to its end.
	if sc.LeakStart > 0 && took >= 5*time.Minute && (first == nil || r.End.At.Sub(first.Pending) < took/2) {
		t.Errorf("%s after %v, but no warning was pending %v before it (first: %v)", r.End.Kind, took.Round(time.Second), (took / 2).Round(time.Second), first)
	}
	// The time to limit warns of every leak at its rates, and says which
	// setting to change by how much.
	if sc.LeakStart > 0 && took >= 2*time.Minute {
		p := r.alert("ExecutorOverheadBudgetExhaustionPredicted")
		setting := "spark.executor.memoryOverhead by"
		if sc.Region == "python" {
			setting = "spark.executor.pyspark.memory by"
		}
		switch {
		case p == nil:
			t.Errorf("no ExecutorOverheadBudgetExhaustionPredicted for a leak")
		case !strings.Contains(p.Description, setting) || !strings.Contains(p.Description, "MiB"):
			t.Errorf("ExecutorOverheadBudgetExhaustionPredicted does not say to raise %s N MiB: %q", setting, p.Description)
		}
	}
	if sc.Name == "xmx-above-limit" {
		d := r.alert("ExecutorMemoryConfigurationDoomed")
		if d == nil || d.Pending.Sub(r.Start) > 30*time.Second {
			t.Errorf("ExecutorMemoryConfigurationDoomed not pending within 30 s of the start: %v", d)
		} else if !strings.Contains(d.Description, "spark.executor.memoryOverhead by") || !strings.Contains(d.Description, "MiB") {
			t.Errorf("the doomed description does not say which setting to change by how much: %q", d.Description)
		}
	}
	if r.End.Kind == endKilled {
		k := r.alert("ExecutorOOMKilled")
		if k == nil || k.Labels["cause"] == "" || k.Labels["executor_id"] == "" {
			t.Errorf("no ExecutorOOMKilled alert with cause and executor after the kill: %v", k)
		} else if sc.Region != "" && (k.Labels["cause"] != "native" || k.Labels["region"] != sc.Region) {
			t.Errorf("the kill was judged cause %q, region %q; want native, %s", k.Labels["cause"], k.Labels["region"], sc.Region)
		}
	}
}

func fmtSince(at, start time.Time) string {
	if at.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%.0f s", at.Sub(start).Seconds())
}
