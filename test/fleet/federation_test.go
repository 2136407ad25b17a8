package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/fleetsim"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// aggregatedLevels are the levels of the recording rules a global view
// federates (docs/cardinality.md): the executor and executor_instance
// ones keep a series per executor, as many as the raw series.
const aggregatedLevels = `(instance_type|executor_node|app|app_name|app_run)`

var aggregated = regexp.MustCompile(`^` + aggregatedLevels + `:`)

// rawFleetPanels are the fleet dashboard's panels that read per-node or
// per-JVM series, not a recording rule: a global Prometheus that federates
// the recording rules only cannot show them. Give such a panel a recording
// rule and take it out of this list.
var rawFleetPanels = map[string]bool{
	"Native OOM kills by application and region": true, // executor_oom_kills_total
}

// TestFederationOfRecordingRules is the plan past one Prometheus
// (docs/cardinality.md), in small: one Prometheus 3 per cluster, each
// scraping its cluster's nodes with the mixin's rules and alerts, and a
// global Prometheus 3 that federates the aggregated levels of their
// recording rules only. Every such rule must arrive at the global one from
// both clusters,
// with its cluster label; every panel of the fleet dashboard must have
// data there, except those listed in rawFleetPanels (and those must not).
func TestFederationOfRecordingRules(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs three Prometheus 3 servers")
	}
	const interval = time.Second
	fleet := fleetsim.New(fleetsim.Config{Nodes: 20, Seed: 2, Interval: interval,
		MeanLifetime: 40 * time.Second, Origin: time.Now().Add(-time.Minute)}, loadTemplate(t))
	addr := serveFleet(t, fleet)
	clusters := fleet.Config().Clusters
	var shards []string
	for _, c := range clusters {
		sd, err := fleetsim.FileSD(addr, fleet.ClusterNodes(c))
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "nodes.json")
		if err := os.WriteFile(file, sd, 0o644); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, startProm(t, promConfig(interval, file)).Addr)
	}
	global := startProm(t, func(*prom) string {
		return fmt.Sprintf(`global:
  scrape_interval: %s
scrape_configs:
  - job_name: federate
    honor_labels: true
    metrics_path: /federate
    params:
      'match[]': ['{__name__=~"%s:.+"}']
    static_configs:
      - targets: [%q, %q]
`, interval, aggregatedLevels, shards[0], shards[1])
	})

	for _, name := range recordingRules(t) {
		if !aggregated.MatchString(name) {
			continue
		}
		testenv.WaitFor(t, 3*time.Minute, name+" of every cluster at the global Prometheus", func() bool {
			got := map[string]bool{}
			for _, s := range global.mustQuery(t, name) {
				got[s.Metric["cluster"]] = true
			}
			for _, c := range clusters {
				if !got[c] {
					return false
				}
			}
			return true
		})
	}
	values := map[string]string{"job": "executor_exporter", "cluster": ".*", "instance_type": ".*",
		"lifecycle": ".*", "__rate_interval": "15s", "__interval": "1s", "__range": "5m"}
	for _, q := range dashboardQueries(t) {
		if q.Dashboard != "executor-fleet" || q.Event || strings.HasPrefix(q.Panel, "$") {
			continue
		}
		// "or vector(0)" answers even without the series it reads: the
		// query without it must have data.
		expr := strings.TrimSuffix(substitute(q.Expr, values), " or vector(0)")
		a, err := global.query(expr, time.Time{})
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		empty := len(a.Samples) == 0
		switch {
		case empty && !rawFleetPanels[q.Panel]:
			t.Errorf("fleet panel %q has no data from the recording rules alone: %s", q.Panel, expr)
		case !empty && rawFleetPanels[q.Panel]:
			t.Errorf("fleet panel %q has data from the recording rules alone: take it out of rawFleetPanels", q.Panel)
		}
	}
}
