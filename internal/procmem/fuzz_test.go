package procmem

import (
	"bufio"
	"errors"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
)

// Whatever /proc/<pid>/cgroup says, an accepted path stays below the mount.
func FuzzCleanCgroupPath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/../x", "/a/../..", "a", "//a//", "/a/./../b", "/..a/b..",
		"/0/./0/0", "/\x00", "\n", "\"\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := cleanCgroupPath(p)
		if err != nil {
			return
		}
		joined := path.Join("fs/cgroup/memory", rel)
		if joined != "fs/cgroup/memory" && !strings.HasPrefix(joined, "fs/cgroup/memory/") {
			t.Fatalf("%q → %q escapes the mount (%q)", p, rel, joined)
		}
		if strings.HasPrefix(rel, "/") {
			t.Fatalf("%q → %q is absolute", p, rel)
		}
	})
}

// Parsers of cgroup files return a value or an error, never panic, and
// parseMemoryStat agrees with its plain reference (checkMemoryStat).
func FuzzParseKeyedUint(f *testing.F) {
	for _, fx := range []string{
		"cgroupv1/sys/fs/cgroup/memory/capture-executor/memory.stat",
		"cgroupv2/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2.slice/cri-containerd-def.scope/memory.stat",
		"cgroupv2/sys/fs/cgroup/system.slice/spark-worker.service/app-1-exec-2/memory.stat",
	} {
		data, err := os.ReadFile(path.Join("testdata", fx))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("total_rss 1\nrss 2\ntotal_cache 3\ncache x\ntotal_shmem 1\ntotal_inactive_file 2\n"))
	f.Add([]byte("slab x\nkernel 4\nsock 1\nanon 1\nanon 2\n"))
	f.Add([]byte("kernel_stack 18446744073709551615\nslab 1\nfile 2\r\n"))
	f.Add([]byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"))
	f.Add([]byte("oom_kill"))
	f.Add([]byte("oom_kill  \x00"))
	f.Add([]byte("max\n"))
	f.Add([]byte("9223372036854771712\n"))
	for _, sep := range []string{"\t", "\v", "\f", "  ", "\n"} { // white space that is not a plain space
		f.Add([]byte("oom_kill" + sep + "1"))
	}
	f.Add([]byte(""))
	f.Add([]byte("oom_kill 1\r\n"))
	f.Add([]byte("oom_kill 12345678901234567890\n"))
	f.Add([]byte("oom_kill 99999999999999999999\n"))
	f.Add([]byte("oom_kill +1\n"))
	f.Add([]byte(strings.Repeat("x", bufio.MaxScanTokenSize) + "\noom_kill 1\n"))
	f.Add([]byte(strings.Repeat("x", bufio.MaxScanTokenSize-1) + "\noom_kill 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, found, err := parseKeyedUint(data, "oom_kill")
		if !found && (v != 0 || err != nil) && !errors.Is(err, bufio.ErrTooLong) {
			t.Fatalf("absent key gave %d, %v", v, err)
		}
		if wv, wfound, werr := scannerKeyedUint(data, "oom_kill"); v != wv || found != wfound || (err == nil) != (werr == nil) {
			t.Fatalf("%q: got %d, %v, %v; bufio.Scanner's split gives %d, %v, %v", truncate(string(data), 80), v, found, err, wv, wfound, werr)
		}
		_, _ = parseV1Limit(data)
		_, _ = parseV2Max(data)
		checkMemoryStat(t, data, false)
		checkMemoryStat(t, data, true)
	})
}

// parseStatusHWM returns a value or an error, never panics, and agrees with
// a plain reading of the line.
func FuzzParseStatusHWM(f *testing.F) {
	f.Add([]byte("Name:\tjava\nVmHWM:\t  102400 kB\nVmRSS:\t 51200 kB\n"))
	f.Add([]byte("VmHWM:\t 18014398509481983 kB"))
	f.Add([]byte("VmHWM: 1 kB\nVmHWM: 2 kB\n"))
	f.Add([]byte("VmHWM:\t+1 kB\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseStatusHWM(data)
		var want uint64
		found := false
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				fields := strings.Fields(rest)
				if len(fields) == 2 && fields[1] == "kB" {
					if v, perr := strconv.ParseUint(fields[0], 10, 64); perr == nil && v <= math.MaxUint64/1024 {
						want, found = v*1024, true
					}
				}
				break
			}
		}
		if found != (err == nil) || got != want {
			t.Fatalf("%q: %d, %v; a plain reading: %d, found %v", data, got, err, want, found)
		}
	})
}
