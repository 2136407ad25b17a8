package deploy

// What docs/kubernetes.md gives users to paste: the scrape job and the
// ResourceQuota for system-node-critical on GKE.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// docYAMLBlock returns the first ```yaml block after heading in
// docs/kubernetes.md.
func docYAMLBlock(t *testing.T, heading string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/kubernetes.md has no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	if !ok {
		t.Fatalf("docs/kubernetes.md: no yaml block after %q", heading)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("docs/kubernetes.md: unterminated yaml block after %q", heading)
	}
	return block
}

// TestDocsScrapeJob: the scrape job for Prometheus without the operator is
// valid for Prometheus 3's promtool and named executor_exporter, the mixin's selector,
// keeping only the exporter's pods.
func TestDocsScrapeJob(t *testing.T) {
	block := docYAMLBlock(t, "## Scraping without prometheus-operator")
	var jobs []struct {
		JobName       string `yaml:"job_name"`
		RelabelConfig []struct {
			SourceLabels []string `yaml:"source_labels"`
			Regex        string   `yaml:"regex"`
			Action       string   `yaml:"action"`
			TargetLabel  string   `yaml:"target_label"`
		} `yaml:"relabel_configs"`
	}
	if err := yaml.Unmarshal([]byte(block), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].JobName != "executor_exporter" {
		t.Fatalf("want one job named executor_exporter, got %+v", jobs)
	}
	keeps := false
	for _, r := range jobs[0].RelabelConfig {
		keeps = keeps || (r.Action == "keep" && r.Regex == "executor-exporter" &&
			len(r.SourceLabels) == 1 && r.SourceLabels[0] == "__meta_kubernetes_pod_label_app_kubernetes_io_name")
	}
	if !keeps {
		t.Error("the job does not keep only the pods labelled app.kubernetes.io/name=executor-exporter")
	}

	// Prometheus 3's promtool: Debian's is built without Kubernetes
	// service discovery.
	prom3 := os.Getenv("PROMETHEUS3")
	if prom3 == "" {
		testenv.Unavailable(t, "PROMETHEUS3 is not set: make test builds Prometheus 3 (make prometheus3) and sets it")
	}
	promtool := filepath.Join(filepath.Dir(prom3), "promtool")
	file := filepath.Join(t.TempDir(), "prometheus.yml")
	config := "scrape_configs:\n" + indent(block, "  ")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", "--syntax-only", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s\n%s", err, out, config)
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestDocsPriorityClassQuota: the ResourceQuota docs/kubernetes.md gives
// for system-node-critical on GKE is one, in the exporter's namespace,
// scoped to that priority class, with room for pods.
func TestDocsPriorityClassQuota(t *testing.T) {
	var quota struct {
		typeMeta `yaml:",inline"`
		Metadata objectMeta `yaml:"metadata"`
		Spec     struct {
			Hard          map[string]string `yaml:"hard"`
			ScopeSelector struct {
				MatchExpressions []struct {
					ScopeName string   `yaml:"scopeName"`
					Operator  string   `yaml:"operator"`
					Values    []string `yaml:"values"`
				} `yaml:"matchExpressions"`
			} `yaml:"scopeSelector"`
		} `yaml:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(docYAMLBlock(t, "### Priority class")), &quota); err != nil {
		t.Fatal(err)
	}
	if quota.APIVersion != "v1" || quota.Kind != "ResourceQuota" || quota.Metadata.Namespace != namespace {
		t.Errorf("%s %s in %q, want a v1 ResourceQuota in %s", quota.APIVersion, quota.Kind, quota.Metadata.Namespace, namespace)
	}
	if quota.Spec.Hard["pods"] == "" {
		t.Error("the quota sets no pods limit")
	}
	m := quota.Spec.ScopeSelector.MatchExpressions
	if len(m) != 1 || m[0].ScopeName != "PriorityClass" || m[0].Operator != "In" || len(m[0].Values) != 1 || m[0].Values[0] != "system-node-critical" {
		t.Errorf("scopeSelector %+v, want PriorityClass In [system-node-critical]", m)
	}
}
