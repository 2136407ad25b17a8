package deploy

// The chart as users install it: what `helm package` makes (the archive
// the release publishes) lints, renders what the chart directory renders
// and installs, and its NOTES.txt tells how to reach the exporter with the
// values given.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// everythingValues turns on every optional object.
var everythingValues = []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "dashboards.enabled=true",
	"monitoringLabels.release=kube-prometheus-stack"}

// helmTemplateFails renders the chart with values, expecting helm to
// refuse them, and returns what it said.
func helmTemplateFails(t *testing.T, values ...string) string {
	t.Helper()
	args := append([]string{"template", "executor-exporter", filepath.Join(testenv.RepoRoot(), chartDir), "--namespace", namespace}, setArgs(values)...)
	cmd := helmCommand(t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err == nil {
		t.Errorf("helm template with %v succeeds, want a refusal:\n%s", values, out)
		return ""
	}
	return stderr.String()
}

// helmCommand is helm with args, kept away from the user's repositories,
// cache, plugins and cluster.
func helmCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home,
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"))
	return cmd
}

// TestHelmPackage: `helm package` follows the chart's links into
// mixin/generated and dashboards/; the archive lints clean and renders
// exactly what the directory does, and a client-side dry-run install of it
// succeeds.
func TestHelmPackage(t *testing.T) {
	dir := t.TempDir()
	helm(t, "package", filepath.Join(testenv.RepoRoot(), chartDir), "--destination", dir)
	archive := filepath.Join(dir, "executor-exporter-"+projectVersion(t)+".tgz")
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("helm package made no %s: %v", filepath.Base(archive), err)
	}

	out := helm(t, append([]string{"lint", "--strict", archive}, setArgs(everythingValues)...)...)
	for _, level := range []string{"[WARNING]", "[ERROR]"} {
		if bytes.Contains(out, []byte(level)) {
			t.Errorf("helm lint --strict of the archive reports %s:\n%s", level, out)
		}
	}

	template := func(chart string) []byte {
		return helm(t, append([]string{"template", "executor-exporter", chart, "--namespace", namespace}, setArgs(everythingValues)...)...)
	}
	fromArchive := template(archive)
	if !bytes.Equal(fromArchive, template(filepath.Join(testenv.RepoRoot(), chartDir))) {
		t.Error("the packaged chart renders differently from the chart directory")
	}
	ms := parseManifests(t, fromArchive)
	for _, kind := range []string{"DaemonSet", "ServiceMonitor", "PrometheusRule", "ConfigMap"} {
		if countKind(ms, kind) == 0 {
			t.Errorf("the packaged chart renders no %s", kind)
		}
	}

	out = helm(t, append([]string{"install", "executor-exporter", archive, "--namespace", namespace, "--dry-run=client"}, setArgs(everythingValues)...)...)
	if !bytes.Contains(out, []byte("kind: DaemonSet")) || !bytes.Contains(out, []byte("NOTES:")) {
		t.Errorf("helm install --dry-run=client of the archive:\n%s", out)
	}
}

// notes is NOTES.txt as `helm install --dry-run=client` renders it.
func notes(t *testing.T, values ...string) string {
	t.Helper()
	out := string(helm(t, append([]string{"install", "executor-exporter", filepath.Join(testenv.RepoRoot(), chartDir),
		"--namespace", namespace, "--dry-run=client"}, setArgs(values)...)...))
	_, n, ok := strings.Cut(out, "NOTES:\n")
	if !ok {
		t.Fatalf("no NOTES in:\n%s", out)
	}
	return n
}

// curlLine is the NOTES' curl command.
func curlLine(t *testing.T, notes string) string {
	t.Helper()
	for _, line := range strings.Split(notes, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "curl ") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("no curl line in NOTES:\n%s", notes)
	return ""
}

// TestHelmNotes: the NOTES' curl speaks HTTPS when the exporter does and
// asks for a user when basic auth is on, on the chart's port.
func TestHelmNotes(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []string
		want   string
	}{
		{"plain", nil, "curl -s http://localhost:9482/metrics"},
		{"port", []string{"port=9500"}, "curl -s http://localhost:9500/metrics"},
		{"tls", webConfigValues, "curl -sk https://localhost:9482/metrics"},
		{"basicAuth", basicAuthValues, "curl -s -u <user> http://localhost:9482/metrics"},
		{"tlsAndBasicAuth", append(slices.Clone(webConfigValues), "webConfig.basicAuth=true"), "curl -sk -u <user> https://localhost:9482/metrics"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := notes(t, c.values...)
			if got := curlLine(t, n); !strings.HasPrefix(got, c.want+" ") {
				t.Errorf("curl line %q, want it to start %q", got, c.want)
			}
			if strings.Contains(c.want, "-u") != strings.Contains(n, "basic_auth_users") {
				t.Errorf("NOTES say where the user comes from only with basic auth:\n%s", n)
			}
		})
	}
	if n := notes(t); !strings.Contains(n, "Nothing scrapes it yet") {
		t.Errorf("without a monitor the NOTES do not say that nothing scrapes the exporter:\n%s", n)
	}
	if n := notes(t, serviceMonitorValues...); strings.Contains(n, "Nothing scrapes it yet") {
		t.Errorf("with a ServiceMonitor the NOTES say nothing scrapes the exporter:\n%s", n)
	}
}
