package fleet

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/fleetsim"
)

// measureDashboards times every dashboard query as Grafana would run it
// over the last 1 h and 6 h (range queries at a 30 s step, the scrape
// interval, with $__rate_interval 2m; instant ones at the end with
// $__range the whole range), each twice, and writes the slower of the two.
// The fleet dashboard shows every cluster, instance type and lifecycle
// (All), the node dashboard node 0, the executor dashboard an executor
// running on node 0.
func measureDashboards(t *testing.T, p *prom, fleet *fleetsim.Fleet, report *bytes.Buffer) {
	t.Helper()
	end := time.Now()
	node := fleet.Nodes()[0]
	values := map[string]string{
		"job": "executor_exporter", "cluster": ".*", "instance_type": ".*", "lifecycle": ".*",
		"namespace": ".*", "app_name": ".*", "__rate_interval": "2m", "__interval": "30s",
	}
	info := p.mustQuery(t, fmt.Sprintf(`executor_jvm_info{instance=%q}`, node.Instance))
	if len(info) == 0 {
		t.Fatalf("no executor on node %s", node.Instance)
	}
	values["app_id"], values["executor"] = info[0].Metric["app_id"], info[0].Metric["executor_id"]

	fmt.Fprintf(report, "| dashboard | panel | 1 h | 6 h | samples read (6 h) |\n|---|---|---|---|---|\n")
	slow, failed := 0, 0
	for _, q := range dashboardQueries(t) {
		values["instance"] = node.Instance
		if q.Dashboard == "executor-fleet" {
			values["instance"] = ".*"
		}
		row := fmt.Sprintf("| %s | %s |", strings.TrimPrefix(q.Dashboard, "executor-"), q.Panel)
		var samples int64
		for _, rng := range []time.Duration{time.Hour, 6 * time.Hour} {
			values["__range"] = fmt.Sprintf("%ds", int(rng.Seconds()))
			expr := substitute(q.Expr, values)
			var took time.Duration
			var err error
			for range 2 {
				var a answer
				if q.Instant {
					a, err = p.query(expr, end)
				} else {
					a, err = p.queryRange(expr, end.Add(-rng), end, 30*time.Second)
				}
				took = max(took, a.Took)
				samples = a.Stats.Samples.TotalQueryableSamples
			}
			switch {
			case err != nil:
				failed++
				row += fmt.Sprintf(" error: %v |", err)
			case took >= time.Second:
				slow++
				row += fmt.Sprintf(" **%.2fs** |", took.Seconds())
			default:
				row += fmt.Sprintf(" %.3fs |", took.Seconds())
			}
		}
		report.WriteString(row + fmt.Sprintf(" %d |\n", samples))
	}
	fmt.Fprintf(report, "\n%d queries took 1 s or more, %d failed.\n", slow, failed)
}
