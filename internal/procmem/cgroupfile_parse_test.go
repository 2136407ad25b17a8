package procmem

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// cgroupFileSeeds are /proc/<pid>/cgroup contents: real ones (a cgroup v1
// host with a hybrid unified line, a v2 host, co-mounted controllers as
// systemd mounts them) and malformed ones.
var cgroupFileSeeds = []string{
	"12:memory:/kubepods/burstable/pod1/abc\n11:cpu,cpuacct:/kubepods/burstable/pod1/abc\n1:name=systemd:/kubepods\n0::/\n",
	"9:name=systemd:/\n8:pids:/\n4:memory:/process_api/bd5be6\n1:cpu:/\n0::/\n",
	"0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope\n",
	"0::/\n4:memory:/after-unified\n",
	"4:cpu,memory:/comount\n",
	"4:memory,,cpu:/odd\n",
	"4:memory:/a:b\n",
	"4:memory:/crlf\r\n0::/\r\n",
	"4:memory:/first\n5:memory:/second\n",
	"0::/first\n0::/second\n",
	"+0::/signed\n",
	"9:name=systemd:/\n8:pids:/\n1:cpu:/\n",
	"4:memory:/no-newline",
	"",
	"\n",
	"4:memory:/x\n\n",
	"garbage line\n",
	"x:memory:/x\n",
	"4:memory\n",
	"4:memory:/x\n4:cpu\n",
	"4:memory:/" + strings.Repeat("a", 70000) + "\n",
	"1:cpu:/\n2:cpu:/" + strings.Repeat("b", bufio.MaxScanTokenSize-8) + "\n4:memory:/x\n",
	"1:cpu:/\n2:cpu:/" + strings.Repeat("b", bufio.MaxScanTokenSize-7) + "\n4:memory:/x\n",
}

func TestParseMemoryLine(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    memoryLine
		wantErr string
	}{
		{in: cgroupFileSeeds[0], want: memoryLine{controllers: "memory", path: "/kubepods/burstable/pod1/abc"}},
		{in: cgroupFileSeeds[2], want: memoryLine{v2: true, path: "/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope"}},
		{in: cgroupFileSeeds[3], want: memoryLine{controllers: "memory", path: "/after-unified"}},
		{in: cgroupFileSeeds[4], want: memoryLine{controllers: "cpu,memory", path: "/comount"}},
		{in: cgroupFileSeeds[6], want: memoryLine{controllers: "memory", path: "/a:b"}},
		{in: cgroupFileSeeds[7], want: memoryLine{controllers: "memory", path: "/crlf"}},
		{in: cgroupFileSeeds[8], want: memoryLine{controllers: "memory", path: "/first"}},
		{in: cgroupFileSeeds[9], want: memoryLine{v2: true, path: "/first"}},
		{in: cgroupFileSeeds[10], want: memoryLine{v2: true, path: "/signed"}},
		{in: cgroupFileSeeds[12], want: memoryLine{controllers: "memory", path: "/no-newline"}},
		{in: cgroupFileSeeds[11], wantErr: "no memory cgroup"},
		{in: "", wantErr: "no memory cgroup"},
		{in: "\n", wantErr: "3+ fields"},
		{in: cgroupFileSeeds[15], wantErr: "3+ fields"}, // an empty line after the memory one
		{in: cgroupFileSeeds[17], wantErr: "not a number"},
		{in: cgroupFileSeeds[19], wantErr: "3+ fields"},
		{in: cgroupFileSeeds[20], wantErr: "too long"},
	} {
		got, err := parseMemoryLine(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error = %v, want containing %q", truncate(tc.in, 60), err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", truncate(tc.in, 60), got, err, tc.want)
		}
	}
}

// procfsMemoryLine is what ReadCgroupMemory makes of the same contents:
// procfs parses the file and memoryCgroup picks the line.
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

// scannerKeyedUint is parseKeyedUint as bufio.Scanner splits lines, the
// reference the allocation-free version must match.
func scannerKeyedUint(data []byte, key string) (uint64, bool, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), " ")
		if !ok || name != key {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
		if err != nil {
			return 0, true, errors.New("bad value")
		}
		return v, true, nil
	}
	return 0, false, sc.Err()
}
