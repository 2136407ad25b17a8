package systemd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// The unit's capabilities as /proc/<pid>/status prints them:
// CAP_DAC_READ_SEARCH (2), CAP_SYS_PTRACE (19) and CAP_SYSLOG (34).
const unitCaps = "0000000400080004"

// The user Spark's executors run as on a YARN node, and its JVM's memory
// cgroup limit.
const (
	sparkUser  = "spark"
	sparkLimit = 512 << 20
	leakLimit  = 256 << 20
)

// TestUnitUnderSystemd installs the release archive into a Debian root
// booted with its systemd, with the EMR bootstrap action (it checks the
// archive against sha256sums.txt and enables the unit), and runs it: a
// dynamic user with three ambient capabilities reads another user's JVM
// in full through /proc/<pid>/root; the oom collector reads /dev/kmsg
// behind DevicePolicy=closed and counts a kernel kill; restart and stop
// are clean; systemd-analyze security judges the running unit. Then the
// Dataproc initialization action installs it again.
func TestUnitUnderSystemd(t *testing.T) {
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	root := envPath(t, "SYSTEMD_ROOT", "a Debian root with systemd (make systemd-root)")
	archive := envPath(t, "RELEASE_ARCHIVE", "the release archive for this machine (make release)")
	classes := testjvm.Classpath(t)
	// The classes' directory is the test's (0700); the JVM runs as spark.
	if err := os.Chmod(classes, 0o755); err != nil {
		t.Fatal(err)
	}
	jdkBin := jdkBinDir(t)
	binds := []bind{{Src: filepath.Dir(archive), Dest: "/mnt/release"}, {Src: filepath.Join(testenv.RepoRoot(), "deploy", "yarn"), Dest: "/mnt/yarn"},
		{Src: classes}, {Src: "/usr/lib/jvm"}}
	confs, _ := filepath.Glob("/etc/java-*-openjdk")
	for _, c := range confs {
		binds = append(binds, bind{Src: c})
	}
	m := bootMachine(t, root, binds...)
	if v, _ := m.run(t, "systemctl", "--version"); v != "" {
		t.Logf("booted: %s", strings.SplitN(v, "\n", 2)[0])
	}

	// Installed by the EMR bootstrap action from the release's archive and
	// sha256sums.txt, as docs/yarn.md says; it enables and starts the unit.
	// The machine has a network of its own: :9482 is its.
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archive), "executor_exporter-"), ".linux-"+runtime.GOARCH+".tar.gz")
	out, err := m.run(t, "bash", "/mnt/yarn/emr-bootstrap.sh", "--version", version, "--release-url", "/mnt/release",
		"--args", "--cloud.provider=none --jvm.sample-interval=500ms")
	if err != nil {
		t.Fatalf("emr-bootstrap.sh: %v\n%s", err, out)
	}
	if state, _ := m.run(t, "systemctl", "is-enabled", "executor_exporter.service"); strings.TrimSpace(state) != "enabled" {
		t.Errorf("after the bootstrap action the unit is %q, want enabled", strings.TrimSpace(state))
	}
	e := newExporter(m, "127.0.0.1:9482")
	defer func() {
		if t.Failed() {
			logs, _ := m.run(t, "journalctl", "-u", "executor_exporter", "--no-pager", "-n", "200")
			t.Logf("the unit's journal:\n%s", logs)
		}
	}()
	testenv.WaitFor(t, 60*time.Second, "the unit to serve /metrics", func() bool { return e.up() })
	first := checkServiceProcess(t, m)
	if v, ok := find(e.scrape(t), "executor_exporter_build_info", nil); !ok || v.labels["version"] != version || v.labels["version"] != readVersion(t) {
		t.Errorf("executor_exporter_build_info: %v (present %v), want version %s (VERSION, the archive's)", v.labels, ok, readVersion(t))
	}

	// Another user's executor, in a memory cgroup of its own.
	m.mustRun(t, "useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", sparkUser)
	spark := m.startJVM(t, sparkUser, jdkBin, m.memory.Child(t, "spark-executor", sparkLimit), testjvm.Options{
		JVMArgs: []string{"-Xmx64m", "-XX:+UseSerialGC"},
		Args:    []string{"--executor-id", "7", "--app-id", "app-systemd", "--exit-after-s", "900"},
	})
	checkJVMReadInFull(t, e, spark.NSPID)

	t.Run("oom kill", func(t *testing.T) { checkOOMKill(t, m, e, jdkBin, spark.NSPID) })

	// restart: a new process, the JVM read again, nothing failed.
	m.mustRun(t, "systemctl", "restart", "executor_exporter.service")
	testenv.WaitFor(t, 60*time.Second, "the unit to serve /metrics after the restart", func() bool { return e.up() })
	if second := checkServiceProcess(t, m); second == first {
		t.Errorf("systemctl restart kept the main pid %d", first)
	}
	checkJVMReadInFull(t, e, spark.NSPID)
	if n := countRestarts(t, m); n != "0" {
		t.Errorf("NRestarts=%s: the unit failed and systemd restarted it", n)
	}

	t.Run("systemd-analyze security", func(t *testing.T) { checkExposure(t, m) })

	// stop: SIGTERM, a clean exit, the port closed, the JVM untouched.
	m.mustRun(t, "systemctl", "stop", "executor_exporter.service")
	if state, _ := m.run(t, "systemctl", "is-active", "executor_exporter.service"); strings.TrimSpace(state) != "inactive" {
		t.Errorf("after systemctl stop the unit is %q, want inactive", strings.TrimSpace(state))
	}
	if r := m.mustRun(t, "systemctl", "show", "--property=Result", "--value", "executor_exporter.service"); strings.TrimSpace(r) != "success" {
		t.Errorf("the unit's Result after stop is %q, want success", strings.TrimSpace(r))
	}
	if e.up() {
		t.Error("the exporter still answers after systemctl stop")
	}
	select {
	case <-spark.Done():
		t.Error("the Spark JVM ended with the exporter")
	default:
	}
	journal := m.mustRun(t, "journalctl", "-u", "executor_exporter", "--no-pager")
	for _, bad := range []string{"panic:", "level=error"} {
		if strings.Contains(journal, bad) {
			t.Errorf("the unit's journal has %q:\n%s", bad, journal)
		}
	}

	t.Run("dataproc-init.sh", func(t *testing.T) { checkDataprocInit(t, m, e, version, spark.NSPID) })
}

// checkDataprocInit installs the release again over the stopped unit with
// the Dataproc initialization action, its metadata given as the
// environment (no metadata server here): the unit is enabled and started
// with the YARN configuration directory Dataproc writes, and reads the JVM
// in full.
func checkDataprocInit(t *testing.T, m *machine, e *exporter, version string, sparkPID int) {
	out, err := m.run(t, "env", "EXECUTOR_EXPORTER_VERSION="+version, "EXECUTOR_EXPORTER_RELEASE_URL=/mnt/release",
		"EXECUTOR_EXPORTER_ARGS=--cloud.provider=none --jvm.sample-interval=500ms", "bash", "/mnt/yarn/dataproc-init.sh")
	if err != nil {
		t.Fatalf("dataproc-init.sh: %v\n%s", err, out)
	}
	if state, _ := m.run(t, "systemctl", "is-enabled", "executor_exporter.service"); strings.TrimSpace(state) != "enabled" {
		t.Errorf("after the initialization action the unit is %q, want enabled", strings.TrimSpace(state))
	}
	if args := m.mustRun(t, "cat", "/etc/default/executor_exporter"); !strings.Contains(args, "--yarn.conf-dir=/etc/hadoop/conf") {
		t.Errorf("/etc/default/executor_exporter does not name Dataproc's YARN configuration:\n%s", args)
	}
	testenv.WaitFor(t, 60*time.Second, "the unit to serve /metrics after dataproc-init.sh", func() bool { return e.up() })
	checkJVMReadInFull(t, e, sparkPID)
	// Stopped before the machine powers off, as after the EMR install.
	m.mustRun(t, "systemctl", "stop", "executor_exporter.service")
}

// checkServiceProcess checks the unit's main process as systemd started it
// (a dynamic uid, the three capabilities, no new privileges, a seccomp
// filter) and returns its pid in the machine.
func checkServiceProcess(t *testing.T, m *machine) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(m.mustRun(t, "systemctl", "show", "--property=MainPID", "--value", "executor_exporter.service")))
	if err != nil || pid == 0 {
		t.Fatalf("the unit's MainPID: %v", err)
	}
	status := m.mustRun(t, "cat", fmt.Sprintf("/proc/%d/status", pid))
	field := func(name string) string {
		for _, line := range strings.Split(status, "\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				return strings.Fields(v)[0]
			}
		}
		return ""
	}
	if uid, _ := strconv.Atoi(field("Uid")); uid == 0 || field("Uid") == "" {
		t.Errorf("the unit runs as uid %q, want a dynamic user", field("Uid"))
	}
	for _, c := range []string{"CapEff", "CapAmb", "CapBnd"} {
		if got := field(c); got != unitCaps {
			t.Errorf("%s %s, want %s (CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE, CAP_SYSLOG)", c, got, unitCaps)
		}
	}
	if field("NoNewPrivs") != "1" || field("Seccomp") != "2" {
		t.Errorf("NoNewPrivs %s, Seccomp %s: want 1 and 2 (a filter)", field("NoNewPrivs"), field("Seccomp"))
	}
	return pid
}

// checkJVMReadInFull waits until the exporter reads the JVM (pid in the
// machine's pid namespace) in full: its identity from its environment and
// command line, its heap from hsperfdata in its /tmp (0600, another user's,
// reached through /proc/<pid>/root past the unit's PrivateTmp), its
// resident memory by region from smaps, and its memory cgroup.
func checkJVMReadInFull(t *testing.T, e *exporter, pid int) {
	t.Helper()
	id := map[string]string{"pid": strconv.Itoa(pid)}
	var s map[string]*dto.MetricFamily
	testenv.WaitFor(t, 90*time.Second, "the Spark JVM read in full", func() bool {
		s = e.scrape(t)
		info, ok := find(s, "executor_jvm_info", id)
		heap, _ := find(s, "executor_jvm_memory_used_bytes", with(id, "area", "heap"))
		region, _ := find(s, "executor_jvm_native_memory_bytes", with(id, "region", "heap"))
		limit, _ := find(s, "executor_container_memory_limit_bytes", id)
		return ok && info.labels["counters"] == "hsperfdata" && heap.value > 0 && region.value > 0 && limit.value == sparkLimit
	})
	info, _ := find(s, "executor_jvm_info", id)
	for k, want := range map[string]string{"role": "executor", "app_id": "app-systemd", "executor_id": "7"} {
		if info.labels[k] != want {
			t.Errorf("executor_jvm_info %s=%q, want %q: %v", k, info.labels[k], want, info.labels)
		}
	}
	// What the unit's capabilities and sandbox could deny. (A JVM's file
	// read while the JVM initialises it may count once as stale.)
	for _, reason := range []string{"permission", "untrusted", "cgroup", "native_memory"} {
		if v, _ := find(s, "executor_jvm_read_errors_total", map[string]string{"reason": reason}); v.value != 0 {
			t.Errorf("executor_jvm_read_errors_total{reason=%q} = %v, want 0", reason, v.value)
		}
	}
}

// checkOOMKill leaks direct buffers in a JVM of a 256 MiB memory cgroup
// until the kernel kills it. The unit's oom collector reads the kill from
// /dev/kmsg (CAP_SYSLOG, DeviceAllow=/dev/kmsg r) and counts it as a
// container limit's kill of java.
//
// It cannot be sure whose: the kernel prints the pid of its initial pid
// namespace, and the machine is a pid namespace of its own, where the
// exporter knows the JVM by another pid (on a VM the unit runs in the
// initial one). When the tracker's last view still holds the JVM, the
// kill's cgroup names it, as the executor whose child was killed; when it
// no longer does, the kill has no identity; the exits collector, finding
// no kill of the JVM's pid, says "killed". The test checks the unit read
// this kill (its log names the kernel's pid and the cgroup), counted it,
// and blamed no other executor; docs/security.md says what a VM adds.
func checkOOMKill(t *testing.T, m *machine, e *exporter, jdkBin string, sparkPID int) {
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		testenv.Unavailable(t, "no /dev/kmsg: %v", err)
	}
	before := e.scrape(t)
	nodeBefore, _ := find(before, "executor_node_oom_kills_total", nil)
	killsBefore := sum(before, "executor_oom_kills_total", map[string]string{"constraint": "CONSTRAINT_MEMCG", "task": "java"})
	cg := m.memory.Child(t, "leak", leakLimit)
	leak := m.startJVM(t, sparkUser, jdkBin, cg, testjvm.Options{
		JVMArgs: []string{"-Xmx64m", "-XX:MaxDirectMemorySize=1g"},
		Args: []string{"--executor-id", "3", "--app-id", "app-oom", "--exit-after-s", "120",
			"--step-mb", "4", "--step-ms", "100", "--direct-mb", "400"},
	})
	select {
	case <-leak.Done():
	case <-time.After(120 * time.Second):
		t.Fatal("the leaking executor was not OOM-killed within 120 s")
	}
	var exit *exec.ExitError
	if !errors.As(leak.Err(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the leaking executor ended with %v, want killed by SIGKILL", leak.Err())
	}
	if n := cg.OOMKills(t); n != 1 {
		t.Fatalf("the leak's cgroup counts %d OOM kills, want 1", n)
	}
	// The machine reads the host's kernel log: other tests' kills show
	// too. The unit's log names this one by the kernel's pid and cgroup.
	line := fmt.Sprintf("pid=%d task=java constraint=CONSTRAINT_MEMCG", leak.PID)
	var logged string
	testenv.WaitFor(t, 30*time.Second, "the unit to log the kill of pid "+strconv.Itoa(leak.PID)+" in "+cg.Path, func() bool {
		journal, _ := m.run(t, "journalctl", "-u", "executor_exporter", "--no-pager", "--output=cat")
		for _, l := range strings.Split(journal, "\n") {
			if strings.Contains(l, line) && strings.Contains(l, "task_memcg="+cg.Path+" ") {
				logged = l
				return true
			}
		}
		return false
	})
	t.Logf("the unit's log of the kill (the machine knows the JVM as pid %d):\n%s", leak.NSPID, logged)
	// A new series reads 0 on its first scrape.
	var s map[string]*dto.MetricFamily
	testenv.WaitFor(t, 30*time.Second, `executor_oom_kills_total{constraint="CONSTRAINT_MEMCG",task="java"} to count the kill`, func() bool {
		s = e.scrape(t)
		return sum(s, "executor_oom_kills_total", map[string]string{"constraint": "CONSTRAINT_MEMCG", "task": "java"}) >= killsBefore+1
	})
	for _, other := range []map[string]string{{"pid": strconv.Itoa(sparkPID)}, {"executor_id": "7"}} {
		if k, ok := find(s, "executor_oom_kills_total", other); ok {
			t.Errorf("a kill was blamed on the Spark executor that was not killed: %v", k.labels)
		}
	}
	if after, _ := find(s, "executor_node_oom_kills_total", nil); after.value < nodeBefore.value+1 {
		t.Errorf("executor_node_oom_kills_total went from %v to %v, want +1 at least", nodeBefore.value, after.value)
	}
	testenv.WaitFor(t, 30*time.Second, "the leaking executor's end on executor_jvm_exits_total", func() bool {
		end, ok := find(e.scrape(t), "executor_jvm_exits_total", map[string]string{"pid": strconv.Itoa(leak.NSPID)})
		if ok && end.value == 1 {
			t.Logf("its end: executor_jvm_exits_total%v", end.labels)
		}
		return ok && end.value == 1
	})
}

// checkExposure runs systemd-analyze security on the running unit: its
// overall exposure must stay "OK" (at most 3.0), as docs/security.md says.
func checkExposure(t *testing.T, m *machine) {
	out := m.mustRun(t, "systemd-analyze", "security", "--no-pager", "executor_exporter.service")
	match := regexp.MustCompile(`Overall exposure level for executor_exporter\.service: ([0-9.]+) (\S+)`).FindStringSubmatch(out)
	if match == nil {
		t.Fatalf("no overall exposure in systemd-analyze security's output:\n%s", out)
	}
	exposure, _ := strconv.ParseFloat(match[1], 64)
	t.Logf("systemd-analyze security: exposure %s %s", match[1], match[2])
	if exposure > 3.0 || match[2] != "OK" {
		t.Errorf("exposure %s %s, want OK at 3.0 or less:\n%s", match[1], match[2], out)
	}
}

func countRestarts(t *testing.T, m *machine) string {
	t.Helper()
	return strings.TrimSpace(m.mustRun(t, "systemctl", "show", "--property=NRestarts", "--value", "executor_exporter.service"))
}

// envPath returns the path an environment variable names, after checking
// it exists.
func envPath(t *testing.T, name, what string) string {
	t.Helper()
	p := os.Getenv(name)
	if p == "" {
		testenv.Unavailable(t, "%s is not set: make test sets it to %s", name, what)
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Unavailable(t, "%s=%s: %v", name, p, err)
	}
	return p
}

// jdkBinDir is the directory of the host's java, bound into the machine.
func jdkBinDir(t *testing.T) string {
	t.Helper()
	java, err := filepath.EvalSymlinks(testenv.RequireTool(t, "java"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(java, "/usr/lib/jvm/") {
		testenv.Unavailable(t, "java is %s: the machine binds Debian's JDK from /usr/lib/jvm", java)
	}
	return filepath.Dir(java)
}

func readVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// exporter is the unit's exporter, in the machine's network namespace.
type exporter struct {
	addr   string
	client *http.Client
}

// newExporter reaches addr in the network namespace of the machine.
func newExporter(m *machine, addr string) *exporter {
	return &exporter{addr: addr, client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(_ context.Context, network, address string) (net.Conn, error) {
			return m.dial(network, address)
		},
	}}}
}

func (e *exporter) up() bool {
	resp, err := e.client.Get("http://" + e.addr + "/metrics")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (e *exporter) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := e.client.Get("http://" + e.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %s: %s", err, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// sample is one series: its labels and value.
type sample struct {
	labels map[string]string
	value  float64
}

// find returns the first sample of name whose labels include want.
func find(families map[string]*dto.MetricFamily, name string, want map[string]string) (sample, bool) {
	for _, m := range families[name].GetMetric() {
		s := sample{labels: map[string]string{}}
		for _, lp := range m.GetLabel() {
			s.labels[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && s.labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			s.value = m.GetGauge().GetValue()
		case m.Counter != nil:
			s.value = m.GetCounter().GetValue()
		case m.Untyped != nil:
			s.value = m.GetUntyped().GetValue()
		}
		return s, true
	}
	return sample{}, false
}

// sum adds the samples of name whose labels include want.
func sum(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	for _, m := range families[name].GetMetric() {
		match := true
		for _, lp := range m.GetLabel() {
			if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
				match = false
			}
		}
		if match {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// with is labels plus one more.
func with(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range labels {
		out[lk] = lv
	}
	return out
}
