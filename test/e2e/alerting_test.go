package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// alertTestOverrides shorten every window and `for` of the mixin so that
// the alerts fire within seconds against 1s scrapes; thresholds stay the
// shipped defaults.
const alertTestOverrides = `{ _config+:: {
  rateInterval: '10s',
  heapAfterGCWindow: '10s', heapAfterGCFor: '5s',
  gcOverheadFor: '5s', workingSetFor: '5s', exhaustionFor: '5s',
  memoryPressureFor: '5s', metadataUnavailableFor: '5s',
  collectorFailingFor: '5s', exporterDownFor: '5s', oomKillWindow: '1m',
} }`

// The executor that fills its heap: 60 MiB kept reachable in a 64 MiB heap,
// with garbage churned so that collections keep running. SerialGC because
// G1 stores each 1 MiB array as a humongous object spanning two regions and
// throws OutOfMemoryError long before 60 MiB.
var fullHeapExecutor = testjvm.Options{
	JVMArgs: []string{"-Xmx64m", "-XX:+UseSerialGC"},
	Args: []string{"--executor-id", "1", "--app-id", "app-alert-test",
		"--heap-mb", "60", "--churn", "--exit-after-s", "600"},
}

// TestAlertsEndToEnd runs the real chain: the built exporter reading a real
// JVM, Prometheus scraping it every second with the mixin's rules (rendered
// with short `for`s), Alertmanager routing to a webhook. The heap alert
// must arrive at the webhook with the executor's identity and the machine's
// instance type (joined from executor_instance_info, from a stub AWS
// metadata service that also announces a spot interruption), the
// interruption alert, the exporter-down alert for a target that does not
// answer, and the collector-failing alert for an exporter reading a
// malformed /proc/meminfo.
func TestAlertsEndToEnd(t *testing.T) {
	hook := newMixinWebhook(t)
	am := mixinAlertmanager(t, hook.URL)
	rules := renderMixin(t, alertTestOverrides)
	broken := startExporter(t, fixtureArgs("malformed")...)
	dead := freeAddr(t)
	st := startMonitoringStack(t, rules, am, broken.Addr, dead)

	heap := hook.waitFor(t, 3*time.Minute, "ExecutorJVMHeapNearlyFull", map[string]string{
		"app_id": "app-alert-test", "executor_id": "1", "role": "executor",
		"pid": fmt.Sprint(st.JVM.PID), "instance": st.Exporter.Addr, "severity": "warning",
		"instance_type": "r5.xlarge", "lifecycle": "spot",
	})
	for _, want := range []string{"app-alert-test", "executor 1", st.Exporter.Addr, "(r5.xlarge, spot)"} {
		if !strings.Contains(heap.Annotations["description"], want) {
			t.Errorf("description %q does not name %q", heap.Annotations["description"], want)
		}
	}
	if !strings.HasSuffix(heap.Annotations["runbook_url"], "docs/runbook.md#executorjvmheapnearlyfull") {
		t.Errorf("runbook_url = %q", heap.Annotations["runbook_url"])
	}

	hook.waitFor(t, time.Minute, "ExecutorInstanceInterruptionPending", map[string]string{
		"instance": st.Exporter.Addr, "event": "spot_interruption", "severity": "critical",
		"instance_type": "r5.xlarge", "lifecycle": "spot",
	})
	hook.waitFor(t, time.Minute, "ExecutorExporterDown", map[string]string{"instance": dead})
	hook.waitFor(t, time.Minute, "ExecutorCollectorFailing", map[string]string{"instance": broken.Addr, "collector": "memory"})

	// The executor's container (256 MiB) is far from its limit, nothing was
	// killed, the rebalance recommendation is not announced: those alerts
	// must not be active.
	if n := len(st.query(t, `ALERTS{alertname="ExecutorInstanceInterruptionPending", event!="spot_interruption"}`)); n != 0 {
		t.Errorf("interruption alert for an event that was not announced (%d series)", n)
	}
	for _, name := range []string{"ExecutorContainerMemoryNearLimit", "ExecutorOOMKilled"} {
		if n := len(st.query(t, fmt.Sprintf(`ALERTS{alertname=%q, app_id="app-alert-test"}`, name))); n != 0 {
			t.Errorf("%s is active for the test executor (%d series)", name, n)
		}
	}
}

// TestRunbookCoversEveryAlert: every generated alert links to a section of
// docs/runbook.md that exists, named after the alert.
func TestRunbookCoversEveryAlert(t *testing.T) {
	root := testjvm.RepoRoot()
	alerts, err := os.ReadFile(filepath.Join(root, "mixin", "generated", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runbook, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllSubmatch(runbook, -1) {
		anchors[strings.ToLower(string(m[1]))] = true
	}
	names := regexp.MustCompile(`(?m)^  - alert: "?(\w+)"?$`).FindAllSubmatch(alerts, -1)
	links := regexp.MustCompile(`runbook_url: "?\S+/docs/runbook\.md#(\w+)"?`).FindAllSubmatch(alerts, -1)
	if len(names) == 0 || len(names) != len(links) {
		t.Fatalf("%d alerts but %d runbook_urls in alerts.yaml", len(names), len(links))
	}
	for i, n := range names {
		name, anchor := string(n[1]), string(links[i][1])
		if anchor != strings.ToLower(name) || !anchors[anchor] {
			t.Errorf("alert %s: runbook_url anchor #%s has no section '## %s' in docs/runbook.md", name, anchor, name)
		}
	}
}

// monitoringStack is a JVM in a memory cgroup, the exporter reading it (on
// a machine that a stub AWS metadata service calls a spot r5.xlarge with a
// pending interruption) and Prometheus scraping the exporter (and any extra
// targets) every second.
type monitoringStack struct {
	JVM      *testjvm.JVM
	Exporter *exporter
	PromAddr string
}

// startMonitoringStack starts the stack with the rule files in rulesDir and
// alerting to alertmanager (host:port; "" for none).
func startMonitoringStack(t *testing.T, rulesDir, alertmanager string, extraTargets ...string) *monitoringStack {
	t.Helper()
	requireRoot(t)
	st := &monitoringStack{}
	opts := fullHeapExecutor
	opts.Cgroup = mixinCgroup(t, 256<<20)
	st.JVM = testjvm.Start(t, opts)
	imds := mixinAWSMetadata(t)
	st.Exporter = startExporter(t, "--cloud.provider=aws", "--cloud.aws.metadata-url="+imds,
		"--cloud.interruption-poll-interval=1s")
	st.PromAddr = mixinPrometheus(t, rulesDir, alertmanager, append([]string{st.Exporter.Addr}, extraTargets...))
	return st
}

// mixinAWSMetadata serves the few IMDSv2 paths the exporter reads: a spot
// r5.xlarge in eu-west-1a with a spot interruption announced and no
// rebalance recommendation. It returns the service's base URL.
func mixinAWSMetadata(t testing.TB) string {
	t.Helper()
	items := map[string]string{
		"instance-id":                 "i-0e2e0000000000001",
		"instance-type":               "r5.xlarge",
		"placement/availability-zone": "eu-west-1a",
		"placement/region":            "eu-west-1",
		"instance-life-cycle":         "spot",
		"spot/instance-action":        `{"action": "terminate", "time": "2030-01-01T00:00:00Z"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			fmt.Fprint(w, "e2e-token")
			return
		}
		if r.Header.Get("X-aws-ec2-metadata-token") != "e2e-token" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		v, ok := items[strings.TrimPrefix(r.URL.Path, "/latest/meta-data/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, v)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// query runs an instant PromQL query and returns its vector, failing the
// test on an error answer.
func (st *monitoringStack) query(t testing.TB, expr string) []mixinSample {
	t.Helper()
	res, err := mixinQuery(st.PromAddr, expr)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	return res
}

type mixinSample struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// mixinQuery asks Prometheus's HTTP API for an instant vector.
func mixinQuery(addr, expr string) ([]mixinSample, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s: %s", body.Status, body.Error)
	}
	if body.Data.ResultType == "scalar" {
		return []mixinSample{{}}, nil
	}
	var samples []mixinSample
	err = json.Unmarshal(body.Data.Result, &samples)
	return samples, err
}

// mixinJsonnetVersion is the go-jsonnet version mixin/Makefile pins, so the
// tests render with the same tool as `make mixin`.
func mixinJsonnetVersion(t testing.TB) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(testjvm.RepoRoot(), "mixin", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^JSONNET_VERSION\s*\?=\s*(\S+)`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no JSONNET_VERSION in mixin/Makefile")
	}
	return string(m[1])
}

// renderMixin renders the mixin with overrides (jsonnet) into a temporary
// directory and returns the directory of its rule files.
func renderMixin(t testing.TB, overrides string) string {
	t.Helper()
	goTool := requireTool(t, "go")
	out := t.TempDir()
	for _, d := range []string{"mixin/generated", "dashboards"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goTool, "run", "github.com/google/go-jsonnet/cmd/jsonnet@"+mixinJsonnetVersion(t),
		"-S", "-m", out, "--tla-code", "overrides="+overrides, "render.jsonnet")
	cmd.Dir = filepath.Join(testjvm.RepoRoot(), "mixin")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("jsonnet: %v\n%s", err, b)
	}
	return filepath.Join(out, "mixin", "generated")
}

// mixinCgroup creates a memory cgroup limited to limit bytes (v1, or
// v2 when that is what is mounted) and returns its cgroup.procs file. The
// cgroup's tasks are killed and the cgroup removed when the test ends.
func mixinCgroup(t *testing.T, limit int64) string {
	t.Helper()
	name := fmt.Sprintf("executor-exporter-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())
	dir, limitFile := filepath.Join("/sys/fs/cgroup/memory", name), "memory.limit_in_bytes"
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		dir, limitFile = filepath.Join("/sys/fs/cgroup", name), "memory.max"
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, f := range strings.Fields(string(procs)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("could not remove cgroup %s", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(fmt.Sprint(limit)), 0o644); err != nil {
		t.Fatalf("set memory limit: %v", err)
	}
	return filepath.Join(dir, "cgroup.procs")
}

// mixinDaemon runs a helper server (Prometheus, Alertmanager), kills it when
// the test ends and prints its output if the test failed.
func mixinDaemon(t testing.TB, bin string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	var mu sync.Mutex
	cmd := exec.Command(bin, args...)
	cmd.Stdout = lockedWriter{&mu, &out}
	cmd.Stderr = lockedWriter{&mu, &out}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
}

// mixinWaitReady polls a /-/ready endpoint.
func mixinWaitReady(t testing.TB, what, addr string) {
	t.Helper()
	waitFor(t, time.Minute, what+" to be ready", func() bool {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func mixinAlertmanager(t testing.TB, webhookURL string) string {
	t.Helper()
	bin := requireTool(t, "prometheus-alertmanager")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`route:
  receiver: webhook
  group_by: [alertname, instance, pid]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: %q
`, webhookURL)
	if err := os.WriteFile(filepath.Join(dir, "alertmanager.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	mixinDaemon(t, bin, "--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--cluster.listen-address=")
	mixinWaitReady(t, "alertmanager", addr)
	return addr
}

func mixinPrometheus(t testing.TB, rulesDir, alertmanager string, targets []string) string {
	t.Helper()
	bin := requireTool(t, "prometheus")
	dir := t.TempDir()
	var alerting string
	if alertmanager != "" {
		alerting = fmt.Sprintf("alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [%q]\n", alertmanager)
	}
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
  - %q
%sscrape_configs:
  - job_name: executor_exporter
    static_configs:
      - targets: [%s]
`, filepath.Join(rulesDir, "rules.yaml"), filepath.Join(rulesDir, "alerts.yaml"), alerting, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	mixinDaemon(t, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	mixinWaitReady(t, "prometheus", addr)
	return addr
}

// mixinWebhook records what Alertmanager sends.
type mixinWebhook struct {
	URL    string
	mu     sync.Mutex
	alerts []mixinAlert
}

type mixinAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func newMixinWebhook(t testing.TB) *mixinWebhook {
	t.Helper()
	h := &mixinWebhook{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Alerts []mixinAlert `json:"alerts"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Errorf("webhook: bad payload %q: %v", body, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.alerts = append(h.alerts, msg.Alerts...)
		h.mu.Unlock()
	}))
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, a := range h.alerts {
				t.Logf("webhook received: %s %v", a.Status, a.Labels)
			}
		}
	})
	h.URL = srv.URL + "/hook"
	return h
}

// waitFor waits for a firing alert named name whose labels include want.
func (h *mixinWebhook) waitFor(t testing.TB, timeout time.Duration, name string, want map[string]string) mixinAlert {
	t.Helper()
	var found mixinAlert
	waitFor(t, timeout, fmt.Sprintf("alert %s %v at the webhook", name, want), func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, a := range h.alerts {
			if a.Status != "firing" || a.Labels["alertname"] != name {
				continue
			}
			ok := true
			for k, v := range want {
				ok = ok && a.Labels[k] == v
			}
			if ok {
				found = a
				return true
			}
		}
		return false
	})
	t.Logf("%s arrived: %v", name, found.Labels)
	return found
}
