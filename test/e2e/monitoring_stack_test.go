package e2e

// The monitoring stack the mixin's end-to-end tests share
// (alerting_test.go, dashboards_test.go): a real JVM in a memory cgroup, the
// exporter, a stub cloud metadata service, Prometheus and Alertmanager.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

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
	testenv.RequireRoot(t)
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
	bin := testenv.RequireTool(t, "prometheus-alertmanager")
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
	bin := testenv.RequireTool(t, "prometheus")
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
