package procmem

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// A stat line with every field after the command name numbered by its
// proc(5) position, so a test can see which field was taken.
func statLine(pid int, comm string, fields map[int]string) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(pid) + " (" + comm + ")")
	for n := 3; n <= 52; n++ {
		v, ok := fields[n]
		if !ok {
			v = strconv.Itoa(1000 + n)
		}
		b.WriteString(" " + v)
	}
	b.WriteString("\n")
	return b.String()
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name    string
		line    string
		want    procStat
		wantErr string
	}{
		{
			name: "plain", line: statLine(42, "java", map[int]string{3: "S", 4: "7", 22: "123456", 24: "2048"}),
			want: procStat{PPID: 7, Comm: "java", RSSPages: 2048, VSize: 1023, StartTicks: 123456, Flags: 1009},
		},
		{
			name: "comm with spaces and parentheses", line: statLine(43, "a) (b c", map[int]string{3: "R", 4: "1", 22: "5", 24: "6"}),
			want: procStat{PPID: 1, Comm: "a) (b c", RSSPages: 6, VSize: 1023, StartTicks: 5, Flags: 1009},
		},
		{
			name: "kernel thread: no memory, parent kthreadd", line: statLine(9, "kworker/0:1", map[int]string{3: "I", 4: "2", 9: "69238880", 22: "10", 24: "0"}),
			want: procStat{PPID: 2, Comm: "kworker/0:1", VSize: 1023, StartTicks: 10, Flags: 69238880},
		},
		{
			name: "init: parent 0, empty comm", line: statLine(1, "", map[int]string{4: "0", 22: "1", 24: "100"}),
			want: procStat{PPID: 0, Comm: "", RSSPages: 100, VSize: 1023, StartTicks: 1, Flags: 1009},
		},
		{
			name: "negative rss reads as 0", line: statLine(5, "x", map[int]string{4: "1", 22: "1", 24: "-3"}),
			want: procStat{PPID: 1, Comm: "x", VSize: 1023, StartTicks: 1, Flags: 1009},
		},
		{
			name: "old kernel: only up to rss and a few more",
			line: "5 (old) S 1 5 5 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 77 1000 33\n",
			want: procStat{PPID: 1, Comm: "old", RSSPages: 33, VSize: 1000, StartTicks: 77, Flags: 4194560},
		},
		{name: "no newline", line: "5 (x) S 1 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 1000 33",
			want: procStat{PPID: 1, Comm: "x", RSSPages: 33, VSize: 1000, StartTicks: 77}},
		{name: "garbage flags", line: statLine(5, "x", map[int]string{4: "1", 9: "0x40"}), wantErr: "flags"},
		{name: "empty", line: "", wantErr: "no (comm)"},
		{name: "no closing parenthesis", line: "5 (java S 1 2 3", wantErr: "no (comm)"},
		{name: "parentheses reversed", line: "5 )java( S 1", wantErr: "no (comm)"},
		{name: "cut after ppid", line: "5 (java) S 1 5 5\n", wantErr: "fields after the command name"},
		{name: "cut before rss", line: "5 (old) S 1 5 5 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 77 1000\n", wantErr: "fields after the command name"},
		{name: "garbage ppid", line: statLine(5, "x", map[int]string{4: "one"}), wantErr: "ppid"},
		{name: "ppid beyond int32", line: statLine(5, "x", map[int]string{4: "4294967296"}), wantErr: "ppid"},
		{name: "negative start time", line: statLine(5, "x", map[int]string{4: "1", 22: "-1"}), wantErr: "starttime"},
		{name: "start time overflows", line: statLine(5, "x", map[int]string{4: "1", 22: "9999999999999999999"}), wantErr: "starttime"},
		{name: "start time too long", line: statLine(5, "x", map[int]string{4: "1", 22: "99999999999999999999"}), wantErr: "starttime"},
		{name: "garbage vsize", line: statLine(5, "x", map[int]string{4: "1", 22: "1", 23: "12k"}), wantErr: "vsize"},
		{name: "negative vsize", line: statLine(5, "x", map[int]string{4: "1", 22: "1", 23: "-1"}), wantErr: "vsize"},
		{name: "garbage rss", line: statLine(5, "x", map[int]string{4: "1", 22: "1", 24: "1x"}), wantErr: "rss"},
		{name: "lone minus", line: statLine(5, "x", map[int]string{4: "-"}), wantErr: "ppid"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParse(t, parseStat, tc.line, tc.wantErr, tc.want) })
	}
}

// Every live process's stat, the same bytes given to procfs and to the
// parser, parses as procfs parses it: the fields the process table keeps.
func TestParseStatAgreesWithProcfs(t *testing.T) {
	rfs, files := liveProcFiles(t, "stat")
	compared := 0
	for pid, data := range files {
		p, err := rfs.Proc(pid)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.Stat()
		if err != nil {
			t.Fatalf("pid %d: procfs: %v", pid, err)
		}
		got, err := parseStat(data)
		if err != nil {
			t.Errorf("pid %d: %v (%q)", pid, err, data)
			continue
		}
		if got.PPID != want.PPID || got.Comm != want.Comm || got.StartTicks != want.Starttime ||
			got.Flags != uint64(want.Flags) || got.RSSPages != uint64(max(want.RSS, 0)) || got.VSize != uint64(want.VSize) {
			t.Errorf("pid %d: got %+v, procfs ppid %d comm %q start %d flags %d rss %d", pid, got,
				want.PPID, want.Comm, want.Starttime, want.Flags, want.RSS)
		}
		compared++
	}
	if compared < 2 {
		t.Fatalf("compared %d processes", compared)
	}
}

// Whatever the stat file holds: a result or an error, never a panic, and
// an accepted line's command name is what stood between its parentheses.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statLine(42, "java", map[int]string{4: "7", 22: "123456", 24: "2048"})))
	f.Add([]byte(statLine(43, "a) (b", nil)))
	f.Add([]byte("5 (old) S 1 5 5 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 77 1000 33\n"))
	f.Add([]byte("5 (x) S -"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseStat(data)
		if err != nil {
			return
		}
		if !strings.Contains(string(data), "("+s.Comm+")") {
			t.Fatalf("comm %q not between parentheses in %q", s.Comm, data)
		}
		if s.PPID < 0 {
			t.Fatalf("negative ppid %d from %q", s.PPID, data)
		}
	})
}

// checkParse runs one case of a parser's table: the error it must give
// (a part of its message), or the value.
func checkParse[T comparable](t *testing.T, parse func([]byte) (T, error), line, wantErr string, want T) {
	t.Helper()
	got, err := parse([]byte(line))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error = %v, want containing %q (got %+v)", err, wantErr, got)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// liveProcFiles copies /proc/<pid>/<name> of every live process, and
// returns a procfs over the copies with their bytes by pid: a fast path's
// parser and procfs's then read the same bytes.
func liveProcFiles(t *testing.T, name string) (procfs.FS, map[int][]byte) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	byPath, byPID := map[string][]byte{}, map[int][]byte{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if data, err := os.ReadFile("/proc/" + e.Name() + "/" + name); err == nil {
			byPath[e.Name()+"/"+name], byPID[pid] = data, data
		}
	}
	return procfsAt(t, byPath), byPID
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
