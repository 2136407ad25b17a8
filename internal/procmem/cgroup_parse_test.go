package procmem

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseSingleUint(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{in: "268435456\n", want: 268435456},
		{in: "0", want: 0},
		{in: "  42 \n", want: 42},
		{in: "18446744073709551615\n", want: 18446744073709551615},
		{in: "", wantErr: "empty"},
		{in: "\n", wantErr: "empty"},
		{in: "-1\n", wantErr: "not an unsigned integer"},
		{in: "12 MiB\n", wantErr: "not an unsigned integer"},
		{in: "18446744073709551616", wantErr: "not an unsigned integer"},
		{in: strings.Repeat("x", 1000), wantErr: "…"},
	} {
		got, err := parseSingleUint([]byte(tc.in))
		checkResult(t, tc.in, got, err, tc.want, tc.wantErr)
	}
}

func TestParseV1Limit(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{in: "268435456\n", want: 256 << 20},
		{in: "9223372036854771712\n", want: 0},                   // PAGE_COUNTER_MAX, 4 KiB pages
		{in: "9223372036854710272\n", want: 0},                   // 64 KiB pages
		{in: "9223372036854775807\n", want: 0},                   // 2^63-1 unrounded
		{in: "4611686018427387903\n", want: 4611686018427387903}, // just below 2^62
		{in: "4611686018427387904\n", want: 0},
		{in: "max\n", wantErr: "not an unsigned integer"},
		{in: "", wantErr: "empty"},
	} {
		got, err := parseV1Limit([]byte(tc.in))
		checkResult(t, tc.in, got, err, tc.want, tc.wantErr)
	}
}

func TestParseV2Max(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{in: "max\n", want: 0},
		{in: "536870912\n", want: 512 << 20},
		{in: "12abc\n", wantErr: "not an unsigned integer"},
		{in: "maximum\n", wantErr: "not an unsigned integer"},
		{in: "", wantErr: "empty"},
	} {
		got, err := parseV2Max([]byte(tc.in))
		checkResult(t, tc.in, got, err, tc.want, tc.wantErr)
	}
}

func TestParseKeyedUint(t *testing.T) {
	const oomControl = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"
	const v1Stat = "cache 4096\ninactive_file 1\ntotal_inactive_file 10485760\n"
	for _, tc := range []struct {
		name, in, key string
		want          uint64
		wantFound     bool
		wantErr       string
	}{
		{name: "oom_control", in: oomControl, key: "oom_kill", want: 3, wantFound: true},
		{name: "key is not a prefix match", in: oomControl, key: "oom_kill_disable", want: 0, wantFound: true},
		{name: "pre-4.13 oom_control", in: "oom_kill_disable 0\nunder_oom 0\n", key: "oom_kill"},
		{name: "v1 hierarchical", in: v1Stat, key: "total_inactive_file", want: 10 << 20, wantFound: true},
		{name: "v1 local", in: v1Stat, key: "inactive_file", want: 1, wantFound: true},
		{name: "empty file", in: "", key: "oom_kill"},
		{name: "no trailing newline", in: "oom_kill 9", key: "oom_kill", want: 9, wantFound: true},
		{name: "garbage lines around", in: "###\n\nfoo\noom_kill 2\n", key: "oom_kill", want: 2, wantFound: true},
		{name: "negative", in: "oom_kill -1\n", key: "oom_kill", wantFound: true, wantErr: "not an unsigned integer"},
		{name: "words", in: "oom_kill lots\n", key: "oom_kill", wantFound: true, wantErr: "oom_kill"},
		{name: "missing value", in: "oom_kill \n", key: "oom_kill", wantFound: true, wantErr: "not an unsigned integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := parseKeyedUint([]byte(tc.in), tc.key)
			if found != tc.wantFound {
				t.Errorf("found = %v, want %v", found, tc.wantFound)
			}
			checkResult(t, tc.in, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestWorkingSet(t *testing.T) {
	for _, tc := range []struct{ usage, inactive, want uint64 }{
		{100, 10, 90},
		{100, 100, 0},
		{10, 20, 0}, // inactive_file is hierarchical and racy: floor at 0 as cAdvisor does
		{0, 0, 0},
	} {
		if got := workingSet(tc.usage, tc.inactive); got != tc.want {
			t.Errorf("workingSet(%d, %d) = %d, want %d", tc.usage, tc.inactive, got, tc.want)
		}
	}
}

func TestCleanCgroupPath(t *testing.T) {
	for _, tc := range []struct {
		in, want, wantErr string
	}{
		{in: "/", want: "."},
		{in: "/kubepods/burstable/pod1/abc", want: "kubepods/burstable/pod1/abc"},
		{in: "/system.slice//spark.service/", want: "system.slice/spark.service"},
		{in: "/a/./b", want: "a/b"},
		{in: "/../../kubepods/x", wantErr: "host cgroup namespace"},
		{in: "/a/../../etc", wantErr: "leaves the cgroup namespace root"},
		{in: "/a/..", wantErr: "leaves"},
		{in: "relative/path", wantErr: "not absolute"},
		{in: "", wantErr: "not absolute"},
		{in: "/a\x00b", wantErr: "NUL"},
		{in: "/" + strings.Repeat("a", 5000), wantErr: "longer than"},
		{in: "/a..b/..c", want: "a..b/..c"}, // dots inside names are fine
	} {
		got, err := cleanCgroupPath(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("cleanCgroupPath(%q) error = %v, want containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("cleanCgroupPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func checkResult(t *testing.T, in string, got uint64, err error, want uint64, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("input %q: error = %v, want containing %q", truncate(in, 40), err, wantErr)
		}
		return
	}
	if err != nil {
		t.Errorf("input %q: unexpected error %v", truncate(in, 40), err)
		return
	}
	if got != want {
		t.Errorf("input %q: got %d, want %d", truncate(in, 40), got, want)
	}
}

func TestParseMemoryStat(t *testing.T) {
	const v1Totals = "cache 10\nrss 20\nshmem 5\ninactive_file 1\ntotal_cache 100\ntotal_rss 200\ntotal_shmem 50\ntotal_inactive_file 30\n"
	const v2New = "anon 200\nfile 100\nkernel 40\nkernel_stack 8\npagetables 8\npercpu 4\nsock 3\nvmalloc 1\nshmem 50\ninactive_file 30\nslab 16\n"
	const v2Old = "anon 200\nfile 100\nkernel_stack 8\npagetables 8\npercpu 4\nsock 3\nshmem 50\ninactive_file 30\nslab_reclaimable 9\nslab 16\n"
	for _, tc := range []struct {
		name, in string
		v2       bool
		want     memoryStat
		wantErr  string
	}{
		{name: "v1 hierarchical totals win", in: v1Totals,
			want: memoryStat{inactiveFile: 30, anon: 200, file: 100, shmem: 50, hasAnon: true, hasFile: true, hasShmem: true}},
		{name: "v1 own figures without totals", in: "cache 10\nrss 20\nshmem 5\ninactive_file 1\n",
			want: memoryStat{anon: 20, file: 10, shmem: 5, hasAnon: true, hasFile: true, hasShmem: true}},
		{name: "v1 before shmem was counted", in: "cache 10\nrss 20\ntotal_cache 100\ntotal_rss 200\n",
			want: memoryStat{anon: 200, file: 100, hasAnon: true, hasFile: true}},
		{name: "v1 has no kernel figure", in: v1Totals + "kernel 7\nkernel_stack 8\nslab 9\nsock 1\n",
			want: memoryStat{inactiveFile: 30, anon: 200, file: 100, shmem: 50, hasAnon: true, hasFile: true, hasShmem: true}},
		{name: "v1 keys mean nothing in v2", in: v1Totals, v2: true,
			want: memoryStat{inactiveFile: 1, shmem: 5, hasShmem: true}},
		{name: "v2 5.18+: kernel plus sock, its parts ignored", in: v2New, v2: true,
			want: memoryStat{inactiveFile: 30, anon: 200, file: 100, shmem: 50, kernel: 43, hasAnon: true, hasFile: true, hasShmem: true, hasKernel: true}},
		{name: "v2 before 5.18: the parts present", in: v2Old, v2: true,
			want: memoryStat{inactiveFile: 30, anon: 200, file: 100, shmem: 50, kernel: 8 + 8 + 4 + 3 + 16, hasAnon: true, hasFile: true, hasShmem: true, hasKernel: true}},
		{name: "v2 one part is enough", in: "anon 1\nslab 7\n", v2: true,
			want: memoryStat{anon: 1, kernel: 7, hasAnon: true, hasKernel: true}},
		{name: "v2 without any kernel key", in: "anon 1\nfile 2\nshmem 0\ninactive_file 1\n", v2: true,
			want: memoryStat{inactiveFile: 1, anon: 1, file: 2, hasAnon: true, hasFile: true, hasShmem: true}},
		{name: "v2 kernel without sock", in: "kernel 9\n", v2: true, want: memoryStat{kernel: 9, hasKernel: true}},
		{name: "v2 kernel beside its parts", in: v2Old + "kernel 1000\n", v2: true,
			want: memoryStat{inactiveFile: 30, anon: 200, file: 100, shmem: 50, kernel: 1000 + 3, hasAnon: true, hasFile: true, hasShmem: true, hasKernel: true}},
		{name: "empty", in: "", v2: true},
		{name: "first line of a key counts", in: "anon 1\nanon x\nfile 2\nfile 3\n", v2: true,
			want: memoryStat{anon: 1, file: 2, hasAnon: true, hasFile: true}},
		{name: "CRLF and padding", in: "anon  7 \r\nkernel 2\r\n", v2: true,
			want: memoryStat{anon: 7, kernel: 2, hasAnon: true, hasKernel: true}},
		{name: "a sum cannot wrap", in: "slab 18446744073709551615\nsock 2\n", v2: true,
			want: memoryStat{kernel: math.MaxUint64, hasKernel: true}},
		{name: "bad value of a used key", in: "total_rss -1\n", wantErr: `total_rss: not an unsigned integer: "-1"`},
		{name: "bad working-set key", in: "inactive_file x\n", v2: true, wantErr: "inactive_file: not an unsigned integer"},
		{name: "bad kernel part", in: "percpu 1e3\n", v2: true, wantErr: "percpu: not an unsigned integer"},
		{name: "bad fallback, unused", in: "rss x\ntotal_rss 4\n", want: memoryStat{anon: 4, hasAnon: true}},
		{name: "bad part, unused beside kernel", in: "slab x\nkernel 4\n", v2: true, want: memoryStat{kernel: 4, hasKernel: true}},
		{name: "bad value, unused key", in: "pgfault x\n", v2: true},
		{name: "overflow", in: "anon 18446744073709551616\n", v2: true, wantErr: "anon: not an unsigned integer"},
		{name: "long bad value is cut", in: "anon " + strings.Repeat("9", 200) + "\n", v2: true, wantErr: "…"},
		{name: "line too long before the keys", in: strings.Repeat("x", maxCgroupFileLine+1) + "\nanon 1\n", v2: true, wantErr: "token too long"},
		{name: "line too long after them", in: v1Totals + strings.Repeat("x", maxCgroupFileLine+1) + "\n", wantErr: "token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMemoryStat([]byte(tc.in), tc.v2)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want containing %q (got %+v)", err, tc.wantErr, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

// referenceMemoryStat is parseMemoryStat's rule written plainly: lines
// read with bufio.Scanner (up to one too long, reported in tooLong), the
// first of each key kept, the result computed from those.
func referenceMemoryStat(data []byte, v2 bool) (s memoryStat, tooLong bool, err error) {
	first := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if _, dup := first[name]; ok && !dup {
			first[name] = val
		}
	}
	tooLong = sc.Err() != nil
	get := func(keys ...string) (uint64, bool) {
		for _, k := range keys {
			if v, ok := first[k]; ok {
				n, perr := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				if perr != nil && err == nil {
					err = perr
				}
				return n, true
			}
		}
		return 0, false
	}
	if !v2 {
		s.inactiveFile, _ = get("total_inactive_file")
		s.anon, s.hasAnon = get("total_rss", "rss")
		s.file, s.hasFile = get("total_cache", "cache")
		s.shmem, s.hasShmem = get("total_shmem", "shmem")
	} else {
		s.inactiveFile, _ = get("inactive_file")
		s.anon, s.hasAnon = get("anon")
		s.file, s.hasFile = get("file")
		s.shmem, s.hasShmem = get("shmem")
		parts := []string{"kernel", "sock"}
		if _, ok := first["kernel"]; !ok {
			parts = []string{"kernel_stack", "pagetables", "sec_pagetables", "percpu", "sock", "vmalloc", "slab"}
		}
		for _, p := range parts {
			if v, ok := get(p); ok {
				s.kernel, s.hasKernel = addSaturating(s.kernel, v), true
			}
		}
	}
	if err != nil {
		return memoryStat{}, tooLong, err
	}
	return s, tooLong, nil
}

// checkMemoryStat holds parseMemoryStat to referenceMemoryStat: a line too
// long where both stop reading is an error of both, a bad value of a used
// key too, and otherwise they agree.
func checkMemoryStat(t *testing.T, data []byte, v2 bool) {
	got, err := parseMemoryStat(data, v2)
	want, tooLong, werr := referenceMemoryStat(data, v2)
	switch {
	case errors.Is(err, bufio.ErrTooLong) != tooLong:
		t.Fatalf("v2=%v %q: %v; the reference says a line is too long: %v", v2, truncate(string(data), 80), err, tooLong)
	case tooLong:
	case (err == nil) != (werr == nil) || got != want:
		t.Fatalf("v2=%v %q: got %+v, %v; the reference gives %+v, %v", v2, truncate(string(data), 80), got, err, want, werr)
	}
}

func TestParseMemoryStatFixtures(t *testing.T) {
	n := 0
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "memory.stat" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		checkMemoryStat(t, data, strings.HasPrefix(path, "testdata/cgroupv2/"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("found only %d memory.stat fixtures", n)
	}
}
