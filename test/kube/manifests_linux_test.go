package kube

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// The shipped manifests, as users apply them: kustomize directories under
// deploy/kubernetes.
var kustomizations = []string{"deploy/kubernetes", "deploy/kubernetes/prometheus-operator", "deploy/kubernetes/oom-privileged"}

// The Helm chart, when the repository has one.
const helmChart = "deploy/helm/executor-exporter"

// The CustomResourceDefinitions of prometheus-operator the operator overlay
// needs (ServiceMonitor, PrometheusRule), from its module (make kube copies
// them from the module cache).
var crds = []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml", "monitoring.coreos.com_podmonitors.yaml"}

// render is one way of installing the exporter: its name and the objects.
type render struct {
	name   string
	stream []byte
}

// kustomizeRenders returns the kustomize outputs.
func (c *cluster) kustomizeRenders(t *testing.T) []render {
	t.Helper()
	var out []render
	for _, dir := range kustomizations {
		out = append(out, render{dir, []byte(c.MustKubectl(t, nil, "kustomize", filepath.Join(testenv.RepoRoot(), dir)))})
	}
	return out
}

// helmRender renders the chart as a user would install it beside the
// kustomize objects: another release name and namespace, so that no object
// is shared, with the ServiceMonitor and the PrometheusRule on.
func helmRender(t *testing.T, namespace string) render {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		testenv.Unavailable(t, "HELM is not set: make test builds helm and sets it")
	}
	cmd := exec.Command(helm, "template", "ee-helm", filepath.Join(testenv.RepoRoot(), helmChart),
		"--namespace", namespace, "--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stream, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v: %s", err, stderr.String())
	}
	return render{helmChart, stream}
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// object is the identity of a rendered document.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
}

// objects lists the documents of a stream with their text.
func objects(t *testing.T, stream []byte) ([]object, [][]byte) {
	t.Helper()
	var objs []object
	var docs [][]byte
	for _, d := range docSeparator.Split(string(stream), -1) {
		var o object
		if err := yaml.Unmarshal([]byte(d), &o); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		if o.Kind == "" {
			continue
		}
		objs = append(objs, o)
		docs = append(docs, []byte(d))
	}
	return objs, docs
}

// applyCRDs installs prometheus-operator's CRDs and waits until the API
// server serves them.
func (c *cluster) applyCRDs(t *testing.T) {
	t.Helper()
	var names []string
	for _, f := range crds {
		data, err := os.ReadFile(filepath.Join(c.bin, "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		// Server-side: the CRDs are larger than the annotation
		// client-side apply would keep.
		c.MustKubectl(t, data, "apply", "--server-side", "--field-manager=test", "-f", "-")
		objs, _ := objects(t, data)
		names = append(names, "crd/"+objs[0].Metadata.Name)
	}
	c.MustKubectl(t, nil, append([]string{"wait", "--for=condition=Established", "--timeout=120s"}, names...)...)
}

// applyAll server-side dry-runs every render, then applies each for real,
// in the order given (for kustomize: the base, then the overlays over it),
// and checks that every object is there. namespace is created first: a dry
// run does not create the namespace the other objects go in.
func (c *cluster) applyAll(t *testing.T, namespace string, rs []render) {
	t.Helper()
	if _, err := c.Kubectl(t, c.admin, nil, "get", "namespace", namespace); err != nil {
		c.MustKubectl(t, nil, "create", "namespace", namespace)
	}
	for _, r := range rs {
		objs, _ := objects(t, r.stream)
		out, err := c.Kubectl(t, c.admin, r.stream, "apply", "--server-side", "--dry-run=server", "--field-manager=test", "-f", "-")
		if err != nil {
			t.Errorf("%s: server-side dry run: %v", r.name, err)
			continue
		}
		// One line per object: kubectl says what it would have done.
		if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != len(objs) {
			t.Errorf("%s: dry run answered for %d objects, the render has %d:\n%s", r.name, n, len(objs), out)
		}
	}
	for _, r := range rs {
		if _, err := c.Kubectl(t, c.admin, r.stream, "apply", "--server-side", "--force-conflicts", "--field-manager=test", "-f", "-"); err != nil {
			t.Errorf("%s: apply: %v", r.name, err)
			continue
		}
		objs, _ := objects(t, r.stream)
		for _, o := range objs {
			resource := strings.ToLower(o.Kind)
			if g := apiGroup(o.APIVersion); g != "" {
				resource += "." + g
			}
			args := []string{"get", resource, o.Metadata.Name, "-o", "name"}
			if ns := o.Metadata.Namespace; ns != "" {
				args = append(args, "-n", ns)
			}
			if _, err := c.Kubectl(t, c.admin, nil, args...); err != nil {
				t.Errorf("%s: %s %s not there after apply: %v", r.name, o.Kind, o.Metadata.Name, err)
			}
		}
	}
}

// serviceAccount returns the name of the render's one ServiceAccount.
func serviceAccount(t *testing.T, r render) string {
	t.Helper()
	var names []string
	objs, _ := objects(t, r.stream)
	for _, o := range objs {
		if o.Kind == "ServiceAccount" {
			names = append(names, o.Metadata.Name)
		}
	}
	if len(names) != 1 {
		t.Fatalf("%s: ServiceAccounts %v, want one", r.name, names)
	}
	return names[0]
}

// apiGroup is the group of an apiVersion ("" for the core group's "v1").
func apiGroup(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}
