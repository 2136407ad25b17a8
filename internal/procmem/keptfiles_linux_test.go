package procmem

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

func TestKeptFiles(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) int {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	var k keptFiles
	if _, ok := k.fd("memory.stat"); ok {
		t.Fatal("a descriptor before any was kept")
	}
	stat, usage, limit := open("memory.stat"), open("memory.usage_in_bytes"), open("memory.limit_in_bytes")
	k.keep("memory.stat", stat)
	k.keep("memory.usage_in_bytes", usage)
	k.keep("memory.limit_in_bytes", limit)
	if fd, ok := k.fd("memory.usage_in_bytes"); !ok || fd != usage {
		t.Fatalf("fd %d, %v; want %d", fd, ok, usage)
	}
	k.drop("memory.stat")
	if _, ok := k.fd("memory.stat"); ok {
		t.Error("memory.stat still kept after drop")
	}
	if fd, ok := k.fd("memory.limit_in_bytes"); !ok || fd != limit {
		t.Errorf("after dropping another: fd %d, %v; want %d", fd, ok, limit)
	}
	if n := testenv.OpenFDsBeneath(t, dir); n != 2 {
		t.Errorf("%d descriptors open after a drop, want 2", n)
	}
	k.drop("memory.stat") // dropped already: nothing to do
	k.closeAll()
	if n := testenv.OpenFDsBeneath(t, dir); n != 0 {
		t.Errorf("%d descriptors open after closeAll, want 0", n)
	}
}
