// Package grafana holds the dashboards (dashboards/*.json, rendered from
// mixin/) to Grafana's own dashboard schema, through
// github.com/grafana/grafana-foundation-sdk/go: the types Grafana generates
// from its schema, and their strict decoders, which fail on an unknown
// field, a value of the wrong type or a missing required field. Fields the
// schema makes optional (Grafana fills them in on import: ids, versions,
// plugin versions) may be missing.
package grafana

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

func init() {
	// The panel types' options and field configs, and the data sources'
	// queries, are decoded by the plugin that owns them; without this they
	// would be kept as untyped maps and never checked.
	plugins.RegisterDefaultPlugins()
}

func dashboardFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "dashboards", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no dashboards/*.json: run 'make mixin'")
	}
	out := map[string][]byte{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = raw
	}
	return out
}

func TestDashboardsMatchGrafanaSchema(t *testing.T) {
	for name, raw := range dashboardFiles(t) {
		t.Run(name, func(t *testing.T) {
			for _, e := range schemaErrors(raw) {
				t.Error(e)
			}
		})
	}
}

// schemaErrors decodes a dashboard strictly and returns every way it
// departs from the schema.
func schemaErrors(raw []byte) []string {
	var d dashboard.Dashboard //nolint:staticcheck // the mixin's dashboards are the classic schema Grafana provisions from files, not dashboardv2's
	var errs []string
	for _, e := range strictErrors(d.UnmarshalJSONStrict(raw)) {
		if !filledByGrafana.MatchString(e) {
			errs = append(errs, e)
		}
	}
	// The SDK's strict Panel decoder checks fieldConfig.defaults.custom
	// with the panel's plugin but the rest of fieldConfig loosely, and
	// keeps a query whose data source type it does not know as an untyped
	// map. Both are checked here.
	var top struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return append(errs, err.Error())
	}
	return append(errs, panelErrors("panels", top.Panels)...)
}

// filledByGrafana matches the errors for required fields that Grafana
// sets itself when it loads a dashboard: the schema version (migrated to
// its own) and the panels' ids (assigned when missing).
var filledByGrafana = regexp.MustCompile(`^(schemaVersion|panels\[\d+\](\.panels\[\d+\])?\.id): required field is missing from input$`)

// panelErrors decodes every panel's fieldConfig and queries strictly, rows'
// panels included.
func panelErrors(path string, panels []json.RawMessage) []string {
	var errs []string
	for i, raw := range panels {
		var p struct {
			Title       string            `json:"title"`
			Datasource  *dataSourceRef    `json:"datasource"`
			FieldConfig json.RawMessage   `json:"fieldConfig"`
			Targets     []json.RawMessage `json:"targets"`
			Panels      []json.RawMessage `json:"panels"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			errs = append(errs, fmt.Sprintf("%s[%d]: %v", path, i, err))
			continue
		}
		where := fmt.Sprintf("%s[%d] (%q)", path, i, p.Title)
		if p.FieldConfig != nil {
			var fc dashboard.FieldConfigSource
			for _, e := range strictErrors(fc.UnmarshalJSONStrict(p.FieldConfig)) {
				errs = append(errs, where+".fieldConfig."+e)
			}
		}
		for j, target := range p.Targets {
			var q struct {
				Datasource *dataSourceRef `json:"datasource"`
			}
			if err := json.Unmarshal(target, &q); err != nil {
				errs = append(errs, fmt.Sprintf("%s.targets[%d]: %v", where, j, err))
				continue
			}
			ds := q.Datasource
			if ds == nil || ds.Type == "" {
				ds = p.Datasource
			}
			if ds == nil || ds.Type != "prometheus" {
				errs = append(errs, fmt.Sprintf("%s.targets[%d]: no datasource of type prometheus on the query or its panel: Grafana's schema for it is unknown", where, j))
				continue
			}
			var pq prometheus.Dataquery
			for _, e := range strictErrors(pq.UnmarshalJSONStrict(target)) {
				errs = append(errs, fmt.Sprintf("%s.targets[%d].%s", where, j, e))
			}
		}
		errs = append(errs, panelErrors(where+".panels", p.Panels)...)
	}
	return errs
}

type dataSourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// strictErrors lists what an SDK decoder reports. Its decoders return a
// cog.BuildErrors even when it is empty (a non-nil error that holds
// nothing), so err != nil does not mean failure.
func strictErrors(err error) []string {
	var buildErrs cog.BuildErrors
	if errors.As(err, &buildErrs) {
		var out []string
		for _, e := range buildErrs {
			out = append(out, e.Error())
		}
		return out
	}
	if err != nil {
		return []string{err.Error()}
	}
	return nil
}

// TestSchemaCheckFails: the check above rejects an unknown field and a
// wrong type wherever they are (the parts the SDK checks itself and the
// parts checked here), and accepts a dashboard without the fields Grafana
// fills in on import.
func TestSchemaCheckFails(t *testing.T) {
	raw := dashboardFiles(t)["executor-node.json"]
	if raw == nil {
		t.Fatal("dashboards/executor-node.json is missing")
	}
	// firstOf returns the first panel of the type, rows' panels included.
	firstOf := func(d map[string]any, typ string) map[string]any {
		for _, p := range d["panels"].([]any) {
			if p := p.(map[string]any); p["type"] == typ {
				return p
			}
		}
		t.Fatalf("no %s panel in executor-node.json", typ)
		return nil
	}
	broken := map[string]func(d map[string]any){
		"unknown dashboard field":           func(d map[string]any) { d["refreshInterval"] = "30s" },
		"dashboard field of the wrong type": func(d map[string]any) { d["editable"] = "no" },
		"unknown panel field":               func(d map[string]any) { firstOf(d, "timeseries")["colour"] = "red" },
		"gridPos of the wrong type": func(d map[string]any) {
			firstOf(d, "stat")["gridPos"].(map[string]any)["h"] = "8"
		},
		"unknown row field": func(d map[string]any) { firstOf(d, "row")["folded"] = true },
		"unknown stat option": func(d map[string]any) {
			firstOf(d, "stat")["options"].(map[string]any)["colourMode"] = "value"
		},
		"timeseries legend of the wrong type": func(d map[string]any) {
			firstOf(d, "timeseries")["options"].(map[string]any)["legend"].(map[string]any)["showLegend"] = "yes"
		},
		"unknown custom field config": func(d map[string]any) {
			defaults := firstOf(d, "timeseries")["fieldConfig"].(map[string]any)["defaults"].(map[string]any)
			defaults["custom"].(map[string]any)["lineWidthPx"] = 1
		},
		"unknown field config default": func(d map[string]any) {
			firstOf(d, "stat")["fieldConfig"].(map[string]any)["defaults"].(map[string]any)["units"] = "bytes"
		},
		"unknown override property field": func(d map[string]any) {
			fc := firstOf(d, "stat")["fieldConfig"].(map[string]any)
			fc["overrides"] = []any{map[string]any{"matcher": map[string]any{"id": "byName", "options": "x"}, "properties": []any{}, "priority": 1}}
		},
		"unknown query field": func(d map[string]any) {
			firstOf(d, "timeseries")["targets"].([]any)[0].(map[string]any)["exp"] = "up"
		},
		"query of the wrong type": func(d map[string]any) {
			firstOf(d, "timeseries")["targets"].([]any)[0].(map[string]any)["instant"] = "true"
		},
		"query of no known data source": func(d map[string]any) {
			p := firstOf(d, "timeseries")
			delete(p, "datasource")
			p["targets"].([]any)[0].(map[string]any)["datasource"] = map[string]any{"uid": "${datasource}"}
		},
		"variable of the wrong type": func(d map[string]any) {
			d["templating"].(map[string]any)["list"].([]any)[0].(map[string]any)["hide"] = "no"
		},
		"unknown link field":   func(d map[string]any) { d["links"].([]any)[0].(map[string]any)["newTab"] = true },
		"panel without a type": func(d map[string]any) { delete(firstOf(d, "table"), "type") },
	}
	for name, breakIt := range broken {
		t.Run(name, func(t *testing.T) {
			if errs := schemaErrors(mutate(t, raw, breakIt)); len(errs) == 0 {
				t.Error("accepted")
			} else {
				t.Logf("rejected: %v", errs)
			}
		})
	}

	// Grafana gives panels their ids and the dashboard its id and version
	// when it stores it.
	filled := mutate(t, raw, func(d map[string]any) {
		delete(d, "schemaVersion")
		for _, p := range d["panels"].([]any) {
			delete(p.(map[string]any), "id")
		}
	})
	for _, e := range schemaErrors(filled) {
		t.Errorf("without the fields Grafana fills in: %s", e)
	}
}

func mutate(t *testing.T, raw []byte, f func(map[string]any)) []byte {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	f(d)
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
