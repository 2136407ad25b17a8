package fleet

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// dashQuery is one query a dashboard runs: a panel's target, a variable's
// lookup or an annotation.
type dashQuery struct {
	Dashboard, Panel string
	Expr             string
	Instant          bool // a table or stat panel that asks for one point
	Event            bool // an annotation: it marks events and may be empty
}

var (
	varRef          = regexp.MustCompile(`\$\{?(\w+)\}?`)
	labelValuesCall = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)
)

// dashboardQueries reads every query of the committed dashboards/*.json.
func dashboardQueries(t testing.TB) []dashQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards/*.json: %v", err)
	}
	sort.Strings(files)
	var out []dashQuery
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr    string `json:"expr"`
					Instant bool   `json:"instant"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name, Type, Definition string
				} `json:"list"`
			} `json:"templating"`
			Annotations struct {
				List []struct {
					Name, Expr string
				} `json:"list"`
			} `json:"annotations"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		for _, v := range d.Templating.List {
			if m := labelValuesCall.FindStringSubmatch(v.Definition); m != nil {
				// Grafana runs label_values(selector, label) as a series
				// lookup over the dashboard's range; this is its PromQL twin.
				out = append(out, dashQuery{Dashboard: name, Panel: "$" + v.Name,
					Expr: "count by(" + m[2] + ") (" + m[1] + ")", Instant: true})
			}
		}
		for _, a := range d.Annotations.List {
			out = append(out, dashQuery{Dashboard: name, Panel: "annotation " + a.Name, Expr: a.Expr, Event: true})
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				out = append(out, dashQuery{Dashboard: name, Panel: p.Title, Expr: tg.Expr, Instant: tg.Instant})
			}
		}
	}
	return out
}

// substitute replaces dashboard variables by values, as Grafana does.
func substitute(expr string, values map[string]string) string {
	return varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		if v, ok := values[strings.Trim(ref, "${}")]; ok {
			return v
		}
		return ref
	})
}

// recordingRules lists the record: names of mixin/generated/rules.yaml.
func recordingRules(t testing.TB) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "mixin", "generated", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+record: "?([\w:]+)"?$`).FindAllSubmatch(raw, -1) {
		names = append(names, string(m[1]))
	}
	if len(names) == 0 {
		t.Fatal("no recording rule in mixin/generated/rules.yaml")
	}
	return names
}
