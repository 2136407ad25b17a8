package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
	"github.com/executor-exporter/executor_exporter/internal/yarn/yarntest"
)

// TestRightSizingJoinsYARNRuns: two runs of one recurring job on YARN —
// two application ids the ResourceManager names alike — with two real
// executor containers each, scraped by Prometheus 3 with the shipped
// right-sizing rules. Both runs are one app_name, the ResourceManager's
// name, with two runs and four executors. (Evaluations before the
// ResourceManager's answer named each run by its id; the recorded series
// of those stay for the right-sizing window.)
func TestRightSizingJoinsYARNRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("real executors and Prometheus")
	}
	testjvm.RequireJava(t)
	prom3 := os.Getenv("PROMETHEUS3")
	if prom3 == "" {
		testenv.Unavailable(t, "PROMETHEUS3 unset: the right-sizing rules are checked with Prometheus 3 (make prometheus3)")
	}
	const name = "nightly-etl"
	runs := []string{"application_1700000000000_0001", "application_1700000000000_0002"}
	srv := yarntest.NewServer()
	defer srv.Close()
	for _, app := range runs {
		srv.AddApp(app, name, "etl")
	}
	e := startYARNExporter(t, srv.URL, srv.URL)
	rules := renderMixin(t, rightsizingOverrides)
	prom := startPrometheus(t, promConfig{Binary: prom3, RulesDir: rules, Targets: []string{e.Addr}, Interval: scenarioInterval})
	for r, app := range runs {
		for i, id := range []string{"000002", "000003"} {
			cid := "container_1700000000000_000" + string(rune('1'+r)) + "_01_" + id
			c := startYARNContainer(t, app, cid, string(rune('1'+i)), 768, "", "", []string{"-Xmx128m", "-XX:+UseSerialGC"},
				[]string{"--scenario", "--live-mb", "16", "--churn-mb-s", "2", "--exit-after-s", "300"})
			srv.Launch(c.id, c.mb)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, q := range []string{`executor_jvm_info{role="executor"}`, "app:executor_app_name:info", "app_name:executor_runs:count", "app_name:executors:count"} {
				res, err := prom.tryQuery(q)
				t.Logf("%s: %v %v", q, res, err)
			}
		}
	})
	testenv.WaitFor(t, 3*time.Minute, "both runs joined under the ResourceManager's name", func() bool {
		res, err := prom.tryQuery(`app_name:executor_runs:count{app_name="` + name + `"} == 2 and on(app_name) app_name:executors:count == 4`)
		return err == nil && len(res) == 1
	})
	if res := prom.query(t, `app:executor_app_name:info{app_name="`+name+`"}`); len(res) != 2 {
		t.Errorf("app:executor_app_name:info for %s: %v, want one per run", name, res)
	}
	for _, s := range prom.query(t, `app:executor_app_name:info{app_id=~"application_1700000000000_000[12]"}`) {
		if s.Metric["app_name"] != name {
			t.Errorf("a run named %v, want %s", s.Metric, name)
		}
	}
}
