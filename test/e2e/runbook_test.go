package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// thresholdKey names the mixin settings an on-call engineer reads in the
// runbook: every threshold, window, `for` duration and horizon.
var thresholdKey = regexp.MustCompile(`(Threshold|Target|For|Window|Minutes|MinRatio|MinAge)$`)

// TestRunbookThresholdsMatchConfig: the table of docs/runbook.md's
// "Thresholds" section lists every threshold, window and `for` of
// mixin/config.libsonnet with its default, and nothing else; a changed
// default fails until the runbook says it too.
func TestRunbookThresholdsMatchConfig(t *testing.T) {
	goTool := testenv.RequireTool(t, "go")
	cmd := exec.Command(goTool, "run", "github.com/google/go-jsonnet/cmd/jsonnet@"+mixinJsonnetVersion(t),
		"-e", "(import 'mixin.libsonnet')._config")
	cmd.Dir = filepath.Join(testenv.RepoRoot(), "mixin")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jsonnet: %v", err)
	}
	var config map[string]any
	if err := json.Unmarshal(out, &config); err != nil {
		t.Fatal(err)
	}
	runbook, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\w+)` \\| ([^|]+?) \\|").FindAllSubmatch(runbook, -1) {
		documented[string(m[1])] = string(m[2])
	}
	if len(documented) == 0 {
		t.Fatal("docs/runbook.md has no thresholds table (rows like | `key` | value | ...)")
	}
	for key, v := range config {
		if !thresholdKey.MatchString(key) {
			continue
		}
		want := fmt.Sprint(v)
		if f, ok := v.(float64); ok {
			want = strconv.FormatFloat(f, 'g', -1, 64)
		}
		got, ok := documented[key]
		switch {
		case !ok:
			t.Errorf("docs/runbook.md's thresholds table lacks `%s` (%s in mixin/config.libsonnet)", key, want)
		case got != want:
			t.Errorf("docs/runbook.md says `%s` is %s; mixin/config.libsonnet says %s", key, got, want)
		}
		delete(documented, key)
	}
	for key := range documented {
		t.Errorf("docs/runbook.md's thresholds table lists `%s`, which mixin/config.libsonnet has not", key)
	}
}
