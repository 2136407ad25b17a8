package fleet

// TestFleetMeasure is `make fleet NODES=N`: N simulated nodes with
// FLEET_HISTORY (6 h) of history pushed into Prometheus 3 by remote-write,
// then scraped live every 30 s with the mixin's rules and alerts for
// FLEET_LIVE (10 min), and measured: head series, samples per second,
// resident memory, every rule group's evaluation time against its
// interval, and every dashboard query over 1 h and 6 h. The results, a
// markdown report, go to FLEET_REPORT. It does not run without FLEET_NODES.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/fleetsim"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

func TestFleetMeasure(t *testing.T) {
	nodes, _ := strconv.Atoi(os.Getenv("FLEET_NODES"))
	if nodes <= 0 {
		t.Skip("set FLEET_NODES (make fleet NODES=N) to measure a fleet")
	}
	const interval = 30 * time.Second
	history := envDuration(t, "FLEET_HISTORY", 6*time.Hour)
	live := envDuration(t, "FLEET_LIVE", 10*time.Minute)
	origin := time.Now().Add(-history).Truncate(interval)
	fleet := fleetsim.New(fleetsim.Config{Nodes: nodes, Seed: 1, Interval: interval, Origin: origin}, loadTemplate(t))

	// Nothing may be appended at the present while the history is pushed
	// (the head then refuses samples an hour older): no scrapes, no rules
	// until it is in.
	p := startProm(t, func(*prom) string { return "scrape_configs: []\n" },
		"--web.enable-remote-write-receiver", "--storage.tsdb.retention.time=30d")
	var report bytes.Buffer
	fmt.Fprintf(&report, "## %d nodes\n\n", nodes)

	began := time.Now()
	pushed, histEnd := pushHistory(t, p, fleet, origin, interval)
	fmt.Fprintf(&report, "History: %v of %d nodes, %d samples, pushed by remote-write in %v.\n",
		histEnd.Sub(origin).Round(time.Minute), nodes, pushed, time.Since(began).Round(time.Second))

	// Scraping starts where the history ends.
	sdFile := filepath.Join(t.TempDir(), "nodes.json")
	writeSD(t, fleet, serveFleet(t, fleet), sdFile)
	if err := os.WriteFile(filepath.Join(p.Dir, "prometheus.yml"), []byte(promConfig(interval, sdFile)(p)), 0o644); err != nil {
		t.Fatal(err)
	}
	p.reload(t)
	liveFrom := time.Now()

	if os.Getenv("FLEET_RULES_BACKFILL") != "0" {
		began = time.Now()
		backfillRules(t, p, origin, histEnd, interval)
		fmt.Fprintf(&report, "Recording rules over the history: `promtool tsdb create-blocks-from rules`, %v.\n",
			time.Since(began).Round(time.Second))
	}
	// The figures are read over the live window after the backfill, which
	// competes for the same CPUs.
	measureFrom := time.Now()
	time.Sleep(live)
	window := fmt.Sprintf("%ds", int(time.Since(measureFrom).Seconds()))
	fmt.Fprintf(&report, "Live: %v of 30 s scrapes and rule evaluations (%v measured, after the backfill).\n\n",
		time.Since(liveFrom).Round(time.Second), live)

	stat := func(expr string) float64 {
		s := p.mustQuery(t, expr)
		if len(s) == 0 {
			return 0
		}
		return s[0].float()
	}
	fmt.Fprintf(&report, "| head series | samples/s appended | series scraped | series recorded | Prometheus RSS (max) | Prometheus CPU | share of the window compacting |\n|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&report, "| %.0f | %.0f | %.0f | %.0f | %.2f GiB | %.2f cores | %.0f %% |\n\n",
		stat(`prometheus_tsdb_head_series{job="prometheus"}`),
		stat(`rate(prometheus_tsdb_head_samples_appended_total{job="prometheus"}[5m])`),
		stat(`sum(scrape_samples_post_metric_relabeling{job="executor_exporter"})`),
		stat(`sum(prometheus_rule_group_last_evaluation_samples)`),
		stat(`max_over_time(process_resident_memory_bytes{job="prometheus"}[`+window+`])`)/(1<<30),
		stat(`rate(process_cpu_seconds_total{job="prometheus"}[`+window+`])`),
		// Compaction of the pushed history can overlap the window and
		// slow the rule groups down with it.
		100*stat(`rate(prometheus_tsdb_compaction_duration_seconds_sum{job="prometheus"}[`+window+`])`))

	fmt.Fprintf(&report, "| rule group | interval | last duration, mean | max | max / interval | series out |\n|---|---|---|---|---|---|\n")
	groups := p.mustQuery(t, `prometheus_rule_group_interval_seconds`)
	sort.Slice(groups, func(i, j int) bool { return groups[i].Metric["rule_group"] < groups[j].Metric["rule_group"] })
	for _, g := range groups {
		sel := fmt.Sprintf(`{rule_group=%q}`, g.Metric["rule_group"])
		mean := stat(`avg_over_time(prometheus_rule_group_last_duration_seconds` + sel + `[` + window + `])`)
		peak := stat(`max_over_time(prometheus_rule_group_last_duration_seconds` + sel + `[` + window + `])`)
		out := stat(`prometheus_rule_group_last_evaluation_samples` + sel)
		name := g.Metric["rule_group"]
		name = name[strings.LastIndex(name, ";")+1:]
		fmt.Fprintf(&report, "| %s | %.0fs | %.3fs | %.3fs | %.1f %% | %.0f |\n", name, g.float(), mean, peak, 100*peak/g.float(), out)
	}
	report.WriteString("\n")
	slowestRules(t, p, 12, &report)
	measureDashboards(t, p, fleet, &report)

	t.Log("\n" + report.String())
	if out := os.Getenv("FLEET_REPORT"); out != "" {
		if err := os.WriteFile(out, report.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pushHistory pushes the fleet's series from origin until it catches up
// with the clock, ten scrape intervals per request and node batch, in
// time order (Prometheus's head takes samples up to an hour behind its
// newest). It returns the samples pushed and when the history ends.
func pushHistory(t *testing.T, p *prom, fleet *fleetsim.Fleet, origin time.Time, step time.Duration) (int64, time.Time) {
	t.Helper()
	const stepsPerPush, nodesPerPush = 10, 10
	var total atomic.Int64
	start := origin
	for {
		steps := min(stepsPerPush, int(time.Since(start)/step))
		if steps <= 0 {
			return total.Load(), start.Add(-step)
		}
		var wg sync.WaitGroup
		batches := make(chan []*fleetsim.Node)
		errs := make(chan error, 2)
		for range 2 {
			wg.Go(func() {
				for batch := range batches {
					var series []fleetsim.Series
					for _, n := range batch {
						series = append(series, fleet.History(n, start, steps, step, []fleetsim.Label{
							{Name: "job", Value: "executor_exporter"}, {Name: "instance", Value: n.Instance}, {Name: "cluster", Value: n.Cluster}})...)
					}
					for _, s := range series {
						total.Add(int64(len(s.Points)))
					}
					if err := remoteWrite(p, fleetsim.EncodeWriteRequest(series)); err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			})
		}
		all := fleet.Nodes()
		for i := 0; i < len(all); i += nodesPerPush {
			batches <- all[i:min(i+nodesPerPush, len(all))]
		}
		close(batches)
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatalf("remote-write at %v: %v", start, err)
		default:
		}
		start = start.Add(time.Duration(steps) * step)
	}
}

func remoteWrite(p *prom, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, "http://"+p.Addr+"/api/v1/write", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b.String())
	}
	return nil
}

// backfillRules evaluates the recording rules over the pushed history
// with promtool and hands the blocks to Prometheus, which loads new blocks
// in its data directory within a minute.
func backfillRules(t *testing.T, p *prom, from, to time.Time, step time.Duration) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "blocks")
	cmd := exec.Command(promtool3(t), "tsdb", "create-blocks-from", "rules",
		"--start="+strconv.FormatInt(from.Unix(), 10), "--end="+strconv.FormatInt(to.Unix(), 10),
		"--url=http://"+p.Addr, "--eval-interval="+step.String(), "--output-dir="+out,
		filepath.Join(testenv.RepoRoot(), "mixin", "generated", "rules.yaml"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool create-blocks-from rules: %v\n%s", err, b)
	}
	blocks, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if err := os.Rename(filepath.Join(out, b.Name()), filepath.Join(p.Dir, "data", b.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// slowestRules writes the n rules whose last evaluation took longest, from
// /api/v1/rules: where a group's time goes.
func slowestRules(t *testing.T, p *prom, n int, report *bytes.Buffer) {
	t.Helper()
	resp, err := http.Get("http://" + p.Addr + "/api/v1/rules")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name           string  `json:"name"`
					Type           string  `json:"type"`
					EvaluationTime float64 `json:"evaluationTime"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	type rule struct {
		group, name, kind string
		took              float64
	}
	var rules []rule
	for _, g := range body.Data.Groups {
		for _, r := range g.Rules {
			rules = append(rules, rule{g.Name, r.Name, r.Type, r.EvaluationTime})
		}
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].took > rules[j].took })
	fmt.Fprintf(report, "| slowest rules (last evaluation) | group | kind | took |\n|---|---|---|---|\n")
	for _, r := range rules[:min(n, len(rules))] {
		fmt.Fprintf(report, "| %s | %s | %s | %.3fs |\n", r.name, r.group, r.kind, r.took)
	}
	report.WriteString("\n")
}
