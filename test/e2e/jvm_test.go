package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// jvmSample waits until the exporter reports name for pid (with the extra
// labels in want) and returns the value and the scrape it came from.
func jvmSample(t *testing.T, e *exporter, pid int, name string, want map[string]string) (float64, map[string]*dto.MetricFamily) {
	t.Helper()
	labels := map[string]string{"pid": strconv.Itoa(pid)}
	for k, v := range want {
		labels[k] = v
	}
	var (
		v        float64
		families map[string]*dto.MetricFamily
	)
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("%s%v", name, labels), func() bool {
		var ok bool
		families = e.scrape(t)
		v, ok = findSample(families, name, labels)
		return ok
	})
	return v, families
}

// TestJVMSparkExecutor: the stand-in executor is reported with Spark's ids
// from its command line, and its PySpark-like child under kind="python".
func TestJVMSparkExecutor(t *testing.T) {
	j := testjvm.Start(t, testjvm.Options{
		JVMArgs: []string{"-Xmx128m", "-XX:+UseG1GC"},
		Args: []string{"--driver-url", "spark://CoarseGrainedScheduler@127.0.0.1:1", "--executor-id", "7",
			"--app-id", "app-20261122-0001", "--python-mb", "48", "--heap-mb", "16", "--exit-after-s", "300"},
	})
	e := startExporter(t)
	id := map[string]string{"role": "executor", "executor_id": "7", "app_id": "app-20261122-0001"}
	info, _ := jvmSample(t, e, j.PID, "executor_jvm_info", map[string]string{
		"role": "executor", "executor_id": "7", "app_id": "app-20261122-0001",
		"main_class": testjvm.ExecutorClass, "gc": "G1", "vm_args_xmx": "128m",
	})
	if info != 1 {
		t.Errorf("executor_jvm_info = %v", info)
	}
	// The Python child touches its 48 MiB after it starts: wait for it.
	var python float64
	testenv.WaitFor(t, 30*time.Second, "python child resident memory", func() bool {
		python, _ = findSample(e.scrape(t), "executor_process_resident_memory_bytes", merge(id, "pid", strconv.Itoa(j.PID), "kind", "python"))
		return python >= 40<<20
	})
	text := e.scrapeText(t)
	families := parseMetrics(t, text)
	if heapMax, ok := findSample(families, "executor_jvm_memory_max_bytes", merge(id, "pid", strconv.Itoa(j.PID), "area", "heap")); !ok || heapMax != 128<<20 {
		t.Errorf("heap max = %v, %v; want 128 MiB", heapMax, ok)
	}
	if jvmRSS, ok := findSample(families, "executor_process_resident_memory_bytes", merge(id, "pid", strconv.Itoa(j.PID), "kind", "jvm")); !ok || jvmRSS < 16<<20 {
		t.Errorf("JVM resident memory = %v, %v; want above its 16 MiB of heap", jvmRSS, ok)
	}
	promtoolCheckMetrics(t, text)
}

func merge(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestJVMInContainer: a JVM in its own pid and mount namespace with a
// private /tmp, as in a container, is found through /proc/<pid>/root and
// reported under its host pid.
func TestJVMInContainer(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "unshare")
	// The private /tmp hides the host's, where the test classes are:
	// carry them over with a bind mount through a directory outside /tmp.
	classes := testjvm.Classpath(t)
	carry, err := os.MkdirTemp("/var/tmp", "executor-exporter-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(carry) })
	prelude := fmt.Sprintf("mount --bind %[1]s %[2]s && mount -t tmpfs tmpfs /tmp && mkdir -p %[1]s && mount --bind %[2]s %[1]s && ", classes, carry)

	j := testjvm.Start(t, testjvm.Options{
		Wrapper: []string{"unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private"},
		Prelude: prelude,
		JVMArgs: []string{"-Xmx48m"},
		Args:    []string{"--executor-id", "11", "--app-id", "app-container", "--exit-after-s", "300"},
	})
	if j.NSPID == j.PID {
		t.Fatalf("the JVM is not in its own pid namespace: pid %d, nspid %d", j.PID, j.NSPID)
	}
	// Its file is only in its private /tmp, under its namespace pid.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/tmp/hsperfdata_root/%d", j.PID, j.NSPID)); err != nil {
		t.Fatalf("no hsperfdata in the JVM's private /tmp: %v", err)
	}
	if _, err := os.Stat(fmt.Sprintf("/tmp/hsperfdata_root/%d", j.PID)); err == nil {
		t.Fatalf("the JVM's file is visible in the host /tmp; the test does not isolate it")
	}

	e := startExporter(t)
	heapMax, _ := jvmSample(t, e, j.PID, "executor_jvm_memory_max_bytes", map[string]string{
		"area": "heap", "role": "executor", "executor_id": "11", "app_id": "app-container",
	})
	if heapMax != 48<<20 {
		t.Errorf("heap max = %v, want 48 MiB", heapMax)
	}
	families := e.scrape(t)
	if _, ok := findSample(families, "executor_jvm_info", map[string]string{"pid": strconv.Itoa(j.NSPID), "app_id": "app-container"}); ok && j.NSPID != j.PID {
		t.Errorf("the JVM is also reported under its namespace pid %d", j.NSPID)
	}
}

// TestJVMCgroupLimit: a JVM in a memory cgroup with a limit is reported
// with that limit and the cgroup's usage.
func TestJVMCgroupLimit(t *testing.T) {
	testenv.RequireRoot(t)
	const memRoot = "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(memRoot, "memory.limit_in_bytes")); err != nil {
		testenv.Unavailable(t, "no cgroup v1 memory controller at %s: %v", memRoot, err)
	}
	dir := filepath.Join(memRoot, fmt.Sprintf("executor-exporter-e2e-jvm-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Registered before the JVM starts, so it runs after the JVM is killed.
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if err := syscall.Rmdir(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("could not remove cgroup %s", dir)
	})
	const limit = 384 << 20
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.Itoa(limit)), 0o644); err != nil {
		t.Fatal(err)
	}
	j := testjvm.Start(t, testjvm.Options{
		Cgroup:  filepath.Join(dir, "cgroup.procs"),
		JVMArgs: []string{"-Xmx64m"},
		Args:    []string{"--executor-id", "5", "--app-id", "app-cgroup", "--heap-mb", "24", "--exit-after-s", "300"},
	})
	e := startExporter(t)
	got, families := jvmSample(t, e, j.PID, "executor_container_memory_limit_bytes", map[string]string{"role": "executor", "executor_id": "5"})
	if got != limit {
		t.Errorf("container limit = %v, want %v", got, limit)
	}
	// The stand-in fills its heap after it says it is ready, and a scrape
	// may serve a background sample up to --jvm.max-sample-age old: wait
	// for a sample taken after the fill.
	var usage float64
	testenv.WaitFor(t, 30*time.Second, "container usage above the JVM's 24 MiB of heap", func() bool {
		families = e.scrape(t)
		usage, _ = findSample(families, "executor_container_memory_usage_bytes", map[string]string{"pid": strconv.Itoa(j.PID)})
		return usage >= 24<<20
	})
	if usage > limit {
		t.Errorf("container usage = %v; want at most the limit %v", usage, limit)
	}
	ws, ok := findSample(families, "executor_container_memory_working_set_bytes", map[string]string{"pid": strconv.Itoa(j.PID)})
	if !ok || ws <= 0 || ws > usage {
		t.Errorf("container working set = %v, %v; want in (0, usage %v]", ws, ok, usage)
	}
	if kills, ok := findSample(families, "executor_container_oom_kills_total", map[string]string{"pid": strconv.Itoa(j.PID)}); !ok || kills != 0 {
		t.Errorf("container OOM kills = %v, %v; want 0", kills, ok)
	}
}

// TestJVMBrokenFileCostsOnlyItsProcess: a corrupt hsperfdata file planted
// for a real process next to a real JVM; the scrape is still 200, the JVM is
// reported and the broken one counted.
func TestJVMBrokenFileCostsOnlyItsProcess(t *testing.T) {
	j := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, JVMArgs: []string{"-Xmx32m"}, Args: []string{"--exit-after-s", "300"}})
	sleeper := exec.Command("sleep", "600")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	matches, _ := filepath.Glob(fmt.Sprintf("/tmp/hsperfdata_*/%d", j.NSPID))
	if len(matches) != 1 {
		t.Fatalf("hsperfdata of the JVM: %v", matches)
	}
	planted := filepath.Join(filepath.Dir(matches[0]), strconv.Itoa(sleeper.Process.Pid))
	if err := os.WriteFile(planted, []byte("\xca\xfe\xc0\xc0 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(planted) })

	e := startExporter(t)
	jvmSample(t, e, j.PID, "executor_jvm_info", map[string]string{"main_class": testjvm.IdleClass, "role": "jvm", "app_id": "", "executor_id": ""})
	text := e.scrapeText(t) // fails the test unless 200
	families := parseMetrics(t, text)
	if n, ok := findSample(families, "executor_jvm_read_errors_total", map[string]string{"reason": "corrupt"}); !ok || n < 1 {
		t.Errorf("read errors{reason=corrupt} = %v, %v; want >= 1", n, ok)
	}
	if _, ok := findSample(families, "executor_jvm_info", map[string]string{"pid": strconv.Itoa(sleeper.Process.Pid)}); ok {
		t.Errorf("the process with a broken file was reported as a JVM")
	}
	if ok, _ := findSample(families, "executor_scrape_collector_success", map[string]string{"collector": "jvm"}); ok != 1 {
		t.Errorf("jvm collector success = %v, want 1", ok)
	}
	promtoolCheckMetrics(t, text)
}
