package procmem

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// procfsMemoryLine is what procfs makes of the same contents, with
// memoryCgroup picking the line.
func procfsMemoryLine(t *testing.T, procDir string) (memoryLine, []string, error) {
	t.Helper()
	pfs, err := procfs.NewFS(procDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pfs.Proc(1)
	if err != nil {
		t.Fatal(err)
	}
	cgroups, err := p.Cgroups()
	if err != nil {
		return memoryLine{}, nil, err
	}
	cg, dirs, err := memoryCgroup(cgroups)
	if err != nil {
		return memoryLine{}, nil, err
	}
	return memoryLine{v2: cg.HierarchyID == 0 && len(cg.Controllers) == 0, controllers: strings.Join(cg.Controllers, ","), path: cg.Path}, dirs, nil
}

// The parser agrees with procfs and memoryCgroup on whether the contents
// are accepted, on the line picked, and on the mount directories.
func FuzzParseMemoryLine(f *testing.F) {
	for _, s := range cgroupFileSeeds {
		f.Add(s)
	}
	procDir := f.TempDir()
	f.Fuzz(func(t *testing.T, data string) {
		got, err := parseMemoryLine(data)
		if err == nil && !strings.Contains(data, got.path) {
			t.Fatalf("path %q is not from the input", got.path)
		}
		if err := os.MkdirAll(filepath.Join(procDir, "1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(procDir, "1", "cgroup"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		want, wantDirs, wantErr := procfsMemoryLine(t, procDir)
		if (err == nil) != (wantErr == nil) || errors.Is(err, errNoMemoryCgroup) != (wantErr != nil && strings.Contains(wantErr.Error(), "no memory cgroup")) {
			t.Fatalf("%q: error %v, procfs and memoryCgroup: %v", truncate(data, 80), err, wantErr)
		}
		if err != nil {
			return
		}
		if got != want {
			t.Fatalf("%q: got %+v, procfs and memoryCgroup: %+v", truncate(data, 80), got, want)
		}
		if dirs := got.mounts(); strings.Join(dirs, "\n") != strings.Join(wantDirs, "\n") {
			t.Fatalf("%q: mounts %q, memoryCgroup's %q", truncate(data, 80), dirs, wantDirs)
		}
	})
}

// Every process on this machine: the parser and procfs agree.
func TestParseMemoryLineLive(t *testing.T) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	procDir := t.TempDir()
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			continue // gone
		}
		if err := os.MkdirAll(filepath.Join(procDir, "1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(procDir, "1", "cgroup"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		want, _, wantErr := procfsMemoryLine(t, procDir)
		got, err := parseMemoryLine(string(data))
		if err != nil || wantErr != nil || got != want {
			t.Errorf("pid %s %q: got %+v, %v; procfs %+v, %v", e.Name(), data, got, err, want, wantErr)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no process read")
	}
}

// memoryCgroup is the reference parseMemoryLine is held to: it picks the line of /proc/<pid>/cgroup that governs memory and
// the candidate mount directories (relative to sysfs) of its hierarchy. A v1
// memory controller wins over the unified line: in hybrid mode the unified
// hierarchy (mounted at fs/cgroup/unified) carries no memory controller.
func memoryCgroup(cgroups []procfs.Cgroup) (procfs.Cgroup, []string, error) {
	for _, cg := range cgroups {
		if slices.Contains(cg.Controllers, "memory") {
			// Co-mounted controllers get a directory named after all of them;
			// systemd adds a "memory" symlink to it.
			dirs := []string{path.Join("fs/cgroup", strings.Join(cg.Controllers, ","))}
			if len(cg.Controllers) > 1 {
				dirs = append(dirs, "fs/cgroup/memory")
			}
			return cg, dirs, nil
		}
	}
	for _, cg := range cgroups {
		if cg.HierarchyID == 0 && len(cg.Controllers) == 0 {
			return cg, []string{"fs/cgroup"}, nil
		}
	}
	return procfs.Cgroup{}, nil, errors.New("no memory cgroup (neither a v1 memory controller nor a v2 unified line)")
}
