package e2e

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
	"github.com/executor-exporter/executor_exporter/internal/yarn/yarntest"
)

// TestScenarioYARNPmemBudgetAlert is the yarn-pmem-leak scenario: an
// executor container without a cgroup limit (256 MiB heap in a 640 MiB
// allocation) under the stand-in NodeManager's polling monitor (the pmem
// check; vmem off, as EMR ships it), whose 4 MiB direct buffers leak
// 2 MiB/s after 65 s. Prometheus 3 evaluates the shipped rules with a 2 s
// interval, as in `make scenarios`: a budget alert must go pending before
// the NodeManager's kill (-104), which is yarn_pmem_limit. It logs the
// alert's lead over the kill for mixin/scenarios.md. It runs apart from
// the scenario lab, whose exporter has no NodeManager; SCENARIOS=yarn-pmem-leak
// (or all) selects it.
func TestScenarioYARNPmemBudgetAlert(t *testing.T) {
	if w := os.Getenv("SCENARIOS"); w != "all" && !strings.Contains(","+w+",", ",yarn-pmem-leak,") {
		t.Skip("a scenario: SCENARIOS=yarn-pmem-leak runs it")
	}
	testjvm.RequireJava(t)
	prom3 := os.Getenv("PROMETHEUS3")
	if prom3 == "" {
		testenv.Unavailable(t, "PROMETHEUS3 unset (make prometheus3)")
	}
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.AddApp(yarnApp, "nightly-etl", "etl")
	srv.SetNodeInfo("vmemCheckEnabled", false)
	e := startYARNExporterSite(t, srv.URL, srv.URL, pollingSite) // a NodeManager that polls
	rules := renderMixin(t, "{}")
	prom := startPrometheus(t, promConfig{Binary: prom3, RulesDir: rules, Targets: []string{e.Addr}, Interval: scenarioInterval})
	c := startYARNContainer(t, yarnApp, "container_1700000000000_0042_01_000005", "5", 640, "", "",
		[]string{"-Xms256m", "-Xmx256m", "-XX:+UseG1GC", "-XX:MaxDirectMemorySize=2g"},
		[]string{"--leak", "--kind", "direct-large", "--after-s", "65", "--rate-mb-s", "2", "--step-mb", "4", "--target-mb", "2048"})
	start := time.Now()
	m := yarntest.NewMonitor(srv)
	m.VmemCheck = false
	m.Watch(c.id, c.jvm.PID, c.mb)
	m.Start()
	defer m.Stop()

	pid := strconv.Itoa(c.jvm.PID)
	first := map[string]time.Time{}
	done := c.jvm.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := time.After(8 * time.Minute)
watch:
	for {
		select {
		case <-done:
			break watch
		case <-deadline:
			t.Fatal("the container was not killed within 8 minutes")
		case <-tick.C:
			alerts, err := prom.alerts()
			if err != nil {
				continue
			}
			for _, a := range alerts {
				if a.Labels["pid"] == pid {
					if _, seen := first[a.Labels["alertname"]]; !seen {
						first[a.Labels["alertname"]] = time.Now()
					}
				}
			}
		}
	}
	end := time.Now()
	_ = syscall.Kill(-c.jvm.PID, syscall.SIGKILL)
	got := exitOf(t, e, c)
	if got["reason"] != "yarn_pmem_limit" {
		t.Errorf("the end counted %v, want yarn_pmem_limit", got)
	}
	var lead time.Duration
	for name, at := range first {
		t.Logf("yarn-pmem-leak: %s pending at %.0f s, lead %.0f s; killed at %.0f s (%.0f s into the leak)", name,
			at.Sub(start).Seconds(), end.Sub(at).Seconds(), end.Sub(start).Seconds(), end.Sub(start).Seconds()-65)
		if strings.HasPrefix(name, "ExecutorOverheadBudget") && end.Sub(at) > lead {
			lead = end.Sub(at)
		}
	}
	if lead <= 0 {
		t.Errorf("no budget alert pending before the NodeManager's kill: %v", first)
	}
	t.Logf("line: %s", logLineOf(e, c.jvm.PID))
}
