package deploy

// The image every install path pulls follows the VERSION file, which the
// release builds from: the chart's version and appVersion, the tag the
// chart and the kustomize base render, and the versions docs/kubernetes.md
// tells users to install.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// imageRepository is where the release publishes the image.
const imageRepository = "ghcr.io/executor-exporter/executor_exporter"

func projectVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("VERSION %q is not MAJOR.MINOR.PATCH", v)
	}
	return v
}

// TestChartVersionIsVersion: Chart.yaml's version and appVersion are
// VERSION, so the chart published with a release names its image.
func TestChartVersionIsVersion(t *testing.T) {
	version := projectVersion(t)
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != version || chart.AppVersion != version {
		t.Errorf("Chart.yaml version %q, appVersion %q; VERSION is %s: set both to it", chart.Version, chart.AppVersion, version)
	}
}

// TestImageIsVersion: the chart with default values and every kustomization
// run the image of VERSION, and a tag or digest given to the chart is the
// one it runs.
func TestImageIsVersion(t *testing.T) {
	want := imageRepository + ":v" + projectVersion(t)
	image := func(t *testing.T, ms []manifest) string {
		t.Helper()
		var ds daemonSet
		decodeStrict(t, ms, "DaemonSet", &ds)
		return ds.Spec.Template.Spec.Containers[0].Image
	}
	if got := image(t, helmTemplate(t)); got != want {
		t.Errorf("the chart runs %s, want %s (the tag defaults to v + appVersion)", got, want)
	}
	for _, dir := range []string{"deploy/kubernetes", "deploy/kubernetes/oom-privileged", "deploy/kubernetes/prometheus-operator"} {
		if got := image(t, parseManifests(t, kustomize(t, dir))); got != want {
			t.Errorf("%s runs %s, want %s (base/kustomization.yaml's images: newTag)", dir, got, want)
		}
	}
	if got := image(t, helmTemplate(t, "image.tag=v9.9.9")); got != imageRepository+":v9.9.9" {
		t.Errorf("image.tag=v9.9.9 runs %s", got)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	if got := image(t, helmTemplate(t, "image.digest="+digest)); got != want+"@"+digest {
		t.Errorf("image.digest runs %s, want %s@%s", got, want, digest)
	}
}

// TestDocsInstallVersion: what docs/kubernetes.md tells users to install,
// the image tag and the chart's version, is VERSION.
func TestDocsInstallVersion(t *testing.T) {
	version := projectVersion(t)
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	images := regexp.MustCompile(regexp.QuoteMeta(imageRepository)+`:v([0-9.]+)`).FindAllStringSubmatch(doc, -1)
	charts := regexp.MustCompile(`oci://ghcr\.io/executor-exporter/charts/executor-exporter\s+(?:\\\s*)?--version\s+([0-9.]+)`).FindAllStringSubmatch(doc, -1)
	if len(images) == 0 || len(charts) == 0 {
		t.Fatalf("docs/kubernetes.md names the image (%d times) or installs the chart with --version (%d times) nowhere", len(images), len(charts))
	}
	for _, m := range append(images, charts...) {
		if m[1] != version {
			t.Errorf("docs/kubernetes.md: %q, but VERSION is %s", m[0], version)
		}
	}
}
