package deploy

// The Helm chart (deploy/helm/executor-exporter) against the kustomize
// bases: lint-clean, and rendering the same RBAC, host access, ports,
// flags and security context, so the two ways to install cannot drift
// apart. The chart is rendered with helm built from its Go module at the
// version the Makefile pins (make helm sets $HELM).

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

const chartDir = "deploy/helm/executor-exporter"

// The values of each variant the tests render, as --set arguments.
var (
	privilegedValues     = []string{"oom.privileged=true"}
	serviceMonitorValues = []string{"serviceMonitor.enabled=true"}
	prometheusRuleValues = []string{"prometheusRule.enabled=true"}
	webConfigValues      = []string{"webConfig.enabled=true", "webConfig.secretName=exporter-web", "webConfig.tls=true", "serviceMonitor.enabled=true"}
	basicAuthValues      = []string{"webConfig.enabled=true", "webConfig.secretName=exporter-web", "webConfig.basicAuth=true"}
	noOOMValues          = []string{"oom.enabled=false"}
	extraArgsValues      = []string{"extraArgs[0]=--kubernetes.node-labels=*", "extraArgs[1]=--jvm.sample-interval=15s"}
)

// helmBinary is $HELM, which `make test` sets to the pinned helm it builds.
func helmBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("HELM")
	if p == "" {
		testenv.Unavailable(t, "HELM is not set: make test builds helm (make helm) and sets it")
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Unavailable(t, "HELM=%s: %v (make helm builds it)", p, err)
	}
	return p
}

// helm runs helm with args and returns its standard output; it fails the
// test on a non-zero exit.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := helmCommand(t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

func setArgs(values []string) []string {
	var args []string
	for _, v := range values {
		args = append(args, "--set", v)
	}
	return args
}

// helmTemplate renders the chart as release executor-exporter in namespace
// executor-exporter, which gives its objects the kustomize bases' names.
func helmTemplate(t *testing.T, values ...string) []manifest {
	t.Helper()
	args := append([]string{"template", "executor-exporter", filepath.Join(testenv.RepoRoot(), chartDir), "--namespace", namespace}, setArgs(values)...)
	return parseManifests(t, helm(t, args...))
}

func TestHelmLint(t *testing.T) {
	for name, values := range map[string][]string{
		"defaults":       nil,
		"privileged":     privilegedValues,
		"serviceMonitor": serviceMonitorValues,
		"prometheusRule": prometheusRuleValues,
		"webConfig":      webConfigValues,
		"basicAuth":      basicAuthValues,
		"noOOM":          noOOMValues,
		"podMonitor":     {"podMonitor.enabled=true", "monitoringLabels.release=kube-prometheus-stack"},
		"everything":     everythingValues,
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", filepath.Join(testenv.RepoRoot(), chartDir)}, setArgs(values)...)
			out := helm(t, args...)
			for _, level := range []string{"[WARNING]", "[ERROR]"} {
				if bytes.Contains(out, []byte(level)) {
					t.Errorf("helm lint --strict reports %s:\n%s", level, out)
				}
			}
		})
	}
}

// TestHelmMatchesKustomize: with default values the chart renders what
// deploy/kubernetes does, and with oom.privileged=true what
// deploy/kubernetes/oom-privileged does, in everything that decides what
// the exporter can reach and how it runs.
func TestHelmMatchesKustomize(t *testing.T) {
	for _, c := range []struct {
		name      string
		values    []string
		kustomize string
	}{
		{"defaults", nil, "deploy/kubernetes"},
		{"privileged", privilegedValues, "deploy/kubernetes/oom-privileged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			chart := helmTemplate(t, c.values...)
			kust := parseManifests(t, kustomize(t, c.kustomize))
			compareRBAC(t, chart, kust)
			compareDaemonSets(t, chart, kust)
			compareServices(t, chart, kust)
		})
	}
}

// grants lists a ClusterRole's rules as "apiGroup resource verb" triples.
func grants(t *testing.T, ms []manifest) []string {
	t.Helper()
	var role clusterRole
	decodeStrict(t, ms, "ClusterRole", &role)
	var out []string
	for _, r := range role.Rules {
		if len(r.ResourceNames) != 0 || len(r.NonResourceURLs) != 0 {
			out = append(out, "resourceNames or nonResourceURLs in "+strings.Join(r.Resources, ","))
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+" "+res+" "+v)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func compareRBAC(t *testing.T, chart, kust []manifest) {
	t.Helper()
	if got, want := grants(t, chart), grants(t, kust); !slices.Equal(got, want) {
		t.Errorf("the chart's ClusterRole grants %q, the kustomize base's %q", got, want)
	}
	var role clusterRole
	decodeStrict(t, chart, "ClusterRole", &role)
	var binding clusterRoleBinding
	decodeStrict(t, chart, "ClusterRoleBinding", &binding)
	var sa serviceAccount
	decodeStrict(t, chart, "ServiceAccount", &sa)
	var ds daemonSet
	decodeStrict(t, chart, "DaemonSet", &ds)
	if binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != role.Metadata.Name || binding.RoleRef.APIGroup != "rbac.authorization.k8s.io" {
		t.Errorf("the chart's binding refers to %+v, not its ClusterRole %s", binding.RoleRef, role.Metadata.Name)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" ||
		binding.Subjects[0].Name != sa.Metadata.Name || binding.Subjects[0].Namespace != sa.Metadata.Namespace {
		t.Errorf("the chart's binding subjects %+v, want its ServiceAccount %s/%s", binding.Subjects, sa.Metadata.Namespace, sa.Metadata.Name)
	}
	if ds.Spec.Template.Spec.ServiceAccountName != sa.Metadata.Name || ds.Metadata.Namespace != sa.Metadata.Namespace {
		t.Errorf("the chart's pods run as %s in %s, its ServiceAccount is %s/%s",
			ds.Spec.Template.Spec.ServiceAccountName, ds.Metadata.Namespace, sa.Metadata.Namespace, sa.Metadata.Name)
	}
}

// same reports a difference between the chart's and the kustomize base's
// value of what.
func same(t *testing.T, what string, chart, kust any) {
	t.Helper()
	if !reflect.DeepEqual(chart, kust) {
		t.Errorf("%s differs:\n  chart:     %+v\n  kustomize: %+v", what, chart, kust)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func compareDaemonSets(t *testing.T, chartMs, kustMs []manifest) {
	t.Helper()
	var chartDS, kustDS daemonSet
	decodeStrict(t, chartMs, "DaemonSet", &chartDS)
	decodeStrict(t, kustMs, "DaemonSet", &kustDS)
	chart, kust := chartDS.Spec.Template.Spec, kustDS.Spec.Template.Spec

	if !selects(chartDS.Spec.Selector.MatchLabels, chartDS.Spec.Template.Metadata.Labels) {
		t.Errorf("the chart's selector %v does not match its pod labels %v", chartDS.Spec.Selector.MatchLabels, chartDS.Spec.Template.Metadata.Labels)
	}
	same(t, "updateStrategy", chartDS.Spec.UpdateStrategy, kustDS.Spec.UpdateStrategy)
	same(t, "pod annotations", chartDS.Spec.Template.Metadata.Annotations, kustDS.Spec.Template.Metadata.Annotations)
	same(t, "hostPID", chart.HostPID, kust.HostPID)
	same(t, "hostNetwork", chart.HostNetwork, kust.HostNetwork)
	same(t, "dnsPolicy", chart.DNSPolicy, kust.DNSPolicy)
	same(t, "automountServiceAccountToken", chart.AutomountServiceAccountToken, kust.AutomountServiceAccountToken)
	same(t, "priorityClassName", chart.PriorityClassName, kust.PriorityClassName)
	same(t, "tolerations", chart.Tolerations, kust.Tolerations)
	same(t, "nodeSelector", chart.NodeSelector, kust.NodeSelector)
	same(t, "pod securityContext", chart.SecurityContext, kust.SecurityContext)
	same(t, "volumes", chart.Volumes, kust.Volumes)

	if len(chart.Containers) != 1 || len(kust.Containers) != 1 {
		t.Fatalf("containers: the chart has %d, kustomize %d; want one each", len(chart.Containers), len(kust.Containers))
	}
	c, k := chart.Containers[0], kust.Containers[0]
	checkFlagsExist(t, "chart's DaemonSet args", c.Args)
	same(t, "image", c.Image, k.Image)
	// The order of flags does not matter to kingpin; their set does.
	same(t, "args", sorted(c.Args), sorted(k.Args))
	same(t, "env", c.Env, k.Env)
	same(t, "ports", c.Ports, k.Ports)
	same(t, "volumeMounts", c.VolumeMounts, k.VolumeMounts)
	same(t, "resources", c.Resources, k.Resources)
	same(t, "readinessProbe port and path", probeTarget(c.ReadinessProbe), probeTarget(k.ReadinessProbe))
	same(t, "livenessProbe port and path", probeTarget(c.LivenessProbe), probeTarget(k.LivenessProbe))
	csc, ksc := c.SecurityContext, k.SecurityContext
	csc.Capabilities.Add, ksc.Capabilities.Add = sorted(csc.Capabilities.Add), sorted(ksc.Capabilities.Add)
	same(t, "container securityContext", csc, ksc)
}

// probeTarget is what a probe asks, with HTTP the default scheme.
func probeTarget(p *probe) string {
	if p == nil {
		return "none"
	}
	if p.TCPSocket != nil {
		return "tcp " + p.TCPSocket.Port
	}
	scheme := p.HTTPGet.Scheme
	if scheme == "" {
		scheme = "HTTP"
	}
	return scheme + " " + p.HTTPGet.Port + " " + p.HTTPGet.Path
}

func compareServices(t *testing.T, chartMs, kustMs []manifest) {
	t.Helper()
	var chart, kust service
	decodeStrict(t, chartMs, "Service", &chart)
	decodeStrict(t, kustMs, "Service", &kust)
	same(t, "Service clusterIP", chart.Spec.ClusterIP, kust.Spec.ClusterIP)
	same(t, "Service ports", chart.Spec.Ports, kust.Spec.Ports)
	var ds daemonSet
	decodeStrict(t, chartMs, "DaemonSet", &ds)
	if !selects(chart.Spec.Selector, ds.Spec.Template.Metadata.Labels) {
		t.Errorf("the chart's Service selector %v does not select its pods %v", chart.Spec.Selector, ds.Spec.Template.Metadata.Labels)
	}
}

// TestHelmServiceMonitor: the chart's ServiceMonitor scrapes as the
// prometheus-operator kustomization's does, and selects the chart's
// Service.
func TestHelmServiceMonitor(t *testing.T) {
	if ms := helmTemplate(t); hasKind(ms, "ServiceMonitor") || hasKind(ms, "PrometheusRule") {
		t.Error("the default values render a ServiceMonitor or a PrometheusRule; both need prometheus-operator's CRDs and are opt-in")
	}
	chart := helmTemplate(t, serviceMonitorValues...)
	var sm serviceMonitor
	decodeStrict(t, chart, "ServiceMonitor", &sm)
	var svc service
	decodeStrict(t, chart, "Service", &svc)
	checkMonitor(t, "ServiceMonitor", sm, svc.Metadata.Labels, svc.Metadata.Namespace, sm.Spec.Endpoints)

	var kust serviceMonitor
	decodeStrict(t, parseManifests(t, kustomize(t, "deploy/kubernetes/prometheus-operator")), "ServiceMonitor", &kust)
	if len(sm.Spec.Endpoints) == 1 && len(kust.Spec.Endpoints) == 1 {
		got, want := sm.Spec.Endpoints[0], kust.Spec.Endpoints[0]
		if got.Scheme != "http" {
			t.Errorf("ServiceMonitor scheme %q without TLS, want http", got.Scheme)
		}
		got.Scheme = ""
		same(t, "ServiceMonitor endpoint", got, want)
	}
}

// TestHelmPrometheusRule: the chart's PrometheusRule carries the mixin's
// rendered groups, from the files the chart links to in mixin/generated
// (one source: a copy could go stale).
func TestHelmPrometheusRule(t *testing.T) {
	root := testenv.RepoRoot()
	var want []ruleGroup
	for _, f := range []string{"rules.yaml", "alerts.yaml"} {
		link := filepath.Join(root, chartDir, "files", f)
		target, err := os.Readlink(link)
		if err != nil {
			t.Fatalf("%s must be a symbolic link to mixin/generated/%s: %v", link, f, err)
		}
		if resolved := filepath.Clean(filepath.Join(filepath.Dir(link), target)); resolved != filepath.Join(root, "mixin", "generated", f) {
			t.Errorf("%s links to %s, want mixin/generated/%s", link, resolved, f)
		}
		raw, err := os.ReadFile(filepath.Join(root, "mixin", "generated", f))
		if err != nil {
			t.Fatalf("%v (make mixin renders it)", err)
		}
		var file struct {
			Groups []ruleGroup `yaml:"groups"`
		}
		if err := yaml.UnmarshalStrict(raw, &file); err != nil {
			t.Fatalf("mixin/generated/%s: %v", f, err)
		}
		want = append(want, file.Groups...)
	}

	var rule prometheusRule
	decodeStrict(t, helmTemplate(t, prometheusRuleValues...), "PrometheusRule", &rule)
	if len(rule.Spec.Groups) == 0 {
		t.Fatal("the chart's PrometheusRule has no groups")
	}
	// The kustomization's copy is held to the same files by
	// TestPrometheusRuleIsFresh.
	same(t, "PrometheusRule groups (chart against mixin/generated)", rule.Spec.Groups, want)
}

// TestHelmWebConfig: with a web configuration the exporter reads it from
// the Secret's volume, and the probes and the ServiceMonitor speak HTTPS,
// or only connect when basic auth would refuse them.
func TestHelmWebConfig(t *testing.T) {
	t.Run("tls", func(t *testing.T) {
		ms := helmTemplate(t, webConfigValues...)
		c := checkWebConfigMount(t, ms)
		for _, p := range []*probe{c.ReadinessProbe, c.LivenessProbe} {
			if got := probeTarget(p); got != "HTTPS metrics /" {
				t.Errorf("probe %q with TLS, want HTTPS metrics /", got)
			}
		}
		var sm serviceMonitor
		decodeStrict(t, ms, "ServiceMonitor", &sm)
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Scheme != "https" {
			t.Errorf("ServiceMonitor endpoints %+v with TLS, want scheme https", sm.Spec.Endpoints)
		}
	})
	t.Run("basicAuth", func(t *testing.T) {
		c := checkWebConfigMount(t, helmTemplate(t, basicAuthValues...))
		for _, p := range []*probe{c.ReadinessProbe, c.LivenessProbe} {
			if got := probeTarget(p); got != "tcp metrics" {
				t.Errorf("probe %q with basic auth, which answers 401 to a GET; want a TCP probe", got)
			}
		}
	})
}

// checkWebConfigMount checks that --web.config.file names web-config.yml
// in a read-only mount of the Secret webConfig.secretName, and returns
// the container.
func checkWebConfigMount(t *testing.T, ms []manifest) container {
	t.Helper()
	var ds daemonSet
	decodeStrict(t, ms, "DaemonSet", &ds)
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	checkFlagsExist(t, "chart's DaemonSet args", c.Args)
	file := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--web.config.file="); ok {
			file = v
		}
	}
	if filepath.Base(file) != "web-config.yml" {
		t.Fatalf("--web.config.file=%q, want a path to web-config.yml (args %q)", file, c.Args)
	}
	secretOf := map[string]string{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secretOf[v.Name] = v.Secret.SecretName
		}
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.MountPath == filepath.Dir(file) && secretOf[m.Name] == "exporter-web" {
			mounted = true
			if !m.ReadOnly {
				t.Errorf("the web configuration's Secret is mounted read-write")
			}
		}
	}
	if !mounted {
		t.Errorf("no mount of Secret exporter-web at %s (mounts %+v, volumes %+v)", filepath.Dir(file), c.VolumeMounts, pod.Volumes)
	}
	return c
}

// TestHelmValues: the values that change the exporter's flags and mounts do
// what values.yaml says.
func TestHelmValues(t *testing.T) {
	t.Run("noOOM", func(t *testing.T) {
		var ds daemonSet
		decodeStrict(t, helmTemplate(t, noOOMValues...), "DaemonSet", &ds)
		c := ds.Spec.Template.Spec.Containers[0]
		checkFlagsExist(t, "chart's DaemonSet args", c.Args)
		if !slices.Contains(c.Args, "--no-collector.oom") || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--oom.") }) {
			t.Errorf("oom.enabled=false: args %q, want --no-collector.oom and no --oom.* flag", c.Args)
		}
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.HostPath != nil && v.HostPath.Path == "/dev/kmsg" {
				t.Error("oom.enabled=false still mounts /dev/kmsg")
			}
		}
	})
	t.Run("extraArgs", func(t *testing.T) {
		var ds daemonSet
		decodeStrict(t, helmTemplate(t, extraArgsValues...), "DaemonSet", &ds)
		args := ds.Spec.Template.Spec.Containers[0].Args
		checkFlagsExist(t, "chart's DaemonSet args", args)
		if n := len(args); n < 2 || args[n-2] != "--kubernetes.node-labels=*" || args[n-1] != "--jvm.sample-interval=15s" {
			t.Errorf("extraArgs are not appended as given: %q", args)
		}
	})
}

type serviceAccount struct {
	typeMeta                     `yaml:",inline"`
	Metadata                     objectMeta `yaml:"metadata"`
	AutomountServiceAccountToken *bool      `yaml:"automountServiceAccountToken"`
}

func hasKind(ms []manifest, kind string) bool {
	return slices.ContainsFunc(ms, func(m manifest) bool { return m.Kind == kind })
}
