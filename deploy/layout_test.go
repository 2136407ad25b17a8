package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// layoutEntry is a directory docs/design.md's layout names, at the start
// of a line of its code block.
var layoutEntry = regexp.MustCompile(`(?m)^([a-z][a-z0-9_./-]*/)\s`)

// docs/design.md's layout names every Go package of the module, and no
// package that is not there.
func TestDesignLayoutNamesEveryPackage(t *testing.T) {
	root := testenv.RepoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(doc), "## Layout")
	if start < 0 {
		t.Fatal("docs/design.md has no Layout section")
	}
	block := string(doc[start:])
	block = block[strings.Index(block, "```")+3:]
	block = block[:strings.Index(block, "```")]
	named := map[string]bool{}
	for _, m := range layoutEntry.FindAllStringSubmatch(block, -1) {
		named[strings.TrimSuffix(m[1], "/")] = true
	}
	var packages []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			if rel != "." && !slices.Contains(packages, rel) {
				packages = append(packages, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range packages {
		if !named[p] && !strings.HasPrefix(p, "test/vm/guest") {
			t.Errorf("package %s is not in docs/design.md's layout", p)
		}
	}
	for p := range named {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("docs/design.md's layout names %s, which does not exist", p)
		}
	}
	if len(packages) < 20 {
		t.Fatalf("found %d packages: the walk is wrong", len(packages))
	}
}
