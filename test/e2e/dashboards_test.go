package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// dashboardUIDs are the uids users' links and provisioning depend on: a
// change here must be deliberate.
var dashboardUIDs = map[string]string{
	"executor-memory.json":      "executor-exporter-executor-memory",
	"executor-fleet.json":       "executor-exporter-fleet",
	"executor-node.json":        "executor-exporter-node",
	"executor-rightsizing.json": "executor-exporter-rightsizing",
}

// eventPanels may legitimately be empty on a healthy machine: they show
// events. Their queries still have to run without error.
var eventPanels = map[string]string{
	"executor-memory.json/OOM kills": "needs a kernel OOM kill of the executor; test/e2e/oom_test.go makes real kills " +
		"and checks the executor_oom_kills_total series these panels read",
	"executor-fleet.json/Executor OOM kills per hour":                           "needs a kernel OOM kill (see oom_test.go)",
	"executor-memory.json/How it ended":                                         "needs an executor that ended; exits_test.go ends real ones and checks executor_jvm_exits_total",
	"executor-fleet.json/Executor exits per hour by reason":                     "needs an executor that ended (see exits_test.go)",
	"executor-fleet.json/Executor exits per hour by instance type":              "needs an executor that ended (see exits_test.go)",
	"executor-fleet.json/Native OOM kills per hour by region":                   "needs a native OOM kill (see oom_test.go)",
	"executor-fleet.json/Native OOM kills per hour by instance type and region": "needs a native OOM kill (see oom_test.go)",
	"executor-fleet.json/Native OOM kills by application and region":            "needs a native OOM kill (see oom_test.go)",
	"executor-fleet.json/Executor ends per hour by region":                      "needs an executor ended by a native OOM kill (see exits_test.go)",
	// One executor here: a recommendation needs three (rightsizing_test.go
	// runs nine and checks every panel of the Right-sizing dashboard).
	"executor-fleet.json/Spark memory settings per application":                     "needs three executors of an application (see rightsizing_test.go)",
	"executor-rightsizing.json/Settings: current and recommended":                   "needs three executors of an application (see rightsizing_test.go)",
	"executor-rightsizing.json/Memory that would be saved":                          "needs three executors of an application (see rightsizing_test.go)",
	"executor-rightsizing.json/Kills by the setting that would have prevented them": "needs an OOM kill or an exit 52 (see rightsizing_test.go)",
}

// grafanaBuiltins are the variables Grafana defines itself, with values a
// user would see for a dashboard over the last few minutes of 1s scrapes.
var grafanaBuiltins = map[string]string{
	"__rate_interval": "15s",
	"__interval":      "1s",
	"__range":         "5m",
}

type grafanaDashboard struct {
	UID        string         `json:"uid"`
	Editable   bool           `json:"editable"`
	Title      string         `json:"title"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name       string            `json:"name"`
			Expr       string            `json:"expr"`
			Datasource map[string]string `json:"datasource"`
		} `json:"list"`
	} `json:"annotations"`
}

type grafanaPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource map[string]string        `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		Expr       string            `json:"expr"`
		RefID      string            `json:"refId"`
		Datasource map[string]string `json:"datasource"`
	} `json:"targets"`
}

type grafanaVariable struct {
	Type       string            `json:"type"`
	Name       string            `json:"name"`
	Query      any               `json:"query"`
	Definition string            `json:"definition"`
	Datasource map[string]string `json:"datasource"`
}

// loadDashboards reads the committed dashboards/*.json, the files users
// import.
func loadDashboards(t *testing.T) map[string]grafanaDashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testjvm.RepoRoot(), "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards/*.json (run make mixin): %v", err)
	}
	out := map[string]grafanaDashboard{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d grafanaDashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: not valid JSON: %v", f, err)
		}
		out[filepath.Base(f)] = d
	}
	return out
}

func isTemplatedDatasource(ds map[string]string) bool {
	return ds["type"] == "prometheus" && ds["uid"] == "${datasource}"
}

var varRef = regexp.MustCompile(`\$\{?(\w+)\}?`)

// TestDashboardsImportIntoGrafana checks what Grafana's importer and
// provisioning rely on: valid JSON, the stable uids, unique panel ids,
// sane grid positions, and every panel, query and variable on the
// $datasource variable, with no reference to an undefined variable; every
// query selects by the $job variable (no scrape job name is hard-coded),
// and the dashboards are not editable (provisioned copies would be lost).
func TestDashboardsImportIntoGrafana(t *testing.T) {
	dashboards := loadDashboards(t)
	if len(dashboards) != len(dashboardUIDs) {
		t.Errorf("dashboards/ has %d dashboards, want %d (%v)", len(dashboards), len(dashboardUIDs), dashboardUIDs)
	}
	for file, d := range dashboards {
		if want, ok := dashboardUIDs[file]; !ok || d.UID != want {
			t.Errorf("%s: uid %q, want %q", file, d.UID, want)
		}
		if d.Editable {
			t.Errorf("%s: editable: true; provisioned dashboards are changed in the mixin", file)
		}
		if d.Title == "" || len(d.Panels) == 0 {
			t.Errorf("%s: no title or no panels", file)
		}
		defined := map[string]bool{}
		for k := range grafanaBuiltins {
			defined[k] = true
		}
		hasDatasourceVar := false
		for _, v := range d.Templating.List {
			defined[v.Name] = true
			switch v.Type {
			case "datasource":
				hasDatasourceVar = v.Name == "datasource"
			case "query":
				if !isTemplatedDatasource(v.Datasource) {
					t.Errorf("%s: variable %s: datasource %v is not ${datasource}", file, v.Name, v.Datasource)
				}
			}
		}
		if !hasDatasourceVar {
			t.Errorf("%s: no datasource variable", file)
		}
		checkRefs := func(where, expr string) {
			for _, m := range varRef.FindAllStringSubmatch(expr, -1) {
				if !defined[m[1]] {
					t.Errorf("%s: %s: undefined variable $%s in %s", file, where, m[1], expr)
				}
			}
		}
		for _, v := range d.Templating.List {
			checkRefs("variable "+v.Name, v.Definition)
		}
		checkJob := func(where, expr string) {
			if n := strings.Count(expr, "{"); n == 0 || strings.Count(expr, `job=~"$job"`) != n {
				t.Errorf("%s: %s: select by job=~\"$job\", not a job name: %s", file, where, expr)
			}
		}
		for _, a := range d.Annotations.List {
			if !isTemplatedDatasource(a.Datasource) {
				t.Errorf("%s: annotation %s: datasource %v", file, a.Name, a.Datasource)
			}
			checkRefs("annotation "+a.Name, a.Expr)
			checkJob("annotation "+a.Name, a.Expr)
		}
		ids := map[int]string{}
		for _, p := range d.Panels {
			if prev, dup := ids[p.ID]; dup || p.ID <= 0 {
				t.Errorf("%s: panel %q has id %d (also %q)", file, p.Title, p.ID, prev)
			}
			ids[p.ID] = p.Title
			if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("%s: panel %q: gridPos %+v outside the 24-column grid", file, p.Title, p.GridPos)
			}
			if p.Type == "row" {
				continue
			}
			if p.Title == "" || len(p.Targets) == 0 || !isTemplatedDatasource(p.Datasource) {
				t.Errorf("%s: panel %d %q: needs a title, targets and the ${datasource} datasource (has %v)", file, p.ID, p.Title, p.Datasource)
			}
			refIDs := map[string]bool{}
			for _, tg := range p.Targets {
				if !isTemplatedDatasource(tg.Datasource) || tg.Expr == "" || refIDs[tg.RefID] || tg.RefID == "" {
					t.Errorf("%s: panel %q: target %q: datasource %v, refId %q", file, p.Title, tg.Expr, tg.Datasource, tg.RefID)
				}
				refIDs[tg.RefID] = true
				checkRefs("panel "+p.Title, tg.Expr)
				checkJob("panel "+p.Title, tg.Expr)
			}
		}
	}
}

// substitute replaces the dashboard variables in expr by values that exist
// in the test's Prometheus, as a user picking them would.
func substitute(expr string, values map[string]string) string {
	return varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		name := strings.Trim(ref, "${}")
		if v, ok := values[name]; ok {
			return v
		}
		return ref
	})
}

var labelValuesCall = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// TestDashboardQueriesReturnData evaluates every query of every committed
// dashboard against a real Prometheus that scrapes the exporter (a real
// Spark stand-in executor in a memory cgroup, stub AWS metadata) with the
// committed recording rules loaded: no panel may be empty for a user who
// runs the exporter, except the event panels listed in eventPanels. The
// same goes for every recording rule.
func TestDashboardQueriesReturnData(t *testing.T) {
	dashboards := loadDashboards(t)
	rules := filepath.Join(testjvm.RepoRoot(), "mixin", "generated")
	st := startMonitoringStack(t, promConfig{RulesDir: rules})

	// Recording rules over rates need two scrapes and an evaluation; the
	// instance join needs the metadata refreshed. Wait for the last of them.
	testenv.WaitFor(t, 2*time.Minute, "recorded series of the test executor", func() bool {
		res, err := st.Prom.tryQuery(`count(executor:jvm_gc_time:ratio{app_id="app-alert-test"}) and on() count(executor_node:memory_available:bytes{instance_type!=""})`)
		return err == nil && len(res) > 0
	})

	values := map[string]string{
		"job":           "executor_exporter",
		"cluster":       ".*", // "All": this Prometheus has no cluster label
		"namespace":     ".*", // "All": no Kubernetes here (jvm_pod_test.go checks the labels)
		"app_name":      ".*",
		"app_id":        "app-alert-test",
		"executor":      "1",
		"instance":      st.Exporter.Addr,
		"instance_type": "r5.xlarge",
		"lifecycle":     "spot",
	}
	for k, v := range grafanaBuiltins {
		values[k] = v
	}

	// Every recording rule produces series here, except those counting
	// executor OOM kills, which need a kill (oom_test.go makes real ones).
	recorded, err := os.ReadFile(filepath.Join(rules, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Rule groups run at their own offsets, and a rule reading another
	// group's output lags it by up to an interval: wait for each.
	for _, m := range regexp.MustCompile(`(?m)^\s+record: "?([\w:]+)"?$`).FindAllSubmatch(recorded, -1) {
		name := string(m[1])
		if strings.Contains(name, ":executor_oom_kills:") || strings.Contains(name, ":executor_jvm_exits:") {
			st.query(t, name)
			t.Logf("recording rule %s may be empty: no OOM kill or executor end here", name)
			continue
		}
		if strings.Contains(name, ":executor_kills:") || strings.Contains(name, "_after_kills:") || strings.HasSuffix(name, ":executor_memory_recommended:bytes") {
			st.query(t, name)
			t.Logf("recording rule %s may be empty: it needs a kill, or three executors of an application (rightsizing_test.go has them)", name)
			continue
		}
		if strings.HasSuffix(name, "_exhaustion:seconds") {
			st.query(t, name)
			t.Logf("recording rule %s may be empty: it needs a rising peak of the memory beside the heap (mixin/tests/alerts_budget_trend.yaml has them)", name)
			continue
		}
		// The right-sizing group runs every minute.
		testenv.WaitFor(t, 90*time.Second, "series of recording rule "+name, func() bool {
			return len(st.query(t, name)) > 0
		})
	}

	names := make([]string, 0, len(dashboards))
	for n := range dashboards {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, file := range names {
		d := dashboards[file]
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			m := labelValuesCall.FindStringSubmatch(v.Definition)
			if m == nil {
				t.Errorf("%s: variable %s: cannot read %q", file, v.Name, v.Definition)
				continue
			}
			// Grafana runs label_values(selector, label) as a series lookup.
			expr := fmt.Sprintf("count by(%s) (%s)", m[2], substitute(m[1], values))
			res := st.query(t, expr)
			found := false
			for _, s := range res {
				found = found || s.Metric[m[2]] != ""
			}
			// No cluster label and no Kubernetes pods here; "All" covers them.
			if !found && v.Name != "cluster" && v.Name != "namespace" && v.Name != "app_name" {
				t.Errorf("%s: variable %s has no values: %s", file, v.Name, expr)
			}
		}
		for _, a := range d.Annotations.List {
			// Annotations mark events (kills, notices): they must run, and
			// may be empty.
			st.query(t, substitute(a.Expr, values))
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				expr := substitute(tg.Expr, values)
				res := st.query(t, expr)
				if len(res) > 0 {
					continue
				}
				if reason, ok := eventPanels[file+"/"+p.Title]; ok {
					t.Logf("%s: %q is empty, as expected: %s", file, p.Title, reason)
					continue
				}
				t.Errorf("%s: panel %q: no data for %s", file, p.Title, expr)
			}
		}
	}
}
