package deploy

// The monitoring-mixins guidelines for alerts
// (https://monitoring.mixins.dev/#guidelines-for-alert-names-labels-and-annotations),
// which mixtool's lint applies to a mixin's prometheusAlerts: mixtool is
// served by the Go module proxy at no version, so `make test` cannot build
// it; this test checks the rendered files against the same guidelines.

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

type mixinRule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type mixinGroups struct {
	Groups []struct {
		Name     string      `yaml:"name"`
		Interval string      `yaml:"interval"`
		Rules    []mixinRule `yaml:"rules"`
	} `yaml:"groups"`
}

func readMixinFile(t *testing.T, name string) mixinGroups {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "mixin", "generated", name))
	if err != nil {
		t.Fatalf("%v (make mixin renders it)", err)
	}
	var g mixinGroups
	if err := yaml.UnmarshalStrict(raw, &g); err != nil {
		t.Fatalf("mixin/generated/%s: %v", name, err)
	}
	if len(g.Groups) == 0 {
		t.Fatalf("mixin/generated/%s has no groups", name)
	}
	return g
}

var (
	camelCase   = regexp.MustCompile(`^([A-Z]+[a-z0-9]+)+$`)
	goTemplate  = regexp.MustCompile(`\{\{.+\}\}`)
	sentence    = regexp.MustCompile(`^[A-Z].+\.$`)
	recordName  = regexp.MustCompile(`^[a-z_]+:[a-zA-Z0-9_]+:[a-zA-Z0-9_]+$`)
	severities  = map[string]bool{"info": true, "warning": true, "critical": true}
	maxGroupLen = 40
)

// lintExclusions are mixin/.lint's exclusions, which mixtool reads: a
// rule's findings for the alerts its entries name, or for every alert
// when it names none.
type lintExclusions map[string]*struct {
	Reason  string `yaml:"reason"`
	Entries []struct {
		Alert     string `yaml:"alert"`
		Dashboard string `yaml:"dashboard"`
		Panel     string `yaml:"panel"`
	} `yaml:"entries"`
}

func (l lintExclusions) excludes(rule, alert string) bool {
	e, ok := l[rule]
	if !ok {
		return false
	}
	if e == nil || len(e.Entries) == 0 {
		return true
	}
	for _, entry := range e.Entries {
		if entry.Alert == alert {
			return true
		}
	}
	return false
}

func readLintExclusions(t *testing.T) lintExclusions {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "mixin", ".lint"))
	if err != nil {
		t.Fatal(err)
	}
	var cf struct {
		Exclusions lintExclusions `yaml:"exclusions"`
	}
	if err := yaml.UnmarshalStrict(raw, &cf); err != nil {
		t.Fatalf("mixin/.lint: %v", err)
	}
	for rule, e := range cf.Exclusions {
		if e == nil || e.Reason == "" {
			t.Errorf("mixin/.lint: the exclusion of %s gives no reason", rule)
		}
	}
	return cf.Exclusions
}

// TestMixinAlertGuidelines: alerts.yaml holds alerts only, each named in
// CamelCase within 40 characters, with a severity of info, warning or
// critical, a summary that is one plain sentence and a description that
// uses the alert's labels or value; no group is named longer than 40
// characters or holds more than 20 rules. An exclusion in mixin/.lint,
// with its reason, excuses an alert as it does for mixtool.
func TestMixinAlertGuidelines(t *testing.T) {
	ex := readLintExclusions(t)
	for _, g := range readMixinFile(t, "alerts.yaml").Groups {
		if len(g.Name) > maxGroupLen {
			t.Errorf("group %s: name longer than %d characters", g.Name, maxGroupLen)
		}
		if len(g.Rules) > 20 {
			t.Errorf("group %s: %d rules, more than 20", g.Name, len(g.Rules))
		}
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: recording rule %s among the alerts (it belongs in prometheusRules)", g.Name, r.Record)
				continue
			}
			if !camelCase.MatchString(r.Alert) {
				t.Errorf("alert %s: not CamelCase", r.Alert)
			}
			if len(r.Alert) > 40 && !ex.excludes("alert-name-length", r.Alert) {
				t.Errorf("alert %s: name longer than 40 characters", r.Alert)
			}
			if !severities[r.Labels["severity"]] {
				t.Errorf("alert %s: severity %q, want info, warning or critical", r.Alert, r.Labels["severity"])
			}
			summary, ok := r.Annotations["summary"]
			if !ok || goTemplate.MatchString(summary) || !sentence.MatchString(summary) {
				t.Errorf("alert %s: summary %q, want one sentence without templates, capitalised, ending with a period", r.Alert, summary)
			}
			if d := r.Annotations["description"]; !goTemplate.MatchString(d) {
				t.Errorf("alert %s: description %q uses no template", r.Alert, d)
			}
		}
	}
}

// TestMixinRecordingRules: rules.yaml holds recording rules only, named
// level:metric:operations (https://prometheus.io/docs/practices/rules/).
func TestMixinRecordingRules(t *testing.T) {
	for _, g := range readMixinFile(t, "rules.yaml").Groups {
		if len(g.Name) > maxGroupLen {
			t.Errorf("group %s: name longer than %d characters", g.Name, maxGroupLen)
		}
		for _, r := range g.Rules {
			if r.Alert != "" {
				t.Errorf("group %s: alert %s among the recording rules (it belongs in prometheusAlerts)", g.Name, r.Alert)
			} else if !recordName.MatchString(r.Record) {
				t.Errorf("group %s: recording rule %q is not named level:metric:operations", g.Name, r.Record)
			}
		}
	}
}
