package cloudtest

import (
	"os"
	"path/filepath"
	"testing"
)

// SysfsWithDMI writes files (name → value, e.g. "sys_vendor" → "Amazon
// EC2") as a fake /sys/class/dmi/id under a temporary sysfs root, with the
// trailing newline and read-only modes the kernel gives them, and returns
// the root.
func SysfsWithDMI(t testing.TB, files map[string]string) string {
	t.Helper()
	sysfs := t.TempDir()
	dir := filepath.Join(sysfs, "class", "dmi", "id")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return sysfs
}
