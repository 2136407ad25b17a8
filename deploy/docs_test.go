package deploy

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// docMetric is a row of docs/metrics.md.
type docMetric struct {
	typ    string
	labels []string // sorted; nil with dynamic when the names vary
	dyn    bool
}

var (
	metricRow     = regexp.MustCompile("(?m)^\\|\\s*`(executor_[a-z0-9_]+)`\\s*\\|\\s*([a-z]+)\\s*\\|([^|]*)\\|")
	parenthetical = regexp.MustCompile(`\([^)]*\)`)
	backticked    = regexp.MustCompile("`([^`]+)`")
	identity      = []string{"pid", "role", "app_id", "executor_id"}
)

func readMetricsDoc(t *testing.T) map[string]docMetric {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]docMetric{}
	for _, m := range metricRow.FindAllStringSubmatch(string(raw), -1) {
		cell := parenthetical.ReplaceAllString(m[3], "")
		d := docMetric{typ: m[2], labels: []string{}}
		if strings.Contains(cell, "identity") {
			d.labels = append(d.labels, identity...)
		}
		for _, l := range backticked.FindAllStringSubmatch(cell, -1) {
			if strings.ContainsAny(l[1], "<>") {
				d.dyn = true
			}
			d.labels = append(d.labels, l[1])
		}
		sort.Strings(d.labels)
		out[m[1]] = d
	}
	if len(out) < 10 {
		t.Fatalf("read only %d metric rows from docs/metrics.md", len(out))
	}
	return out
}

// TestMetricsDocMatchesScrape runs the built exporter with a real JVM on
// the machine and checks every executor_* family it serves against
// docs/metrics.md: documented, same type, same label names.
func TestMetricsDocMatchesScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the exporter and a JVM")
	}
	doc := readMetricsDoc(t)
	jvm := testjvm.Start(t, testjvm.Options{
		JVMArgs: []string{"-Xmx32m", "-XX:+UseSerialGC"},
		Args:    []string{"--executor-id", "7", "--app-id", "app-docs", "--exit-after-s", "300"},
	})
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	cmd := exec.Command(testenv.ExporterBinary(t), "--web.listen-address="+addr, "--cloud.provider=none",
		"--oom.kmsg-path="+kmsg, "--jvm.sample-interval=0")
	logs := &strings.Builder{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the exporter's log:\n%s", logs)
		}
	})

	var families map[string]*dto.MetricFamily
	testenv.WaitFor(t, 60*time.Second, fmt.Sprintf("the exporter to report JVM %d", jvm.PID), func() bool {
		families = scrapeFamilies(addr)
		f := families["executor_jvm_info"]
		return f != nil && slices.ContainsFunc(f.Metric, func(m *dto.Metric) bool {
			return labelValue(m, "pid") == strconv.Itoa(jvm.PID)
		})
	})

	checked := 0
	for name, f := range families {
		if !strings.HasPrefix(name, "executor_") {
			continue
		}
		d, ok := doc[name]
		if !ok {
			t.Errorf("%s is served but not in docs/metrics.md", name)
			continue
		}
		if got := strings.ToLower(f.GetType().String()); got != d.typ {
			t.Errorf("%s is a %s, docs/metrics.md says %s", name, got, d.typ)
		}
		if d.dyn {
			continue
		}
		seen := map[string]bool{}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				seen[l.GetName()] = true
			}
		}
		got := make([]string, 0, len(seen))
		for l := range seen {
			got = append(got, l)
		}
		sort.Strings(got)
		if !slices.Equal(got, d.labels) {
			t.Errorf("%s has labels %v, docs/metrics.md says %v", name, got, d.labels)
		}
		checked++
	}
	// Node memory, the JVM's families and the scrape's own: well over 30.
	if checked < 30 {
		t.Errorf("checked only %d families; want the node's and the JVM's", checked)
	}
}

func scrapeFamilies(addr string) map[string]*dto.MetricFamily {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	return families
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestConfigurationDocListsEveryFlag: docs/configuration.md has a row for
// every flag of `executor_exporter --help`, and no row for a flag that does
// not exist.
func TestConfigurationDocListsEveryFlag(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\|\\s*`--([a-z0-9.\\-]+)`").FindAllStringSubmatch(string(raw), -1) {
		documented[m[1]] = true
	}
	known := exporterFlags(t)
	for _, f := range sortedFlags(known) {
		if f == "help" || f == "help-long" || f == "help-man" || f == "version" {
			continue
		}
		if !documented[f] {
			t.Errorf("--%s (from --help) has no row in docs/configuration.md", f)
		}
	}
	for _, f := range sortedFlags(documented) {
		if !known[f] {
			t.Errorf("docs/configuration.md documents --%s, which executor_exporter --help does not list", f)
		}
	}
}

func sortedFlags(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDocsLinksResolve: every relative link in the README, CONTRIBUTING.md
// and docs/*.md points at a file of the repository, and every #fragment at
// a heading of the file it names (GitHub's anchors).
func TestDocsLinksResolve(t *testing.T) {
	root := testenv.RepoRoot()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"))
	if len(files) < 10 {
		t.Fatalf("found only %d docs", len(files))
	}
	link := regexp.MustCompile(`\]\(([^)#\s]*)(?:#([^)\s]*))?\)`)
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, path)
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			target, anchor := m[1], m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file := path
			if target != "" {
				file = filepath.Join(filepath.Dir(path), target)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links to %s: %v", name, target, err)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if !slices.Contains(markdownAnchors(t, file), anchor) {
				t.Errorf("%s links to %s#%s: no such heading", name, target, anchor)
			}
		}
	}
}

// markdownAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces as hyphens.
func markdownAnchors(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inCode := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, anchor(strings.TrimSpace(strings.TrimLeft(line, "#"))))
	}
	return out
}

func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"memory collector — the node":                      "memory-collector--the-node",
		"Caveat: `/dev/kmsg` in an unprivileged container": "caveat-devkmsg-in-an-unprivileged-container",
		"Privileges, and why each":                         "privileges-and-why-each",
		"Reading other processes' files safely":            "reading-other-processes-files-safely",
		"Pitfall: the IMDSv2 hop limit and pods":           "pitfall-the-imdsv2-hop-limit-and-pods",
		"`--path.rootfs` (removed)":                        "--pathrootfs-removed",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestReleaseShipsLicense: the release archives (.promu.yml) carry the
// Apache License 2.0 text; test/release checks the built archives and the
// image hold it.
func TestReleaseShipsLicense(t *testing.T) {
	root := testenv.RepoRoot()
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(license), "Apache License\n                           Version 2.0, January 2004") ||
		!strings.Contains(string(license), "END OF TERMS AND CONDITIONS") {
		t.Error("LICENSE is not the full Apache License 2.0 text")
	}
	raw, err := os.ReadFile(filepath.Join(root, ".promu.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var promu struct {
		Tarball struct {
			Files []string `yaml:"files"`
		} `yaml:"tarball"`
	}
	if err := yaml.Unmarshal(raw, &promu); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(promu.Tarball.Files, "LICENSE") {
		t.Errorf(".promu.yml tarball files %v: want LICENSE", promu.Tarball.Files)
	}
}
