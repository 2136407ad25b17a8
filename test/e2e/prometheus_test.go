package e2e

// The one Prometheus harness of the end-to-end tests: a real Prometheus
// (Debian's 2.x, or the pinned 3.x that `make prometheus3` builds, named by
// $PROMETHEUS3) and a real Alertmanager, on loopback, killed when the test
// ends, their logs printed if it failed.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// prometheusBinaries are the Prometheus servers the live tests run
// against: Debian's, and the pinned Prometheus 3 when $PROMETHEUS3 names it
// (make test builds it; in CI it must be there).
func prometheusBinaries(t testing.TB) map[string]string {
	t.Helper()
	bins := map[string]string{"debian": testenv.RequireTool(t, "prometheus")}
	if p := os.Getenv("PROMETHEUS3"); p != "" {
		bins["v3"] = p
	} else if testenv.InCI() {
		t.Fatal("PROMETHEUS3 is not set: make test builds Prometheus 3 (make prometheus3) and sets it")
	}
	return bins
}

// promConfig says how to run Prometheus.
type promConfig struct {
	Binary       string   // default: Debian's prometheus
	RulesDir     string   // holds rules.yaml and alerts.yaml; "" for none
	Alertmanager string   // host:port; "" for none
	Targets      []string // scraped as job="executor_exporter"
	Interval     string   // scrape and evaluation interval; default 1s
}

// promServer is a running Prometheus.
type promServer struct {
	Addr string
	dir  string
	cfg  promConfig
}

func startPrometheus(t testing.TB, cfg promConfig) *promServer {
	t.Helper()
	if cfg.Binary == "" {
		cfg.Binary = testenv.RequireTool(t, "prometheus")
	}
	if cfg.Interval == "" {
		cfg.Interval = "1s"
	}
	p := &promServer{Addr: testenv.FreeAddr(t), dir: t.TempDir(), cfg: cfg}
	p.writeConfig(t)
	testenv.StartDaemon(t, cfg.Binary, "--config.file="+filepath.Join(p.dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"), "--web.listen-address="+p.Addr,
		"--web.enable-lifecycle")
	waitReady(t, "prometheus", p.Addr)
	return p
}

func (p *promServer) writeConfig(t testing.TB) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", p.cfg.Interval, p.cfg.Interval)
	if p.cfg.RulesDir != "" {
		fmt.Fprintf(&b, "rule_files:\n  - %q\n  - %q\n", filepath.Join(p.cfg.RulesDir, "rules.yaml"), filepath.Join(p.cfg.RulesDir, "alerts.yaml"))
	}
	if p.cfg.Alertmanager != "" {
		fmt.Fprintf(&b, "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [%q]\n", p.cfg.Alertmanager)
	}
	if len(p.cfg.Targets) == 0 {
		b.WriteString("scrape_configs: []\n")
	} else {
		quoted := make([]string, len(p.cfg.Targets))
		for i, tg := range p.cfg.Targets {
			quoted[i] = fmt.Sprintf("%q", tg)
		}
		fmt.Fprintf(&b, "scrape_configs:\n  - job_name: executor_exporter\n    static_configs:\n      - targets: [%s]\n", strings.Join(quoted, ", "))
	}
	if err := os.WriteFile(filepath.Join(p.dir, "prometheus.yml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// scrape points Prometheus at targets (an exporter's port is known only
// once it runs), reloads it and waits until the first target is up.
func (p *promServer) scrape(t testing.TB, targets ...string) {
	t.Helper()
	p.cfg.Targets = targets
	p.writeConfig(t)
	resp, err := http.Post("http://"+p.Addr+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("prometheus reload: %s", resp.Status)
	}
	testenv.WaitFor(t, 30*time.Second, "prometheus to scrape "+targets[0], func() bool {
		return len(p.query(t, fmt.Sprintf(`up{instance=%q} == 1`, targets[0]))) > 0
	})
}

// promSample is one series of a query's answer: Value for an instant
// vector, Values for a range vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
	Values [][2]any          `json:"values"`
}

// query runs an instant query, failing the test on an error answer.
func (p *promServer) query(t testing.TB, expr string) []promSample {
	t.Helper()
	res, err := p.tryQuery(expr)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	return res
}

// tryQuery runs an instant query; a scalar answer is one sample.
func (p *promServer) tryQuery(expr string) ([]promSample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return nil, err
	}
	if data.ResultType == "scalar" {
		return []promSample{{}}, nil
	}
	var samples []promSample
	err := json.Unmarshal(data.Result, &samples)
	return samples, err
}

// promAlert is an alert of /api/v1/alerts.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
	ActiveAt    time.Time         `json:"activeAt"`
}

// alerts returns the pending and firing alerts.
func (p *promServer) alerts() ([]promAlert, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	err := p.get("/api/v1/alerts", &data)
	return data.Alerts, err
}

func (p *promServer) get(path string, data any) error {
	resp, err := http.Get("http://" + p.Addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s", body.Status, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

// startAlertmanager runs Alertmanager sending every alert to webhookURL at
// once, and returns its address.
func startAlertmanager(t testing.TB, webhookURL string) string {
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
	addr := testenv.FreeAddr(t)
	testenv.StartDaemon(t, bin, "--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--cluster.listen-address=")
	waitReady(t, "alertmanager", addr)
	return addr
}

// waitReady polls a /-/ready endpoint.
func waitReady(t testing.TB, what, addr string) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, what+" to be ready", func() bool {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
