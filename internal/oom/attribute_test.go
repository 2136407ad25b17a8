package oom

import (
	"strings"
	"testing"
)

func TestSameMemcg(t *testing.T) {
	for _, tc := range []struct {
		procPath, kernel string
		want             bool
	}{
		{"", "/a", true},
		{"/a", "", true},
		{"/a/b", "/a/b", true},
		{"/b", "/kubepods/pod1/b", true}, // the exporter in a cgroup namespace
		{"/pod1/b", "/kubepods/pod1/b", true},
		{"/b", "/kubepods/pod1/ab", false},
		{"/a", "/b", false},
		{"/", "/a", false},
		{"/kubepods/x", "/x", true},
	} {
		if got := sameMemcg(tc.procPath, tc.kernel); got != tc.want {
			t.Errorf("sameMemcg(%q, %q) = %v, want %v", tc.procPath, tc.kernel, got, tc.want)
		}
	}
}

func TestAttribute(t *testing.T) {
	executor := Victim{PID: 42, Role: "executor", AppID: "app-1", ExecutorID: "3", CgroupPath: "/pod1/c1",
		HeapUsed: 950 * mib, HeapCommitted: 1000 * mib, HeapMax: 1000 * mib, CgroupLimit: 1100 * mib, CgroupUsage: 1090 * mib}
	lookup := func(pid int) (Victim, bool) { return executor, pid == executor.PID }

	for _, tc := range []struct {
		name               string
		kill               Kill
		lookup             VictimLookup
		found, reused      bool
		wantCause, wantApp string
	}{
		{name: "tracked victim in its memcg", kill: Kill{PID: 42, Constraint: ConstraintMemcg, TaskMemcg: "/kubepods/pod1/c1"},
			lookup: lookup, found: true, wantCause: CauseHeap, wantApp: "app-1"},
		{name: "pid reused in another memcg", kill: Kill{PID: 42, Constraint: ConstraintMemcg, TaskMemcg: "/kubepods/pod2/c9"},
			lookup: lookup, reused: true, wantCause: CauseUnknown},
		{name: "untracked pid", kill: Kill{PID: 7, Constraint: ConstraintMemcg, TaskMemcg: "/x"},
			lookup: lookup, wantCause: CauseUnknown},
		{name: "nothing tracked", kill: Kill{PID: 42, Constraint: ConstraintMemcg}, wantCause: CauseUnknown},
		{name: "global OOM of a tracked victim keeps the victim", kill: Kill{PID: 42, Constraint: ConstraintNone, TaskMemcg: "/kubepods/pod1/c1"},
			lookup: lookup, found: true, wantCause: CauseNode, wantApp: "app-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Attribute(tc.kill, tc.lookup, nil)
			if a.Found != tc.found || a.Reused != tc.reused {
				t.Errorf("found, reused = %v, %v; want %v, %v", a.Found, a.Reused, tc.found, tc.reused)
			}
			if a.Verdict.Cause != tc.wantCause {
				t.Errorf("cause = %q (%s), want %q", a.Verdict.Cause, a.Verdict.Reason, tc.wantCause)
			}
			if a.Victim.AppID != tc.wantApp {
				t.Errorf("victim app = %q, want %q", a.Victim.AppID, tc.wantApp)
			}
			if a.Kill != tc.kill {
				t.Errorf("kill = %+v, want %+v", a.Kill, tc.kill)
			}
		})
	}
}

func TestAttributeChild(t *testing.T) {
	executor := Victim{PID: 42, Role: "executor", AppID: "app-1", ExecutorID: "3", CgroupPath: "/pod1/c1",
		HeapUsed: 100 * mib, HeapCommitted: 500 * mib, HeapMax: 1000 * mib, CgroupLimit: 1100 * mib, CgroupUsage: 1090 * mib,
		RSSPython: 300 * mib}
	lookup := func(pid int) (Victim, bool) { return executor, pid == executor.PID }
	owner := func(memcg string) (Victim, bool) { return executor, SameMemcg(executor.CgroupPath, memcg) }
	for _, tc := range []struct {
		name                   string
		kill                   Kill
		owner                  OwnerLookup
		found, child           bool
		wantCause, wantRegion  string
		wantReason, wantAdvice string
	}{
		{name: "python worker", kill: Kill{PID: 77, Task: "python3", Constraint: ConstraintMemcg, TaskMemcg: "/kubepods/pod1/c1", AnonRSSKiB: 600 << 10},
			owner: owner, found: true, child: true, wantCause: CauseNative, wantRegion: RegionPython,
			wantReason: "child python3 (pid 77), not the JVM, was killed holding 600 MiB", wantAdvice: "spark.executor.pyspark.memory to 896 MiB"},
		{name: "python with a version", kill: Kill{PID: 77, Task: "python3.11", Constraint: ConstraintMemcg, TaskMemcg: "/kubepods/pod1/c1"},
			owner: owner, found: true, child: true, wantCause: CauseNative, wantRegion: RegionPython},
		{name: "another child", kill: Kill{PID: 77, Task: "pythonista", Constraint: ConstraintMemcg, TaskMemcg: "/kubepods/pod1/c1"},
			owner: owner, found: true, child: true, wantCause: CauseNative, wantAdvice: "spark.executor.memoryOverhead"},
		{name: "child in a node OOM", kill: Kill{PID: 77, Task: "python3", Constraint: ConstraintNone, TaskMemcg: "/kubepods/pod1/c1"},
			owner: owner, found: true, child: true, wantCause: CauseNode, wantReason: "child python3 (pid 77) was killed: the machine"},
		{name: "child in an OOM of the group above the container", kill: Kill{PID: 77, Task: "python3", Constraint: ConstraintMemcg, OOMMemcg: "/kubepods", TaskMemcg: "/kubepods/pod1/c1"},
			owner: owner, found: true, child: true, wantCause: CauseNode, wantReason: "child python3 (pid 77) was killed: the memory cgroup /kubepods"},
		{name: "another cgroup", kill: Kill{PID: 77, Task: "python3", Constraint: ConstraintMemcg, TaskMemcg: "/kubepods/pod1/c2"},
			owner: owner, wantCause: CauseUnknown},
		{name: "kernel without task_memcg", kill: Kill{PID: 77, Task: "python3", Constraint: ConstraintMemcg},
			owner: owner, wantCause: CauseUnknown},
		{name: "no owner lookup", kill: Kill{PID: 77, Task: "python3", Constraint: ConstraintMemcg, TaskMemcg: "/kubepods/pod1/c1"},
			wantCause: CauseUnknown},
		{name: "the JVM itself is no child", kill: Kill{PID: 42, Task: "java", Constraint: ConstraintMemcg, TaskMemcg: "/kubepods/pod1/c1"},
			owner: owner, found: true, wantCause: CauseNative, wantRegion: RegionPython},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Attribute(tc.kill, lookup, tc.owner)
			if a.Found != tc.found || a.Child != tc.child {
				t.Fatalf("found, child = %v, %v; want %v, %v", a.Found, a.Child, tc.found, tc.child)
			}
			v := a.Verdict
			if v.Cause != tc.wantCause || v.Region != tc.wantRegion {
				t.Errorf("cause, region = %q, %q (%s); want %q, %q", v.Cause, v.Region, v.Reason, tc.wantCause, tc.wantRegion)
			}
			if !strings.Contains(v.Reason, tc.wantReason) || !strings.Contains(v.Advice, tc.wantAdvice) {
				t.Errorf("reason %q, advice %q; want containing %q, %q", v.Reason, v.Advice, tc.wantReason, tc.wantAdvice)
			}
			if tc.child && a.Victim.PID != executor.PID {
				t.Errorf("victim pid %d, want the executor's", a.Victim.PID)
			}
		})
	}
}
