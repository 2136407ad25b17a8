package oom

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that no record makes Parse panic, that what it returns
// is either a line or an error, and that every string it takes is capped
// and valid UTF-8. Seeds: every record of the kernel logs under testdata,
// and shapes they do not have.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.kmsg"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, rec := range bytes.Split(data, []byte{'\n'}) {
			f.Add(rec)
		}
	}
	for _, rec := range []string{
		"1,2,3,-;", // a header and no message
		"\xff\x00;,,,;oom-kill:\xfe,pid=\x00,uid=",
		"Out of memory: Kill process ", // no pid after the verb
		"Out of memory: Killed process 4194304 (java) total-vm:99999999999999999999999kB",
		"3,1,2,-;Memory cgroup out of memory: Killed process 8 (a) b) total-vm:1kB, anon-rss:2kB", // ")" in comm
		// Commas inside values: nodemask, cpuset and memcg paths may have them.
		"6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=0,2,cpuset=a,b,mems_allowed=0,2-3,oom_memcg=/x,y,task_memcg=/x,y/z,task=my,task,pid=5,uid=7",
		"6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/a,task_memcg=/a,task=ja", // cut short
		// The memcg report's lines.
		"6,1,2,-;memory: usage 99999999999999999999kB, limit 1kB, failcnt 0",
		"6,1,2,-;kmem: usage kB, limit 1kB",
		"6,1,2,-;Memory cgroup stats for \xff:",
		"6,1,2,-;shmem 18446744073709551616",
	} {
		f.Add([]byte(rec))
	}
	f.Fuzz(func(t *testing.T, record []byte) {
		line, ok, err := Parse(record)
		if ok && err != nil {
			t.Fatalf("ok with error %v", err)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if !ok {
			return
		}
		switch line.Kind {
		case KindSummary, KindKilled, KindChosen:
			if line.PID <= 0 {
				t.Fatalf("line with pid %d", line.PID)
			}
		case KindUsage, KindStat:
			if line.Key == "" || len(line.Key) > 64 {
				t.Fatalf("report line with key %q", line.Key)
			}
		case KindStatsHeader:
		default:
			t.Fatalf("line of kind %d", line.Kind)
		}
		for _, s := range []string{line.Task, line.Constraint, line.OOMMemcg, line.TaskMemcg, line.Scope, line.Key, line.Memcg} {
			if len(s) > maxFieldBytes || !utf8.ValidString(s) {
				t.Fatalf("field %q: %d bytes or invalid UTF-8", s, len(s))
			}
		}
		var a Assembler
		a.Add(line)
	})
}
