package vm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// caseOf returns a case of the guest's report and fails the test on each
// wait of it that timed out: what the exporter did not say in time.
func caseOf(t *testing.T, r guestRun, name string) *vmreport.Case {
	t.Helper()
	c, ok := r.Report.Cases[name]
	if !ok || c.PID == 0 {
		t.Fatalf("the guest did not run case %s (see its errors)%s", name, standInOutput(r.Out, name))
	}
	for _, why := range c.Restarts {
		t.Logf("%s: started again: %s%s", name, why, standInOutput(r.Out, name))
	}
	for _, w := range c.Waits {
		t.Logf("%s: waited %.1fs for %s", name, w.Seconds, w.What)
		if !w.OK {
			t.Errorf("in the VM, waited %.0fs for %s: it did not come", w.Seconds, w.What)
		}
	}
	return c
}

// standInOutput is the end of what a case's stand-in wrote: stderr,
// stdout (where a JVM puts the summary of a fatal error) and the error
// report's header.
func standInOutput(out, name string) string {
	files, _ := filepath.Glob(filepath.Join(out, name+"-hs_err_pid*.log"))
	files = append([]string{filepath.Join(out, name+".stderr"), filepath.Join(out, name+".stdout")}, files...)
	var b strings.Builder
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil || len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		if strings.Contains(f, "hs_err") {
			text, _, _ = bytes.Cut(text, []byte("---------------  T H R E A D"))
		}
		fmt.Fprintf(&b, "\n%s:\n%s", filepath.Base(f), tail(string(text), 3000))
	}
	// What the kernel said of failures the stand-in may have met: a
	// page it could not read in, an allocation that failed.
	klog, _ := os.ReadFile(filepath.Join(out, vmreport.KernelLog))
	var failures []string
	for _, line := range strings.Split(string(klog), "\n") {
		if lower := strings.ToLower(line); strings.Contains(lower, "fail") || strings.Contains(lower, "error") {
			failures = append(failures, line)
		}
	}
	if n := len(failures); n > 0 {
		fmt.Fprintf(&b, "\n%s, of failures and errors (%d lines, the last 20):\n%s", vmreport.KernelLog, n,
			strings.Join(failures[max(0, n-20):], "\n"))
	}
	return b.String()
}

// scrapeOf parses one of the scrapes the guest saved.
func scrapeOf(t *testing.T, r guestRun, name string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Out, name))
	if err != nil {
		t.Fatalf("the guest saved no %s: %v", name, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	f, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// series lists the samples of name whose labels include want, as
// label maps with the value under "=".
func series(f map[string]*dto.MetricFamily, name string, want map[string]string) []map[string]string {
	var out []map[string]string
	for _, m := range f[name].GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		v := m.GetUntyped().GetValue()
		switch {
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		}
		have["="] = strconv.FormatFloat(v, 'g', -1, 64)
		out = append(out, have)
	}
	return out
}

// expectOne fails unless exactly one series of name has the labels want,
// and it reads value; on a miss it shows what the exporter had for the
// same process instead.
func expectOne(t *testing.T, f map[string]*dto.MetricFamily, name string, want map[string]string, value float64, near map[string]string) {
	t.Helper()
	got := series(f, name, want)
	if len(got) == 1 && got[0]["="] == strconv.FormatFloat(value, 'g', -1, 64) {
		return
	}
	t.Errorf("want one %s%s = %v; the exporter had %s%s:\n%s", name, fmtLabels(want), value, name, fmtLabels(near), fmtSeries(series(f, name, near)))
}

func fmtLabels(l map[string]string) string {
	var parts []string
	for k, v := range l {
		if k != "=" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func fmtSeries(s []map[string]string) string {
	if len(s) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, l := range s {
		fmt.Fprintf(&b, "  %s %s\n", fmtLabels(l), l["="])
	}
	return b.String()
}

func pidLabel(c *vmreport.Case) map[string]string {
	return map[string]string{"pid": strconv.Itoa(c.PID)}
}

func identity(c *vmreport.Case, more ...string) map[string]string {
	l := map[string]string{"pid": strconv.Itoa(c.PID), "role": "executor", "app_id": c.AppID, "executor_id": c.ExecutorID}
	for i := 0; i+1 < len(more); i += 2 {
		l[more[i]] = more[i+1]
	}
	return l
}

// checkCgroupV2: the guest ran on a kernel with only the unified
// hierarchy, the memory controller on, and every JVM in a v2 group.
func checkCgroupV2(t *testing.T, r guestRun) {
	t.Logf("guest kernel %s, cgroup2 subtree_control %q", r.Report.Kernel, r.Report.Controllers)
	if r.Report.SelfCgroup != "0::/vm-guest\n" {
		t.Errorf("the guest's /proc/self/cgroup is %q, want only the v2 line 0::/vm-guest", r.Report.SelfCgroup)
	}
	if !strings.Contains(" "+r.Report.Controllers+" ", " memory ") {
		t.Errorf("the memory controller is not enabled at the v2 root: %q", r.Report.Controllers)
	}
	for name, c := range r.Report.Cases {
		want := "0::" + strings.TrimPrefix(c.CgroupDir, "/sys/fs/cgroup") + "\n"
		if c.PID != 0 && c.ProcCgroup != want {
			t.Errorf("%s: /proc/<pid>/cgroup of the JVM is %q, want %q", name, c.ProcCgroup, want)
		}
	}
}

// checkContainerOOM: the kernel killed the executor in its v2
// container, and the exporter named it, the container constraint and the
// cause. It returns the case for further checks.
func checkContainerOOM(t *testing.T, r guestRun, name, cause string) *vmreport.Case {
	c := caseOf(t, r, name)
	if c.ExitCode != 137 {
		t.Errorf("the JVM ended with %d, want 137 (SIGKILL)", c.ExitCode)
	}
	if c.CgroupOOMKills < 1 {
		t.Errorf("memory.events of %s counts %d OOM kills: the JVM died of something else", c.Cgroup, c.CgroupOOMKills)
	}
	f := scrapeOf(t, r, vmreport.Final)
	expectOne(t, f, "executor_oom_kills_total", identity(c, "constraint", "CONSTRAINT_MEMCG", "cause", cause, "task", "java"), 1, pidLabel(c))
	judgedOnContainer(t, r, c)
	return c
}

// judgedOnContainer: the verdict on the kill of c's JVM used its
// container's limit and usage as the exporter read them from the v2
// files (the status page's last sample before the kill).
func judgedOnContainer(t *testing.T, r guestRun, c *vmreport.Case) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Out, vmreport.StatusJSON))
	if err != nil {
		t.Fatalf("the guest saved no /status.json: %v", err)
	}
	var status struct {
		Kills []struct {
			PID        int `json:"pid"`
			LastSample *struct {
				Limit uint64 `json:"container_limit_bytes"`
				Usage uint64 `json:"container_usage_bytes"`
			} `json:"last_sample"`
		} `json:"oom_kills"`
	}
	if err := json.Unmarshal(b, &status); err != nil {
		t.Fatalf("/status.json: %v", err)
	}
	for _, k := range status.Kills {
		if k.PID != c.PID {
			continue
		}
		if k.LastSample == nil || k.LastSample.Limit != c.CgroupLimit || k.LastSample.Usage == 0 {
			t.Errorf("the kill was judged on %+v, want the container's limit %d and its usage", k.LastSample, c.CgroupLimit)
		}
		return
	}
	t.Errorf("/status.json lists no kill of pid %d", c.PID)
}

// checkExits: each of the five ways an executor ends, counted once with
// its reason.
func checkExits(t *testing.T, r guestRun) {
	f := scrapeOf(t, r, vmreport.Final)
	log, _ := os.ReadFile(filepath.Join(r.Out, vmreport.ExporterLog))
	for _, tc := range []struct{ name, reason string }{
		{"exit-killed", "killed"},
		{"exit-exited", "exited"},
		{"exit-heap", "heap_exhausted"},
		{"exit-interrupted", "interrupted"},
		{"oom-native", "oom_killed"},
		{"oom-heap", "oom_killed"},
		{"node-oom", "oom_killed"},
	} {
		t.Run(tc.reason+"/"+tc.name, func(t *testing.T) {
			c := caseOf(t, r, tc.name)
			want := map[string]int{"killed": 137, "exited": 143, "heap_exhausted": 52, "interrupted": 137, "oom_killed": 137}[tc.reason]
			if c.ExitCode != want {
				t.Errorf("the JVM ended with %d, want %d", c.ExitCode, want)
			}
			expectOne(t, f, "executor_jvm_exits_total", identity(c, "reason", tc.reason), 1, pidLabel(c))
			if len(series(f, "executor_jvm_exits_total", pidLabel(c))) > 1 {
				t.Errorf("the end was counted more than once:\n%s", fmtSeries(series(f, "executor_jvm_exits_total", pidLabel(c))))
			}
			line := fmt.Sprintf("JVM ended: Spark executor %s of %s (pid %d)", c.ExecutorID, c.AppID, c.PID)
			if n := strings.Count(string(log), line); n != 1 {
				t.Errorf("%d log lines %q, want 1", n, line)
			}
		})
	}
}

// checkKubernetes: an executor in a pod's container cgroup, as the
// systemd or the cgroupfs driver names it, has its pod UID and container
// ID from the v2 path, and its container's limit and usage.
func checkKubernetes(t *testing.T, r guestRun, name, uid, containerID string) {
	c := caseOf(t, r, name)
	if c.ExitCode != -1 {
		t.Errorf("the JVM ended (%d) before the guest finished", c.ExitCode)
	}
	f := scrapeOf(t, r, vmreport.BeforeNodeOOM)
	expectOne(t, f, "executor_jvm_info", identity(c, "uid", uid, "container_id", containerID), 1, pidLabel(c))
	expectOne(t, f, "executor_container_memory_limit_bytes", identity(c), float64(c.CgroupLimit), pidLabel(c))
	if c.CgroupHigh > 0 {
		expectOne(t, f, "executor_container_memory_high_bytes", identity(c), float64(c.CgroupHigh), pidLabel(c))
	} else if s := series(f, "executor_container_memory_high_bytes", pidLabel(c)); len(s) > 0 {
		t.Errorf("memory.high is max, yet:\n%s", fmtSeries(s))
	}
	// cgroup v2 with PSI (Debian's kernel): pressure and events, no v1 failcnt.
	for _, kind := range []string{"some", "full"} {
		if s := series(f, "executor_container_memory_pressure_stall_seconds_total", identity(c, "kind", kind)); len(s) != 1 {
			t.Errorf("executor_container_memory_pressure_stall_seconds_total{kind=%q}: %s", kind, fmtSeries(s))
		}
	}
	for _, event := range []string{"low", "high", "max", "oom", "oom_kill"} {
		if s := series(f, "executor_container_memory_events_total", identity(c, "event", event)); len(s) != 1 {
			t.Errorf("executor_container_memory_events_total{event=%q}: %s", event, fmtSeries(s))
		}
	}
	if s := series(f, "executor_container_memory_failcnt_total", pidLabel(c)); len(s) > 0 {
		t.Errorf("a v1 figure on v2:\n%s", fmtSeries(s))
	}
	if s := series(f, "executor_container_memory_usage_bytes", identity(c)); len(s) != 1 || s[0]["="] == "0" {
		t.Errorf("executor_container_memory_usage_bytes of the JVM: %s", fmtSeries(s))
	}
}

// checkPySpark: the kernel killed the Python child in its executor's
// container; the JVM lived on, its container counts the kill, and the
// kill is counted against the child, not against the JVM or another
// executor.
func checkPySpark(t *testing.T, r guestRun) {
	c := caseOf(t, r, "pyspark")
	if c.ExitCode != -1 {
		t.Errorf("the JVM ended (%d): the kernel should have killed its Python child only", c.ExitCode)
	}
	if c.CgroupOOMKills < 1 {
		t.Errorf("memory.events of %s counts no OOM kill", c.Cgroup)
	}
	f := scrapeOf(t, r, vmreport.BeforeNodeOOM)
	expectOne(t, f, "executor_container_oom_kills_total", identity(c), 1, pidLabel(c))
	kills := series(f, "executor_oom_kills_total", map[string]string{"task": "python3"})
	if len(kills) != 1 || kills[0]["="] != "1" || kills[0]["constraint"] != "CONSTRAINT_MEMCG" {
		t.Fatalf("want one kill of python3 with CONSTRAINT_MEMCG:\n%s", fmtSeries(kills))
	}
	// The child is no JVM but was killed in its executor's cgroup: its
	// kill carries the executor's identity, task the child's, judged a
	// PySpark worker's.
	expectOne(t, f, "executor_oom_kills_total", identity(c, "task", "python3", "constraint", "CONSTRAINT_MEMCG", "cause", "native", "region", "python"), 1,
		map[string]string{"task": "python3"})
	t.Logf("the child's kill: %s", fmtLabels(kills[0]))
	// The container's own count of the kill, and the reclaim at its limit
	// before it.
	expectOne(t, f, "executor_container_memory_events_total", identity(c, "event", "oom_kill"), 1, pidLabel(c))
	for _, event := range []string{"max", "oom"} {
		if s := series(f, "executor_container_memory_events_total", identity(c, "event", event)); len(s) != 1 || s[0]["="] == "0" {
			t.Errorf("executor_container_memory_events_total{event=%q} of the JVM after the kill: %s", event, fmtSeries(s))
		}
	}
	log, _ := os.ReadFile(filepath.Join(r.Out, vmreport.ExporterLog))
	if line := fmt.Sprintf("pid=%d task=python3 constraint=CONSTRAINT_MEMCG", c.ChildPID); c.ChildPID == 0 || !strings.Contains(string(log), line) {
		t.Errorf("the exporter's log has no %q (the child was pid %d)", line, c.ChildPID)
	}
	if s := series(f, "executor_jvm_exits_total", pidLabel(c)); len(s) > 0 {
		t.Errorf("the live JVM was counted as ended:\n%s", fmtSeries(s))
	}
}

// checkNodeOOM: the executor filled the machine; the kernel's global OOM
// killer took it (CONSTRAINT_NONE), the exporter said node, and the
// machine and the exporter lived on.
func checkNodeOOM(t *testing.T, r guestRun) {
	c := caseOf(t, r, "node-oom")
	if !r.Report.Survived {
		t.Error("the exporter did not answer after the machine-wide OOM kill")
	}
	if c.ExitCode != 137 {
		t.Errorf("the JVM ended with %d, want 137 (SIGKILL)", c.ExitCode)
	}
	before := scrapeOf(t, r, vmreport.BeforeNodeOOM)
	f := scrapeOf(t, r, vmreport.Final)
	expectOne(t, f, "executor_oom_kills_total", identity(c, "constraint", "CONSTRAINT_NONE", "cause", "node", "task", "java"), 1, pidLabel(c))
	judgedOnContainer(t, r, c)
	b := series(before, "executor_node_oom_kills_total", nil)
	a := series(f, "executor_node_oom_kills_total", nil)
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("executor_node_oom_kills_total before %v, after %v", b, a)
	}
	bv, _ := strconv.ParseFloat(b[0]["="], 64)
	av, _ := strconv.ParseFloat(a[0]["="], 64)
	if av < bv+1 {
		t.Errorf("executor_node_oom_kills_total went from %v to %v, want +1 at least", bv, av)
	}
}
