package oom

import (
	"os"
	"regexp"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// Every name a verdict can give has a section of the runbook that says
// more than its advice; the runbook names nothing a verdict cannot give.
func TestAdviceHasARunbookSection(t *testing.T) {
	runbook, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^### Region `([a-z_]+)`$").FindAllSubmatch(runbook, -1) {
		sections[string(m[1])] = true
	}
	names := append(nativemem.RegionNames(), nativemem.Shmem, nativemem.Python, RegionDirectOrMalloc)
	for _, name := range names {
		if !sections[name] {
			t.Errorf("docs/runbook.md has no section \"### Region `%s`\"", name)
		}
		delete(sections, name)
	}
	for name := range sections {
		t.Errorf("docs/runbook.md has a section for %q, which no verdict names", name)
	}
}
