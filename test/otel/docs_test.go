package otel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// TestDocConfigValidates: the Collector configuration docs/opentelemetry.md
// gives users (the first yaml block under "## Configuration") is accepted
// by the Collector the tests build.
func TestDocConfigValidates(t *testing.T) {
	bin := collectorBinary(t)
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "opentelemetry.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Configuration\n")
	if !ok {
		t.Fatal(`docs/opentelemetry.md has no "## Configuration" section`)
	}
	_, block, ok := strings.Cut(section, "\n```yaml\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```\n")
	}
	if !ok {
		t.Fatal(`no yaml block under "## Configuration" in docs/opentelemetry.md`)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(block+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "validate", "--config="+path).CombinedOutput(); err != nil {
		t.Fatalf("otelcol validate of the documented configuration: %v\n%s\n%s", err, out, block)
	}
}
