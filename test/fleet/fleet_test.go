// Package fleet runs a real Prometheus 3 with the mixin's rules, alerts and
// dashboards against a simulated fleet (internal/fleetsim): a small one in
// `make test`, and the measured runs of `make fleet`.
package fleet

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/fleetsim"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

func loadTemplate(t testing.TB) *fleetsim.Template {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(), "internal", "fleetsim", "testdata", "node.prom"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tmpl, err := fleetsim.ParseTemplate(f)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// serveFleet serves the fleet's nodes from this process and returns the
// listener's address.
func serveFleet(t testing.TB, fleet *fleetsim.Fleet) string {
	t.Helper()
	srv := httptest.NewServer(fleet.Handler(time.Now))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// writeSD writes the file_sd file that scrapes every node at addr.
func writeSD(t testing.TB, fleet *fleetsim.Fleet, addr, path string) {
	t.Helper()
	sd, err := fleet.FileSD(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, sd, 0o644); err != nil {
		t.Fatal(err)
	}
}

// promConfig is a prometheus.yml scraping the fleet (job
// executor_exporter, the nodes of sdFile) and Prometheus itself, with the
// mixin's rules and alerts.
func promConfig(interval time.Duration, sdFile string) func(p *prom) string {
	rules := filepath.Join(testenv.RepoRoot(), "mixin", "generated")
	return func(p *prom) string {
		return fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
rule_files:
  - %[2]q
  - %[3]q
scrape_configs:
  - job_name: executor_exporter
    file_sd_configs:
      - files: [%[4]q]
        refresh_interval: 5s
  - job_name: prometheus
    scrape_interval: %[6]s
    static_configs:
      - targets: [%[5]q]
`, interval, filepath.Join(rules, "rules.yaml"), filepath.Join(rules, "alerts.yaml"), sdFile, p.Addr, min(interval, 10*time.Second))
	}
}

// TestFleetRulesAndDashboards runs 20 simulated nodes, whose executors
// live 40 s (so that kills, exits and spot notices come by the minute),
// scraped every second by Prometheus 3 with the committed rules and
// alerts: every recording rule and every query of every dashboard
// (panels and variables) must return data.
func TestFleetRulesAndDashboards(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs Prometheus 3")
	}
	const interval = time.Second
	fleet := fleetsim.New(fleetsim.Config{Nodes: 20, Seed: 1, Interval: interval,
		MeanLifetime: 40 * time.Second, Origin: time.Now().Add(-time.Minute)}, loadTemplate(t))
	sd := filepath.Join(t.TempDir(), "nodes.json")
	writeSD(t, fleet, serveFleet(t, fleet), sd)
	p := startProm(t, promConfig(interval, sd))

	for _, name := range recordingRules(t) {
		testenv.WaitFor(t, 3*time.Minute, "series of recording rule "+name, func() bool {
			return len(p.mustQuery(t, name)) > 0
		})
	}
	values := map[string]string{
		"job": "executor_exporter", "cluster": ".*", "instance_type": ".*", "lifecycle": ".*",
		"namespace": ".*", "app_name": ".*", "app_id": ".*", "executor": ".*",
		"instance":        fleet.Nodes()[0].Instance,
		"__rate_interval": "15s", "__interval": "1s", "__range": "5m",
	}
	for _, q := range dashboardQueries(t) {
		dash := q.Dashboard
		if dash == "executor-memory" {
			// Every executor of the fleet ("All"): a kill is on one node.
			values["instance"] = ".*"
		} else {
			values["instance"] = fleet.Nodes()[0].Instance
		}
		expr := substitute(q.Expr, values)
		if strings.Contains(expr, "$") {
			t.Errorf("%s: %s: a variable is left in %s", dash, q.Panel, expr)
			continue
		}
		if q.Event {
			if _, err := p.query(expr, time.Time{}); err != nil {
				t.Errorf("%s: %s: %v", dash, q.Panel, err)
			}
			continue
		}
		ok := false
		for end := time.Now().Add(time.Minute); !ok && time.Now().Before(end); time.Sleep(time.Second) {
			a, err := p.queryRange(expr, time.Now().Add(-2*time.Minute), time.Now(), interval)
			if q.Instant {
				a, err = p.query(expr, time.Time{})
			}
			if err != nil {
				t.Fatalf("%s: %s: %s: %v", dash, q.Panel, expr, err)
			}
			ok = len(a.Samples) > 0
		}
		if !ok {
			t.Errorf("%s: panel %q: no data for %s", dash, q.Panel, expr)
		}
	}
}
