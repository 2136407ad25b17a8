package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

func TestPrometheusOperatorOverlay(t *testing.T) {
	ms := parseManifests(t, kustomize(t, "deploy/kubernetes/prometheus-operator"))
	var svc service
	decodeStrict(t, ms, "Service", &svc)
	var sm serviceMonitor
	decodeStrict(t, ms, "ServiceMonitor", &sm)
	checkMonitor(t, "ServiceMonitor", sm, svc.Metadata.Labels, svc.Metadata.Namespace, sm.Spec.Endpoints)

	// The PodMonitor is the alternative, kept out of the kustomization so
	// targets are not scraped twice; it must select the DaemonSet's pods.
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "kubernetes", "prometheus-operator", "podmonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pm serviceMonitor
	if err := yaml.UnmarshalStrict(raw, &pm); err != nil {
		t.Fatalf("podmonitor.yaml: %v", err)
	}
	var ds daemonSet
	decodeStrict(t, ms, "DaemonSet", &ds)
	if pm.Kind != "PodMonitor" || pm.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("podmonitor.yaml is %s %s", pm.APIVersion, pm.Kind)
	}
	checkMonitor(t, "PodMonitor", pm, ds.Spec.Template.Metadata.Labels, ds.Metadata.Namespace, pm.Spec.PodMetricsEndpoints)

	var rule prometheusRule
	decodeStrict(t, ms, "PrometheusRule", &rule)
	if len(rule.Spec.Groups) == 0 {
		t.Error("PrometheusRule has no groups")
	}
}

func checkMonitor(t *testing.T, kind string, m serviceMonitor, targetLabels map[string]string, targetNS string, eps []scrapeEndpoint) {
	t.Helper()
	if !selects(m.Spec.Selector.MatchLabels, targetLabels) {
		t.Errorf("%s selector %v does not select %v", kind, m.Spec.Selector.MatchLabels, targetLabels)
	}
	if !slices.Equal(m.Spec.NamespaceSelector.MatchNames, []string{targetNS}) {
		t.Errorf("%s namespaceSelector %v, want [%s]", kind, m.Spec.NamespaceSelector.MatchNames, targetNS)
	}
	if len(eps) != 1 || eps[0].Port != "metrics" {
		t.Fatalf("%s endpoints %+v, want one on port metrics", kind, eps)
	}
	// The mixin selects job="executor_exporter" by default.
	job, dropsPodLabels := false, false
	for _, r := range eps[0].Relabelings {
		job = job || (r.TargetLabel == "job" && r.Replacement == "executor_exporter")
		dropsPodLabels = dropsPodLabels || (r.Action == "labeldrop" && r.Regex == "namespace|pod|container")
	}
	// The operator's own target labels would rename the executors'
	// namespace, pod and container to exported_*.
	if !dropsPodLabels {
		t.Errorf("%s keeps the exporter pod's namespace, pod and container as target labels", kind)
	}
	if !job {
		t.Errorf("%s does not set job=executor_exporter, the mixin's default selector", kind)
	}
}

// TestPrometheusRuleIsFresh regenerates the PrometheusRule from the mixin's
// rendered rules and compares it with the committed one, then has promtool
// check the rules it carries.
func TestPrometheusRuleIsFresh(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "deploy", "kubernetes", "prometheus-operator")
	for _, f := range []string{"rules.yaml", "alerts.yaml"} {
		if _, err := os.Stat(filepath.Join(testenv.RepoRoot(), "mixin", "generated", f)); err != nil {
			t.Fatalf("mixin/generated/%s: %v (make mixin renders it)", f, err)
		}
	}
	fresh := filepath.Join(t.TempDir(), "prometheusrule.yaml")
	if out, err := exec.Command(filepath.Join(dir, "generate.sh"), fresh).CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v: %s", err, out)
	}
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("deploy/kubernetes/prometheus-operator/prometheusrule.yaml is stale: run deploy/kubernetes/prometheus-operator/generate.sh")
	}

	var rule prometheusRule
	if err := yaml.UnmarshalStrict(got, &rule); err != nil {
		t.Fatal(err)
	}
	groups, err := yaml.Marshal(map[string]interface{}{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "groups.yaml")
	if err := os.WriteFile(file, groups, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool := testenv.RequireTool(t, "promtool")
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the PrometheusRule's groups: %v\n%s", err, out)
	}
}

func TestSystemdUnit(t *testing.T) {
	unitPath := filepath.Join(testenv.RepoRoot(), "deploy", "systemd", "executor_exporter.service")
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	directives := map[string][]string{}
	for _, line := range strings.Split(string(unit), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			directives[k] = append(directives[k], v)
		}
	}
	want := map[string]string{
		"NoNewPrivileges":       "yes",
		"ProtectSystem":         "strict",
		"CapabilityBoundingSet": "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG",
		"AmbientCapabilities":   "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG",
		"EnvironmentFile":       "-/etc/default/executor_exporter",
		"ExecStart":             "/usr/local/bin/executor_exporter $ARGS",
		// bench/interval.sh measures the exporter with this slack too.
		"TimerSlackNSec": "1ms",
	}
	for k, v := range want {
		if got := directives[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%v, want %s", k, got, v)
		}
	}
	for _, k := range []string{"ProtectKernelLogs", "PrivateDevices", "ProtectProc"} {
		if _, ok := directives[k]; ok {
			t.Errorf("%s hides /dev/kmsg or the JVMs from the exporter", k)
		}
	}

	// The env file's flags exist.
	env, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "systemd", "executor_exporter.default"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ARGS="([^"]*)"`).FindSubmatch(env)
	if m == nil {
		t.Fatal("executor_exporter.default sets no ARGS")
	}
	checkFlagsExist(t, "executor_exporter.default", strings.Fields(string(m[1])))

	// systemd's own checks, with ExecStart pointed at a real binary: verify
	// prints unknown keys and bad values (and still exits 0), so any output
	// fails; security scores the sandbox (0 best, 10 worst).
	analyze := testenv.RequireTool(t, "systemd-analyze")
	copyPath := filepath.Join(t.TempDir(), "executor_exporter.service")
	patched := strings.ReplaceAll(string(unit), "/usr/local/bin/executor_exporter", testenv.ExporterBinary(t))
	if err := os.WriteFile(copyPath, []byte(patched), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(analyze, "security", "--offline=true", "--threshold=30", copyPath).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 3.0 (%v)\n%s", err, out)
	}
}
