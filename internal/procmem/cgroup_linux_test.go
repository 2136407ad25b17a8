package procmem

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const mib = 1 << 20

func TestReadCgroupMemoryFixtures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tree    string // under testdata: holds proc/ and sys/
		pid     int
		want    CgroupMemory
		wantErr string
	}{
		{
			name: "v1 limited with oom kills", tree: "cgroupv1", pid: 10,
			want: CgroupMemory{Path: "/kubepods/burstable/pod1/limited", Version: 1, Limit: 256 * mib,
				Usage: 100 * mib, WorkingSet: 90 * mib, OOMKills: 3, HasOOMKills: true, HasAnon: true, HasFile: true,
				Peak: 180 * mib, HasPeak: true, FailCnt: 37, HasFailCnt: true},
		},
		{
			name: "v1 unlimited, kernel without oom_kill", tree: "cgroupv1", pid: 11,
			want: CgroupMemory{Path: "/unlimited", Version: 1, Limit: 0, Usage: 50 * mib, WorkingSet: 50 * mib, HasAnon: true, HasFile: true},
		},
		{name: "v1 garbage usage", tree: "cgroupv1", pid: 12, wantErr: "memory.usage_in_bytes: not an unsigned integer"},
		{name: "v1 dot-dot path", tree: "cgroupv1", pid: 13, wantErr: "host cgroup namespace"},
		{name: "v1 cgroup gone", tree: "cgroupv1", pid: 14, wantErr: "no such cgroup under sysfs"},
		{
			name: "v1 inactive file above usage", tree: "cgroupv1", pid: 15,
			want: CgroupMemory{Path: "/cachy", Version: 1, Limit: 64 * mib, Usage: 10 * mib, WorkingSet: 0, HasOOMKills: true, HasAnon: true, HasFile: true},
		},
		{
			name: "v1 co-mounted controllers", tree: "cgroupv1", pid: 16,
			want: CgroupMemory{Path: "/comount", Version: 1, Limit: 32 * mib, Usage: mib, WorkingSet: mib, HasOOMKills: true, HasAnon: true, HasFile: true},
		},
		{name: "v1 no memory controller", tree: "cgroupv1", pid: 17, wantErr: "no memory cgroup"},
		{name: "v1 bad oom_kill", tree: "cgroupv1", pid: 18, wantErr: "memory.oom_control: oom_kill"},
		{
			name: "v1 no oom_control file", tree: "cgroupv1", pid: 19,
			want: CgroupMemory{Path: "/nooomfile", Version: 1, Limit: 64 * mib, Usage: mib, WorkingSet: mib, HasAnon: true, HasFile: true},
		},
		{name: "v1 empty limit", tree: "cgroupv1", pid: 20, wantErr: "memory.limit_in_bytes: empty value"},
		{
			name: "v1 root cgroup", tree: "cgroupv1", pid: 21,
			want: CgroupMemory{Path: "/", Version: 1, Usage: 900 * mib, WorkingSet: 800 * mib, OOMKills: 7, HasOOMKills: true, HasAnon: true, HasFile: true},
		},
		{name: "garbage /proc/pid/cgroup", tree: "cgroupv1", pid: 22, wantErr: "reading cgroup"},
		{name: "relative cgroup path", tree: "cgroupv1", pid: 23, wantErr: "not absolute"},
		{name: "no such pid", tree: "cgroupv1", pid: 99999, wantErr: "pid 99999"},
		{
			// Captured on a cgroup v1 host (Linux 6.18): the stand-in
			// executor (-Xmx256m, 96 MiB of heap, 32 MiB direct) and 48 MiB
			// written to /dev/shm from inside the cgroup. v1 has no kernel
			// figure in memory.stat.
			name: "v1 real executor with tmpfs data", tree: "cgroupv1", pid: 24,
			want: CgroupMemory{Path: "/capture-executor", Version: 1, Limit: 1 << 30, Usage: 216657920,
				WorkingSet: 216657920 - 122880, HasOOMKills: true,
				Anon: 164806656, File: 50458624, Shmem: 48 * mib, HasAnon: true, HasFile: true, HasShmem: true},
		},
		{
			name: "v2 container", tree: "cgroupv2", pid: 30,
			want: CgroupMemory{Path: "/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope", Version: 2,
				Limit: 512 * mib, Usage: 300 * mib, WorkingSet: 256 * mib, OOMKills: 1, HasOOMKills: true, Anon: 1, File: 2, HasAnon: true, HasFile: true,
				Peak: 450 * mib, HasPeak: true,
				Events: MemoryEvents{Max: 12, OOM: 2, OOMKill: 1, HasLow: true, HasHigh: true, HasMax: true, HasOOM: true, HasOOMKill: true}, HasEvents: true,
				Pressure: Pressure{SomeTotal: 4500000, FullTotal: 1250000, SomeAvg10: 12.5, FullAvg10: 2.25, HasSome: true, HasFull: true},
				High:     384 * mib},
		},
		{
			name: "v2 unlimited, no memory.events", tree: "cgroupv2", pid: 31,
			want: CgroupMemory{Path: "/system.slice/spark.service", Version: 2, Usage: 80 * mib, WorkingSet: 80 * mib, Anon: 1, File: 2, HasAnon: true, HasFile: true},
		},
		{name: "v2 garbage max", tree: "cgroupv2", pid: 32, wantErr: "memory.max: not an unsigned integer"},
		{name: "v2 dot-dot path", tree: "cgroupv2", pid: 33, wantErr: "leaves the cgroup namespace root"},
		{name: "v2 memory controller not enabled", tree: "cgroupv2", pid: 34, wantErr: "memory.max missing: no memory controller"},
		{name: "v2 bad memory.events", tree: "cgroupv2", pid: 35, wantErr: "memory.events: oom_kill"},
		{name: "v2 bad memory.stat", tree: "cgroupv2", pid: 36, wantErr: "memory.stat: inactive_file"},
		{name: "v2 bad memory.peak", tree: "cgroupv2", pid: 39, wantErr: "memory.peak: not an unsigned integer"},
		{name: "v2 bad memory.pressure", tree: "cgroupv2", pid: 40, wantErr: "memory.pressure: some total"},
		// The two v2 memory.stat files below are written by hand in the
		// format of Documentation/admin-guide/cgroup-v2.rst and
		// mm/memcontrol.c (key order, units, lines of a 6.8 and a 5.15
		// kernel), with figures that add up as a kernel's do (anon+shmem
		// is the anon LRUs, file-shmem the file LRUs); this host's memory
		// controller is on v1, so no v2 file could be captured here.
		{
			name: "v2 kernel 5.18+: kernel plus sock", tree: "cgroupv2", pid: 37,
			want: CgroupMemory{Path: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2.slice/cri-containerd-def.scope",
				Version: 2, Limit: 5 << 30, Usage: 2058797056, WorkingSet: 2058797056 - 178257920, HasOOMKills: true,
				Anon: 1719664640, File: 312475648, Shmem: 64 * mib, Kernel: 26529792 + 126976,
				HasAnon: true, HasFile: true, HasShmem: true, HasKernel: true,
				Events: MemoryEvents{HasLow: true, HasHigh: true, HasMax: true, HasOOM: true, HasOOMKill: true}, HasEvents: true},
		},
		{
			name: "v2 kernel before 5.18: the parts summed", tree: "cgroupv2", pid: 38,
			want: CgroupMemory{Path: "/system.slice/spark-worker.service/app-1-exec-2",
				Version: 2, Usage: 912261120, WorkingSet: 912261120 - 83107840, HasOOMKills: true,
				Anon: 771751936, File: 127926272, Shmem: 16 * mib, Kernel: 1851392 + 3665920 + 712800 + 53248 + 5861224,
				HasAnon: true, HasFile: true, HasShmem: true, HasKernel: true,
				Events: MemoryEvents{HasLow: true, HasHigh: true, HasMax: true, HasOOM: true, HasOOMKill: true}, HasEvents: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", tc.tree)
			for _, read := range cgroupReads(t, filepath.Join(dir, "proc"), filepath.Join(dir, "sys"), tc.pid) {
				got, err := read.read()
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("%s: error = %v, want containing %q (got %+v)", read.name, err, tc.wantErr, got)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", read.name, err)
				}
				// The directory beneath sysfs: a mount point, then the path.
				if !strings.HasPrefix(got.Dir, "fs/cgroup") || !strings.HasSuffix(got.Dir, strings.TrimSuffix(tc.want.Path, "/")) {
					t.Errorf("%s: Dir %q, want fs/cgroup…%s", read.name, got.Dir, tc.want.Path)
				}
				got.Dir = ""
				if got != tc.want {
					t.Errorf("%s: got  %+v\nwant %+v", read.name, got, tc.want)
				}
			}
		})
	}
}

// Callers drop fs.ErrNotExist as "the process is gone"; a missing cgroup
// for a live process is a misconfiguration and must not look like that.
func TestReadCgroupMemoryNotExistOnlyWhenGone(t *testing.T) {
	for _, tc := range []struct {
		tree     string
		pid      int
		wantGone bool
	}{
		{"cgroupv1", 99999, true}, // no such process
		{"cgroupv1", 14, false},   // cgroup directory missing under sysfs
		{"cgroupv2", 34, false},   // no memory controller files
		{"cgroupv1", 13, false},   // ".." path
	} {
		dir := filepath.Join("testdata", tc.tree)
		for _, read := range cgroupReads(t, filepath.Join(dir, "proc"), filepath.Join(dir, "sys"), tc.pid) {
			_, err := read.read()
			if err == nil {
				t.Fatalf("%s: %s pid %d: no error", read.name, tc.tree, tc.pid)
			}
			if gone := errors.Is(err, fs.ErrNotExist); gone != tc.wantGone {
				t.Errorf("%s: %s pid %d: errors.Is(ErrNotExist) = %v, want %v (%v)", read.name, tc.tree, tc.pid, gone, tc.wantGone, err)
			}
		}
	}
}

// A cgroup directory that is a symlink pointing outside sysfs must not be
// read, even though the files it leads to are valid.
func TestReadCgroupMemoryRefusesSymlinkOutOfSysfs(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	mustWrite(t, filepath.Join(outside, "memory.limit_in_bytes"), "1048576\n")
	mustWrite(t, filepath.Join(outside, "memory.usage_in_bytes"), "1024\n")
	mustWrite(t, filepath.Join(outside, "memory.stat"), "total_inactive_file 0\n")
	mustWrite(t, filepath.Join(base, "proc", "42", "cgroup"), "4:memory:/escape\n")
	mount := filepath.Join(base, "sys", "fs", "cgroup", "memory")
	if err := os.MkdirAll(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../outside", filepath.Join(mount, "escape")); err != nil {
		t.Fatal(err)
	}
	// The same layout with a symlink that stays inside sysfs is fine.
	mustWrite(t, filepath.Join(base, "sys", "real", "memory.limit_in_bytes"), "1048576\n")
	mustWrite(t, filepath.Join(base, "sys", "real", "memory.usage_in_bytes"), "1024\n")
	mustWrite(t, filepath.Join(base, "sys", "real", "memory.stat"), "total_inactive_file 0\n")
	mustWrite(t, filepath.Join(base, "proc", "43", "cgroup"), "4:memory:/inside\n")
	if err := os.Symlink("../../../real", filepath.Join(mount, "inside")); err != nil {
		t.Fatal(err)
	}

	for _, read := range cgroupReads(t, filepath.Join(base, "proc"), filepath.Join(base, "sys"), 42) {
		m, err := read.read()
		if err == nil {
			t.Fatalf("%s: read through a symlink out of sysfs: %+v", read.name, m)
		}
		if !strings.Contains(err.Error(), "escape") {
			t.Errorf("%s: error does not name the cgroup: %v", read.name, err)
		}
		t.Logf("%s: refused as expected: %v", read.name, err)
	}
	for _, read := range cgroupReads(t, filepath.Join(base, "proc"), filepath.Join(base, "sys"), 43) {
		m, err := read.read()
		if err != nil {
			t.Fatalf("%s: symlink inside sysfs: %v", read.name, err)
		}
		if m.Limit != mib || m.Usage != 1024 {
			t.Errorf("%s: got %+v", read.name, m)
		}
	}
}

// A cgroup file that is a symlink is read only when it stays in the
// cgroup's directory (cgroupfs has none; the rule is os.Root's).
func TestReadCgroupMemorySymlinkedFile(t *testing.T) {
	base := t.TempDir()
	sys := filepath.Join(base, "sys")
	for _, cg := range []string{"out", "in"} {
		dir := filepath.Join(sys, "fs", "cgroup", "memory", cg)
		mustWrite(t, filepath.Join(dir, "memory.limit_in_bytes"), "1048576\n")
		mustWrite(t, filepath.Join(dir, "memory.usage_in_bytes"), "1024\n")
		mustWrite(t, filepath.Join(dir, "stat.real"), "total_inactive_file 24\n")
	}
	mustWrite(t, filepath.Join(sys, "fs", "cgroup", "memory", "elsewhere.stat"), "total_inactive_file 0\n")
	if err := os.Symlink("../elsewhere.stat", filepath.Join(sys, "fs", "cgroup", "memory", "out", "memory.stat")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("stat.real", filepath.Join(sys, "fs", "cgroup", "memory", "in", "memory.stat")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(base, "proc", "42", "cgroup"), "4:memory:/out\n")
	mustWrite(t, filepath.Join(base, "proc", "43", "cgroup"), "4:memory:/in\n")
	for _, read := range cgroupReads(t, filepath.Join(base, "proc"), sys, 42) {
		if m, err := read.read(); err == nil || !strings.Contains(err.Error(), "memory.stat") {
			t.Errorf("%s: memory.stat linked out of its directory: %+v, %v; want an error naming it", read.name, m, err)
		}
	}
	for _, read := range cgroupReads(t, filepath.Join(base, "proc"), sys, 43) {
		if m, err := read.read(); err != nil || m.WorkingSet != 1000 {
			t.Errorf("%s: memory.stat linked inside its directory: %+v, %v; want a working set of 1000", read.name, m, err)
		}
	}
}

// cgroupRead is one way of reading a process's memory cgroup.
type cgroupRead struct {
	name string
	read func() (CgroupMemory, error)
}

// cgroupReads returns the ways of reading pid's memory cgroup that must
// agree: ReadCgroupMemory (nothing kept), and a CgroupReader's first read and a later
// scan's (from the directory it kept, when it kept one) over the
// /proc/<pid>/cgroup contents a caller holds. Without the file (a pid
// that is gone) a caller has nothing to give a CgroupReader.
func cgroupReads(t *testing.T, procPath, sysfsPath string, pid int) []cgroupRead {
	reads := []cgroupRead{{"ReadCgroupMemory", func() (CgroupMemory, error) { return ReadCgroupMemory(procPath, sysfsPath, pid) }}}
	file, err := os.ReadFile(filepath.Join(procPath, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return reads
	}
	r := NewCgroupReader(procPath, sysfsPath)
	t.Cleanup(func() { _ = r.Close() })
	read := func() (CgroupMemory, error) {
		defer r.EndScan(nil)
		return r.Read(pid, string(file))
	}
	return append(reads, cgroupRead{"CgroupReader", read}, cgroupRead{"CgroupReader, next scan", read})
}

func mustWrite(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
