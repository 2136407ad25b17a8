package oom

import "testing"

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
			a := Attribute(tc.kill, tc.lookup)
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
