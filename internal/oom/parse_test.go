package oom

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		record  string
		want    Line
		ok      bool
		wantErr bool
	}{
		{
			name:   "4.19+ summary, memcg",
			record: "6,88002,1234000100,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/spark/e3,task_memcg=/spark/e3,task=java,pid=7313,uid=0\n",
			want:   Line{Kind: KindSummary, PID: 7313, Task: "java", Constraint: ConstraintMemcg, OOMMemcg: "/spark/e3", TaskMemcg: "/spark/e3"},
			ok:     true,
		},
		{
			name:   "summary, global OOM has no oom_memcg",
			record: "6,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/user.slice,task=java,pid=9001,uid=1000",
			want:   Line{Kind: KindSummary, PID: 9001, Task: "java", Constraint: ConstraintNone, TaskMemcg: "/user.slice", UID: 1000},
			ok:     true,
		},
		{
			name:   "summary with commas in mems_allowed, cgroup name and comm",
			record: "6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=0,2,cpuset=a,b,mems_allowed=0,2-3,oom_memcg=/x,y,task_memcg=/x,y/z,task=my,task,pid=5,uid=7",
			want:   Line{Kind: KindSummary, PID: 5, Task: "my,task", Constraint: ConstraintMemcg, OOMMemcg: "/x,y", TaskMemcg: "/x,y/z", UID: 7},
			ok:     true,
		},
		{
			name:   "5.x/6.x memcg kill",
			record: "3,123405,7093544000,-;Memory cgroup out of memory: Killed process 63214 (java) total-vm:9149468kB, anon-rss:4064992kB, file-rss:52176kB, shmem-rss:92kB, UID:185 pgtables:8372kB oom_score_adj:986",
			want:   Line{Kind: KindKilled, PID: 63214, Task: "java", Scope: "Memory cgroup out of memory", TotalVMKiB: 9149468, AnonRSSKiB: 4064992, FileRSSKiB: 52176, ShmemRSSKiB: 92},
			ok:     true,
		},
		{
			name:   "5.x/6.x global kill",
			record: "3,1,2,-;Out of memory: Killed process 9001 (java) total-vm:20kB, anon-rss:15kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:3kB oom_score_adj:0",
			want:   Line{Kind: KindKilled, PID: 9001, Task: "java", Scope: "Out of memory", TotalVMKiB: 20, AnonRSSKiB: 15},
			ok:     true,
		},
		{
			name:   "oom_kill_allocating_task",
			record: "3,1,2,-;Out of memory (oom_kill_allocating_task): Killed process 77 (java) total-vm:1kB, anon-rss:2kB, file-rss:3kB, shmem-rss:4kB, UID:0 pgtables:0kB oom_score_adj:0",
			want:   Line{Kind: KindKilled, PID: 77, Task: "java", Scope: "Out of memory (oom_kill_allocating_task)", TotalVMKiB: 1, AnonRSSKiB: 2, FileRSSKiB: 3, ShmemRSSKiB: 4},
			ok:     true,
		},
		{
			name:   "4.x killed line has no scope",
			record: "3,51009,912346200,-;Killed process 7313 (java) total-vm:3249380kB, anon-rss:258012kB, file-rss:14880kB, shmem-rss:0kB",
			want:   Line{Kind: KindKilled, PID: 7313, Task: "java", TotalVMKiB: 3249380, AnonRSSKiB: 258012, FileRSSKiB: 14880},
			ok:     true,
		},
		{
			name:   "4.x chosen victim",
			record: "3,51008,912346050,-;Memory cgroup out of memory: Kill process 7313 (java) score 993 or sacrifice child",
			want:   Line{Kind: KindChosen, PID: 7313, Scope: "Memory cgroup out of memory"},
			ok:     true,
		},
		{
			name:   "comm with parenthesis and space",
			record: "3,1,2,-;Memory cgroup out of memory: Killed process 8 (a) b) total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:0kB oom_score_adj:0",
			want:   Line{Kind: KindKilled, PID: 8, Task: "a) b", Scope: "Memory cgroup out of memory", TotalVMKiB: 1, AnonRSSKiB: 2},
			ok:     true,
		},
		{
			name:   "kmsg dictionary continuation lines are dropped",
			record: "3,1,2,-;Out of memory: Killed process 9 (java) total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB\n SUBSYSTEM=mem\n DEVICE=+x",
			want:   Line{Kind: KindKilled, PID: 9, Task: "java", Scope: "Out of memory", TotalVMKiB: 1, AnonRSSKiB: 2},
			ok:     true,
		},
		{
			name:   "plain line without kmsg header",
			record: "Memory cgroup out of memory: Killed process 10 (java) total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB\n",
			want:   Line{Kind: KindKilled, PID: 10, Task: "java", Scope: "Memory cgroup out of memory", TotalVMKiB: 1, AnonRSSKiB: 2},
			ok:     true,
		},
		// Everything else is ignored.
		{name: "oom_reaper", record: "6,1,2,-;oom_reaper: reaped process 7313 (java), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"},
		{name: "invoked oom-killer", record: "4,1,2,-;java invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"},
		{name: "4.x task in", record: "6,1,2,-;Task in /spark killed as a result of limit of /spark"},
		{name: "someone else's killed process", record: "6,1,2,-;myapp: Killed process 12 (worker) after timeout"},
		{name: "empty", record: ""},
		{name: "header only", record: "6,1,2,-;"},
		{name: "binary", record: "\x00\xff\xfe;\x01oom"},
		// OOM lines that cannot be read are errors, not kills.
		{name: "summary without pid", record: "6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=java,uid=0", wantErr: true},
		{name: "summary pid not a number", record: "6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=java,pid=x1,uid=0", wantErr: true},
		{name: "summary negative uid", record: "6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=java,pid=1,uid=-1", wantErr: true},
		{name: "summary without constraint", record: "6,1,2,-;oom-kill:nodemask=(null),task=java,pid=1,uid=0", wantErr: true},
		{name: "killed pid zero", record: "Out of memory: Killed process 0 (java) total-vm:1kB", wantErr: true},
		{name: "killed pid too large", record: "Out of memory: Killed process 99999999 (java) total-vm:1kB", wantErr: true},
		{name: "killed without comm", record: "Out of memory: Killed process 12", wantErr: true},
		{name: "killed with bad size", record: "Out of memory: Killed process 12 (java) total-vm:lotskB, anon-rss:1kB", wantErr: true},
		{name: "chosen pid garbage", record: "Out of memory: Kill process abc (java) score 1 or sacrifice child", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Parse([]byte(tc.record))
			if tc.wantErr {
				if err == nil || !errors.Is(err, ErrMalformed) || ok {
					t.Fatalf("Parse = %+v, %v, %v; want an ErrMalformed error", got, ok, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse error: %v", err)
			}
			if ok != tc.ok {
				t.Fatalf("Parse ok = %v, want %v (line %+v)", ok, tc.ok, got)
			}
			if ok && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestParseCapsFields(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes, a rune boundary test too
	got, ok, err := Parse([]byte("oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/" + long + ",task_memcg=/" + long + ",task=" + long + ",pid=1,uid=0"))
	if err != nil || !ok {
		t.Fatalf("Parse: %v %v", ok, err)
	}
	for name, s := range map[string]string{"task": got.Task, "oom_memcg": got.OOMMemcg, "task_memcg": got.TaskMemcg} {
		if len(s) > maxFieldBytes || !strings.HasPrefix(long, strings.TrimPrefix(s, "/")) {
			t.Errorf("%s = %d bytes %q..., want at most %d bytes of valid prefix", name, len(s), s[:10], maxFieldBytes)
		}
	}
	got, ok, _ = Parse([]byte("Out of memory: Killed process 5 (\xff\xfe) total-vm:1kB"))
	if !ok || got.Task != "\uFFFD" {
		t.Errorf("invalid UTF-8 comm = %q, want one replacement character", got.Task)
	}
}

// TestKernelLogs feeds whole OOM reports of several kernel versions, as
// /dev/kmsg gives them, through Parse and the Assembler.
func TestKernelLogs(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []Kill
	}{
		{"linux-4.9-memcg.kmsg", []Kill{{PID: 7313, Task: "java", Constraint: ConstraintMemcg, AnonRSSKiB: 258012, FileRSSKiB: 14880}}},
		{"linux-4.14-global-child.kmsg", []Kill{{PID: 4187, Task: "python3", Constraint: ConstraintNone, AnonRSSKiB: 1200000, FileRSSKiB: 4000}}},
		{"linux-4.19-memcg.kmsg", []Kill{{PID: 7313, Task: "java", Constraint: ConstraintMemcg, OOMMemcg: "/spark/executor-3", TaskMemcg: "/spark/executor-3", AnonRSSKiB: 258012, FileRSSKiB: 14880}}},
		{"linux-5.4-memcg.kmsg", []Kill{{PID: 63214, Task: "java", Constraint: ConstraintMemcg, OOMMemcg: "/kubepods/burstable/pod6d1c/0f3a", TaskMemcg: "/kubepods/burstable/pod6d1c/0f3a", AnonRSSKiB: 4064992, FileRSSKiB: 52176, ShmemRSSKiB: 92}}},
		{"linux-6.6-global.kmsg", []Kill{{PID: 9001, Task: "java", Constraint: ConstraintNone, TaskMemcg: "/system.slice/spark-worker.service", AnonRSSKiB: 15728640}}},
		{"linux-6.18-memcg-v2-group.kmsg", []Kill{
			{PID: 12001, Task: "java", Constraint: ConstraintMemcg, OOMMemcg: "/kubepods.slice/kubepods-pod1.slice", TaskMemcg: "/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab,cd.scope", AnonRSSKiB: 900000, FileRSSKiB: 1000},
			{PID: 12050, Task: "python3", Constraint: ConstraintMemcg, OOMMemcg: "/kubepods.slice/kubepods-pod1.slice", AnonRSSKiB: 600000, FileRSSKiB: 100},
		}},
		// The whole memcg report of a kill on cgroup v1 (this machine's
		// /dev/kmsg, a test's JVM): usage, kmem and memory.stat.
		{"linux-6.18-memcg-v1-report.kmsg", []Kill{{PID: 1037, Task: "java", Constraint: ConstraintMemcg,
			OOMMemcg:   "/executor-exporter-test-TestExitsLive_oom_killed_without_hsperfdata-e07984b2",
			TaskMemcg:  "/executor-exporter-test-TestExitsLive_oom_killed_without_hsperfdata-e07984b2",
			AnonRSSKiB: 260864, FileRSSKiB: 20412,
			Report: Report{Known: true, Memcg: "/executor-exporter-test-TestExitsLive_oom_killed_without_hsperfdata-e07984b2",
				Usage: 262144 << 10, Anon: 267313152, Kmem: 1096 << 10}}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var a Assembler
			var got []Kill
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				line, ok, err := Parse(sc.Bytes())
				if err != nil {
					t.Fatalf("Parse(%q): %v", sc.Text(), err)
				}
				if !ok {
					continue
				}
				if k, done := a.Add(line); done {
					got = append(got, k)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("kills =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestAssemblerDoesNotMixVictims(t *testing.T) {
	var a Assembler
	// A summary whose Killed line was lost (ring buffer overrun), then a
	// different OOM's Killed line: the old summary must not lend its memcg.
	a.Add(Line{Kind: KindSummary, PID: 1, Constraint: ConstraintNone, TaskMemcg: "/old"})
	k, ok := a.Add(Line{Kind: KindKilled, PID: 2, Task: "java", Scope: "Memory cgroup out of memory"})
	want := Kill{PID: 2, Task: "java", Constraint: ConstraintMemcg}
	if !ok || !reflect.DeepEqual(k, want) {
		t.Errorf("Add = %+v, %v; want %+v", k, ok, want)
	}
	if _, ok := a.Add(Line{Kind: KindSummary, PID: 3}); ok {
		t.Error("a summary alone completed a kill")
	}
}

// TestReportV2 reads cgroup v2's memory.stat keys (anon, file, shmem,
// kernel_stack), as mem_cgroup_print_oom_meminfo prints them, a line each,
// and attaches the report only to a kill of the group it is about.
func TestReportV2(t *testing.T) {
	var a Assembler
	for _, rec := range []string{
		"6,1,1,-;memory: usage 262144kB, limit 262144kB, failcnt 0",
		"6,2,2,-;swap: usage 0kB, limit 0kB, failcnt 0",
		"6,3,3,-;Memory cgroup stats for /kubepods.slice/pod1:",
		"6,4,4,-;anon 200000000",
		"6,5,5,-;file 40000000",
		"6,6,6,-;kernel 30000000",
		"6,7,7,-;kernel_stack 16777216",
		"6,8,8,-;shmem 1048576",
		"6,9,9,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods.slice/pod1,task_memcg=/kubepods.slice/pod1,task=java,pid=7,uid=0",
		"3,10,10,-;Memory cgroup out of memory: Killed process 7 (java) total-vm:1kB, anon-rss:2kB, file-rss:3kB, shmem-rss:0kB",
	} {
		line, ok, err := Parse([]byte(rec))
		if err != nil {
			t.Fatalf("Parse(%q): %v", rec, err)
		}
		if !ok {
			continue
		}
		if k, done := a.Add(line); done {
			want := Report{Known: true, Memcg: "/kubepods.slice/pod1", Usage: 262144 << 10, Anon: 200000000, File: 40000000, Shmem: 1 << 20, KernelStack: 16 << 20}
			if k.Report != want {
				t.Errorf("report %+v, want %+v", k.Report, want)
			}
		}
	}
	// A kill of another group after it: not its report.
	_, _ = a.Add(Line{Kind: KindSummary, PID: 8, Constraint: ConstraintMemcg, OOMMemcg: "/other", TaskMemcg: "/other"})
	k, ok := a.Add(Line{Kind: KindKilled, PID: 8, Task: "java"})
	if !ok || k.Report.Known {
		t.Errorf("a kill of /other took the report of /kubepods.slice/pod1: %+v", k.Report)
	}
}
