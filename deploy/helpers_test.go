package deploy

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// kustomize renders a kustomization directory with kubectl, which has
// kustomize built in and needs no cluster for it.
func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	kubectl := testenv.RequireTool(t, "kubectl")
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(testenv.RepoRoot(), dir))
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
	var found []manifest
	for _, m := range ms {
		if m.Kind == kind {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s, found %d", kind, len(found))
	}
	if err := yaml.UnmarshalStrict(found[0].raw, v); err != nil {
		t.Fatalf("%s %s: %v", kind, found[0].Metadata.Name, err)
	}
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
