package procmem

import (
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
