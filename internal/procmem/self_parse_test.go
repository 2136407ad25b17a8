package procmem

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

func TestParseSelfStat(t *testing.T) {
	for _, tc := range []struct {
		name    string
		line    string
		want    SelfStat
		wantErr string
	}{
		{
			name: "plain",
			line: statLine(42, "executor_export", map[int]string{14: "250", 15: "75", 22: "7705902", 23: "1262010368", 24: "7001"}),
			want: SelfStat{UTime: 250, STime: 75, StartTicks: 7705902, VSize: 1262010368, RSSPages: 7001},
		},
		{
			name: "this kernel's line",
			line: "14666 (cat) R 14657 14657 14109 0 -1 4194304 100 0 0 0 3 4 0 0 20 0 1 0 7705902 3133440 394 18446744073709551615 94594635517952 94594635537833 140732202962608 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94594635553840 94594635555456 94595106062336 140732202969768 140732202969788 140732202969788 140732202971115 0\n",
			want: SelfStat{UTime: 3, STime: 4, StartTicks: 7705902, VSize: 3133440, RSSPages: 394},
		},
		{
			name: "comm with spaces, parentheses and a newline",
			line: statLine(43, "a) (b\nc 1 2", map[int]string{14: "1", 15: "2", 22: "3", 23: "4", 24: "5"}),
			want: SelfStat{UTime: 1, STime: 2, StartTicks: 3, VSize: 4, RSSPages: 5},
		},
		{
			name: "old kernel: fields end at rss, no newline",
			line: "5 (old) S 1 5 5 0 -1 4194560 100 0 0 0 11 12 0 0 20 0 1 0 77 1000 33",
			want: SelfStat{UTime: 11, STime: 12, StartTicks: 77, VSize: 1000, RSSPages: 33},
		},
		{
			name: "runs of spaces",
			line: "5 (x)  S 1 5 5 0 -1 0 0 0 0 0  11   12 0 0 20 0 1 0 77 1000 33 \n",
			want: SelfStat{UTime: 11, STime: 12, StartTicks: 77, VSize: 1000, RSSPages: 33},
		},
		{
			name: "largest values",
			line: statLine(5, "x", map[int]string{14: "18446744073709551615", 23: "18446744073709551615", 24: "-9223372036854775808"}),
			want: SelfStat{UTime: math.MaxUint64, STime: 1015, StartTicks: 1022, VSize: math.MaxUint64, RSSPages: math.MinInt64},
		},
		{name: "empty", line: "", wantErr: "no (comm)"},
		{name: "no closing parenthesis", line: "5 (java S 1 2 3", wantErr: "no (comm)"},
		{name: "cut before rss", line: "5 (old) S 1 5 5 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 77 1000\n", wantErr: "21 fields after the command name, want at least 22"},
		{name: "fields after a newline do not count", line: "5 (old) S 1 5 5 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 77 1000\n33\n", wantErr: "want at least 22"},
		{name: "tab is no separator", line: "5 (old) S 1 5 5 0 -1 4194560 100 0 0 0 1\t2 0 0 20 0 1 0 77 1000 33 0\n", wantErr: "utime"},
		{name: "garbage stime", line: statLine(5, "x", map[int]string{15: "2x"}), wantErr: `stime "2x"`},
		{name: "negative utime", line: statLine(5, "x", map[int]string{14: "-1"}), wantErr: "utime"},
		{name: "vsize beyond 64 bits", line: statLine(5, "x", map[int]string{23: "18446744073709551616"}), wantErr: "vsize"},
		{name: "starttime with a plus", line: statLine(5, "x", map[int]string{22: "+1"}), wantErr: "starttime"},
		{name: "rss beyond int64", line: statLine(5, "x", map[int]string{24: "9223372036854775808"}), wantErr: "rss"},
		{name: "lone minus rss", line: statLine(5, "x", map[int]string{24: "-"}), wantErr: "rss"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParse(t, ParseSelfStat, tc.line, tc.wantErr, tc.want) })
	}
}

// procfsAt writes files (paths relative to the root) into a directory
// for procfs to read: it parses only what it reads itself.
func procfsAt(t *testing.T, files map[string][]byte) procfs.FS {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// netstatByProcfs is what client_golang makes of procfs's reading of data.
func netstatByProcfs(t *testing.T, data []byte) (in, out float64, err error) {
	t.Helper()
	p, err := procfsAt(t, map[string][]byte{"7/net/netstat": data}).Proc(7)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := p.Netstat()
	if err != nil {
		return 0, 0, err
	}
	if ref.InOctets != nil {
		in = *ref.InOctets
	}
	if ref.OutOctets != nil {
		out = *ref.OutOctets
	}
	return in, out, nil
}

// netstatOld is a 4.x kernel's file: no MPTcpExt, IpExt without the ECN
// counters.
const netstatOld = `TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed EmbryonicRsts PruneCalled
TcpExt: 0 0 0 2 0
IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets InMcastOctets OutMcastOctets InBcastOctets OutBcastOctets InCsumErrors
IpExt: 0 0 3 0 12 0 123456789 98765 0 0 2016 0 0
`

func TestParseNetstatOctets(t *testing.T) {
	live, err := os.ReadFile("testdata/netstat/linux-6.18")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		data     string
		in, out  uint64
		wantErr  string
		noProcfs bool // procfs answers otherwise (see the case)
	}{
		{name: "linux 6.18", data: string(live), in: 39375945836, out: 38703422993},
		{name: "linux 4.x", data: netstatOld, in: 123456789, out: 98765},
		{name: "no newline at the end", data: strings.TrimSuffix(netstatOld, "\n"), in: 123456789, out: 98765},
		{name: "empty", data: ""},
		{name: "no IpExt", data: "TcpExt: A B\nTcpExt: 1 2\n"},
		{name: "IpExt without OutOctets", data: "IpExt: InNoRoutes InOctets\nIpExt: 0 77\n", in: 77},
		{name: "IpExt first, octets last", data: "IpExt: OutOctets InOctets\nIpExt: 5 6\nTcpExt: A\nTcpExt: 1\n", in: 6, out: 5},
		{name: "largest counter", data: "IpExt: InOctets OutOctets\nIpExt: 18446744073709551615 0\n", in: math.MaxUint64},
		{name: "a name line without values", data: netstatOld + "MPTcpExt: A B\n", wantErr: `"MPTcpExt:" without a line of values`},
		{name: "sections out of step", data: "TcpExt: A B\nIpExt: InOctets OutOctets\nIpExt: 1 2\n", wantErr: `names of "TcpExt:" followed by values of "IpExt:"`},
		{name: "fewer values than names", data: "IpExt: InOctets OutOctets\nIpExt: 1\n", wantErr: `"IpExt:" has 2 names and 1 values`},
		{name: "fewer values elsewhere", data: "TcpExt: A B\nTcpExt: 1\n" + netstatOld, wantErr: `"TcpExt:" has 2 names and 1 values`},
		{name: "bad InOctets", data: "IpExt: InOctets OutOctets\nIpExt: 1e3 2\n", wantErr: `IpExt InOctets "1e3"`},
		{name: "negative OutOctets", data: "IpExt: InOctets OutOctets\nIpExt: 1 -2\n", wantErr: `IpExt OutOctets "-2"`},
		// procfs parses every value as a float and fails on any: only the
		// two the metrics use are parsed here.
		{name: "bad value elsewhere", data: "TcpExt: A B\nTcpExt: 1 x\n" + netstatOld, in: 123456789, out: 98765, noProcfs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out, err := ParseNetstatOctets([]byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in != tc.in || out != tc.out {
				t.Errorf("got in %d out %d, want %d %d", in, out, tc.in, tc.out)
			}
			if tc.noProcfs {
				return
			}
			refIn, refOut, err := netstatByProcfs(t, []byte(tc.data))
			if err != nil {
				t.Fatalf("procfs: %v", err)
			}
			if float64(in) != refIn || float64(out) != refOut {
				t.Errorf("got in %d out %d, procfs %v %v", in, out, refIn, refOut)
			}
		})
	}
}

// This process's netstat as the kernel writes it now, the same bytes given
// to both, reads as procfs reads it.
func TestParseNetstatOctetsAgreesWithProcfsLive(t *testing.T) {
	data, err := os.ReadFile("/proc/self/net/netstat")
	if err != nil {
		t.Fatal(err) // every Linux with networking has it; CI must not pass without it
	}
	in, out, err := ParseNetstatOctets(data)
	if err != nil {
		t.Fatal(err)
	}
	refIn, refOut, err := netstatByProcfs(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if float64(in) != refIn || float64(out) != refOut {
		t.Fatalf("got in %d out %d, procfs %v %v", in, out, refIn, refOut)
	}
}

// The parsers are read on every scrape of the exporter's own metrics.
func TestParseSelfAllocatesNothing(t *testing.T) {
	netstat, err := os.ReadFile("testdata/netstat/linux-6.18")
	if err != nil {
		t.Fatal(err)
	}
	stat := []byte(statLine(42, "executor_export", nil))
	if n := testing.AllocsPerRun(100, func() {
		if _, err := ParseSelfStat(stat); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ParseNetstatOctets(netstat); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per parse of both", n)
	}
}

func BenchmarkParseSelf(b *testing.B) {
	netstat, err := os.ReadFile("testdata/netstat/linux-6.18")
	if err != nil {
		b.Fatal(err)
	}
	stat := []byte(statLine(42, "executor_export", nil))
	b.Run("stat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseSelfStat(stat); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("netstat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ParseNetstatOctets(netstat); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// refSelfStat is ParseSelfStat the plain way, for the fuzz target.
func refSelfStat(data []byte) (SelfStat, bool) {
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return SelfStat{}, false
	}
	line, _, _ := strings.Cut(s[closing+1:], "\n")
	var fields []string
	for _, f := range strings.Split(line, " ") {
		if f != "" {
			fields = append(fields, f)
		}
	}
	if len(fields) < statRSS+1 {
		return SelfStat{}, false
	}
	var st SelfStat
	for _, u := range []struct {
		dst *uint64
		i   int
	}{{&st.UTime, statUTime}, {&st.STime, statSTime}, {&st.StartTicks, statStartTime}, {&st.VSize, statVSize}} {
		v, err := strconv.ParseUint(fields[u.i], 10, 64)
		if err != nil {
			return SelfStat{}, false
		}
		*u.dst = v
	}
	rss := fields[statRSS]
	if strings.HasPrefix(rss, "+") {
		return SelfStat{}, false
	}
	v, err := strconv.ParseInt(rss, 10, 64)
	if err != nil {
		return SelfStat{}, false
	}
	st.RSSPages = v
	return st, true
}

// refNetstatOctets is ParseNetstatOctets the plain way, for the fuzz
// target.
func refNetstatOctets(data []byte) (in, out uint64, ok bool) {
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines)%2 != 0 {
		return 0, 0, false
	}
	for i := 0; i < len(lines); i += 2 {
		names, values := strings.Split(lines[i], " "), strings.Split(lines[i+1], " ")
		if names[0] != values[0] || len(names) != len(values) {
			return 0, 0, false
		}
		if names[0] != "IpExt:" {
			continue
		}
		for j, name := range names[1:] {
			if name != "InOctets" && name != "OutOctets" {
				continue
			}
			v, err := strconv.ParseUint(values[j+1], 10, 64)
			if err != nil {
				return 0, 0, false
			}
			if name == "InOctets" {
				in = v
			} else {
				out = v
			}
		}
	}
	return in, out, true
}
