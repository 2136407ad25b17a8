package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--(?:\[no-\])?([a-z0-9][a-z0-9.\-]*)`)

// exporterFlags are the long flags `executor_exporter --help` lists.
func exporterFlags(t testing.TB) map[string]bool {
	t.Helper()
	out, err := exec.Command(testenv.ExporterBinary(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v: %s", err, out)
	}
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["web.listen-address"] || !flags["path.procfs"] {
		t.Fatalf("could not read flags from --help:\n%s", out)
	}
	return flags
}

// flagName is the name of a --flag[=value] argument, without a leading no-.
func flagName(arg string) (string, bool) {
	rest, ok := strings.CutPrefix(arg, "--")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, "=")
	return name, true
}

// checkFlagsExist fails for every --flag in args that the binary does not
// know, so a renamed flag cannot leave a manifest behind.
func checkFlagsExist(t *testing.T, where string, args []string) {
	t.Helper()
	known := exporterFlags(t)
	for _, a := range args {
		name, ok := flagName(a)
		if !ok {
			continue
		}
		if !known[name] && (!strings.HasPrefix(name, "no-") || !known[strings.TrimPrefix(name, "no-")]) {
			t.Errorf("%s: flag --%s is not in executor_exporter --help", where, name)
		}
	}
}

// minKustomize is the oldest kustomize the manifests render with (the
// labels field, which kustomize v2, in kubectl 1.14 to 1.20, does not
// know); docs/kubernetes.md states it.
const minKustomize = "v4.5.4"

var (
	kubectlOnce sync.Once
	kubectlPath string
	kubectlErr  error
)

// kubectlBinary is the kubectl `make kube` builds into $KUBE_DIR, whose
// kustomize is the one the tests render with, whatever kubectl is on the
// PATH (Debian 12's is 1.20, with kustomize v2). It fails the test when
// that kubectl's kustomize is older than minKustomize.
func kubectlBinary(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBE_DIR")
	if dir == "" {
		testenv.Unavailable(t, "KUBE_DIR is not set: make test builds kubectl (make kube) and sets it")
	}
	kubectlOnce.Do(func() {
		kubectlPath = filepath.Join(dir, "kubectl")
		out, err := exec.Command(kubectlPath, "version", "--client", "-o", "json").Output()
		if err != nil {
			kubectlErr = fmt.Errorf("%s version --client: %v (make kube builds it)", kubectlPath, err)
			return
		}
		var v struct {
			KustomizeVersion string `json:"kustomizeVersion"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			kubectlErr = fmt.Errorf("%s version --client -o json: %v: %s", kubectlPath, err, out)
			return
		}
		switch {
		case v.KustomizeVersion == "":
			// kubectl says which kustomize it carries since 1.24.
			kubectlErr = fmt.Errorf("%s names no kustomize version: a kubectl older than 1.24, whose kustomize is older than %s, which the manifests need (docs/kubernetes.md)", kubectlPath, minKustomize)
		case !versionAtLeast(v.KustomizeVersion, minKustomize):
			kubectlErr = fmt.Errorf("%s carries kustomize %s; the manifests need %s or newer (docs/kubernetes.md)", kubectlPath, v.KustomizeVersion, minKustomize)
		}
	})
	if kubectlErr != nil {
		t.Fatal(kubectlErr)
	}
	return kubectlPath
}

// versionAtLeast reports whether version vX.Y.Z[-…] is min or newer; a
// version it cannot read is not.
func versionAtLeast(version, min string) bool {
	var v, m [3]int
	if n, _ := fmt.Sscanf(version, "v%d.%d.%d", &v[0], &v[1], &v[2]); n != 3 {
		return false
	}
	if n, _ := fmt.Sscanf(min, "v%d.%d.%d", &m[0], &m[1], &m[2]); n != 3 {
		return false
	}
	for i := range v {
		if v[i] != m[i] {
			return v[i] > m[i]
		}
	}
	return true
}

// kustomize renders a kustomization directory with kubectl's built-in
// kustomize, which needs no cluster for it.
func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	cmd := exec.Command(kubectlBinary(t), "kustomize", filepath.Join(testenv.RepoRoot(), dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v: %s", dir, err, stderr.String())
	}
	return out
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// splitDocs splits a YAML stream into its non-empty documents.
func splitDocs(stream []byte) [][]byte {
	var docs [][]byte
	for _, d := range docSeparator.Split(string(stream), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// manifest is one rendered document: its kind and name, and its text for
// strict decoding into the kind's type.
type manifest struct {
	plainObject
	raw []byte
}

func parseManifests(t *testing.T, stream []byte) []manifest {
	t.Helper()
	var out []manifest
	for i, doc := range splitDocs(stream) {
		var m manifest
		if err := yaml.Unmarshal(doc, &m.plainObject); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		if m.APIVersion == "" || m.Kind == "" || m.Metadata.Name == "" {
			t.Errorf("document %d lacks apiVersion, kind or metadata.name:\n%s", i, doc)
		}
		m.raw = doc
		out = append(out, m)
	}
	return out
}

// decodeStrict decodes the one manifest of the kind into v; unknown fields
// are errors.
func decodeStrict(t *testing.T, ms []manifest, kind string, v interface{}) {
	t.Helper()
	m := onlyOf(t, ms, kind)
	if err := yaml.UnmarshalStrict(m.raw, v); err != nil {
		t.Fatalf("%s %s: %v", kind, m.Metadata.Name, err)
	}
}

// onlyOf is the one manifest of the kind; none or several fail the test.
func onlyOf(t *testing.T, ms []manifest, kind string) manifest {
	t.Helper()
	var found []manifest
	for _, m := range ms {
		if m.Kind == kind {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s, found %d", kind, len(found))
	}
	return found[0]
}

// selects reports whether every selector label is on the object.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
