package exits

import (
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/yarn"
)

const yarnID = "container_1700000000000_0042_01_000002"

// onYARN is an executor in a 1 GiB container on a NodeManager with the
// polling monitor and both checks, as Apache Hadoop ships.
func onYARN(file File, mod func(*YARN)) Death {
	d := death(file, calm)
	y := &YARN{ContainerID: yarnID, Allocation: 1024 * mib, VmemLimit: 2150 * mib, PmemCheck: true, VmemCheck: true, PollingCheck: true,
		TreeRSS: 900 * mib, TreeVsize: 1800 * mib, SampleAgo: 2 * time.Second,
		Region: "direct", Advice: "raise spark.executor.memoryOverhead by 256 MiB to 640 MiB"}
	if mod != nil {
		mod(y)
	}
	d.YARN = y
	return d
}

func status(code int, kind string, used, limit uint64) func(*YARN) {
	return func(y *YARN) { y.Status = &YARNStatus{ExitStatus: code, Kill: kind, Used: used, Limit: limit} }
}

func TestDecideYARN(t *testing.T) {
	kernel := &Kill{PID: 42, Received: t0.Add(time.Hour + time.Second), Cause: "native"}
	spot := &Interruption{Event: "spot_interruption", First: t0.Add(59 * time.Minute), Last: t0.Add(time.Hour + 10*time.Second)}
	and := func(fs ...func(*YARN)) func(*YARN) {
		return func(y *YARN) {
			for _, f := range fs {
				f(y)
			}
		}
	}
	over := func(y *YARN) { y.TreeRSS = 1025 * mib }
	inCgroup := func(y *YARN) { y.Cgroup = "/hadoop-yarn/" + yarnID }
	for _, tc := range []struct {
		name     string
		death    Death
		kill     *Kill
		notice   *Interruption
		want     string
		evidence []string // substrings of the evidence
		advice   string   // substring of the advice
	}{
		{"-104 read", onYARN(FileDeleted, status(-104, yarn.KillPmem, 1100*mib, 1024*mib)), nil, nil, ReasonYARNPmem,
			[]string{"exit status -104", "1100 MiB of 1024 MiB physical", "direct grew most"}, "memoryOverhead by 256 MiB"},
		{"-104 without figures", onYARN(FileLeftBehind, status(-104, "", 0, 0)), nil, nil, ReasonYARNPmem, []string{"over its 1024 MiB physical limit"}, "memoryOverhead"},
		{"-104 beats a notice and a full heap", func() Death {
			d := onYARN(FileDeleted, status(-104, yarn.KillPmem, 0, 0))
			d.Heap = thrashing
			return d
		}(), nil, spot, ReasonYARNPmem, nil, ""},
		{"-103 read", onYARN(FileDeleted, status(-103, yarn.KillVmem, 2200*mib, 2150*mib)), nil, nil, ReasonYARNVmem,
			[]string{"2200 MiB of 2150 MiB virtual"}, "yarn.nodemanager.vmem-check-enabled=false"},
		{"under OOM, strict and elastic", onYARN(FileLeftBehind, status(-104, yarn.KillUnderOOM, 0, 0)), nil, nil, ReasonYARNPmem, []string{"under OOM"}, ""},
		// The monitor's -104 wins over a model that says it does not poll.
		{"-104 beats the model", onYARN(FileDeleted, and(status(-104, "", 0, 0), func(y *YARN) { y.PmemCheck, y.VmemCheck, y.PollingCheck = false, false, false })),
			nil, nil, ReasonYARNPmem, []string{"exit status -104"}, "memoryOverhead"},
		// "Killed by external signal" is never the NodeManager's pmem kill:
		// each is named by its evidence.
		{"elastic handler's SIGKILL", onYARN(FileLeftBehind, and(status(137, yarn.KillSignal, 0, 0), inCgroup, func(y *YARN) { y.Elastic = true })),
			nil, nil, ReasonYARNElastic, []string{"evidence: the container's cgroup /hadoop-yarn/" + yarnID, "not the NodeManager's monitor"}, "memoryOverhead"},
		{"elastic control, no cgroup to act on", onYARN(FileLeftBehind, and(status(137, yarn.KillSignal, 0, 0), over, func(y *YARN) { y.Elastic = true })),
			nil, nil, ReasonKilled, []string{"evidence: none", "no cgroup of its container's"}, ""},
		{"elastic control, the NodeManager's own cgroup", onYARN(FileLeftBehind, and(status(137, yarn.KillSignal, 0, 0), func(y *YARN) {
			y.Elastic, y.Cgroup = true, "/system.slice/hadoop-yarn-nodemanager.service"
		})), nil, nil, ReasonKilled, []string{"evidence: none"}, ""},
		{"SIGTERM under elastic control is not the handler's", onYARN(FileDeleted, and(status(143, yarn.KillSignal, 0, 0), inCgroup, func(y *YARN) { y.Elastic = true })),
			nil, nil, ReasonExited, []string{"killed by an external signal (not the NodeManager", "which sends SIGKILL only"}, ""},
		{"a release under elastic control", onYARN(FileDeleted, and(status(-106, "", 0, 0), inCgroup, func(y *YARN) { y.Elastic = true })),
			nil, nil, ReasonExited, []string{"released through the ResourceManager"}, ""},
		{"a node agent's SIGKILL, over the allocation", onYARN(FileLeftBehind, and(over, status(137, yarn.KillSignal, 0, 0))), nil, nil, ReasonKilled,
			[]string{"not the NodeManager", "evidence: none", "node agent"}, ""},
		{"kernel kill, machine-wide", onYARN(FileLeftBehind, and(over, status(137, yarn.KillSignal, 0, 0))), kernel, nil, ReasonOOMKilled,
			[]string{"kernel OOM kill", "killed by an external signal (not the NodeManager", "evidence: the kernel's report"}, ""},
		// A SIGKILL the NodeManager saw is a kill, even when the JVM's file
		// cannot tell; an interruption notice explains it first.
		{"external SIGKILL, file unknown", onYARN(FileUnknown, status(137, yarn.KillSignal, 0, 0)), nil, nil, ReasonKilled, []string{"evidence: none"}, ""},
		{"external SIGKILL during an interruption", onYARN(FileLeftBehind, status(137, yarn.KillSignal, 0, 0)), nil, spot, ReasonInterrupted, []string{"evidence: none"}, ""},
		{"kernel kill in a strict cgroup", onYARN(FileLeftBehind, and(status(137, yarn.KillSignal, 0, 0), inCgroup, func(y *YARN) { y.PollingCheck = false })), kernel, nil, ReasonOOMKilled, nil, ""},
		// Spark's release of an executor reaches the NodeManager from the
		// ResourceManager; an ApplicationMaster's stop is MapReduce's way.
		{"Spark's release", onYARN(FileDeleted, and(over, status(-106, "", 0, 0))), nil, nil, ReasonExited, []string{"released through the ResourceManager (exit status -106"}, ""},
		{"Spark's release, SIGKILL after the grace", onYARN(FileLeftBehind, and(over, status(-106, "", 0, 0))), nil, nil, ReasonKilled, []string{"exit status -106", "no memory kill"}, ""},
		{"ApplicationMaster stop", onYARN(FileDeleted, and(over, status(-105, "", 0, 0))), nil, nil, ReasonExited, []string{"stopped by its ApplicationMaster (exit status -105)"}, ""},
		{"preemption", onYARN(FileLeftBehind, status(-102, "", 0, 0)), nil, nil, ReasonKilled, []string{"preempted"}, ""},
		{"excess logs", onYARN(FileDeleted, status(-109, "", 0, 0)), nil, nil, ReasonExited, []string{"more logs than allowed (exit status -109)"}, ""},
		{"the application's end", onYARN(FileDeleted, status(-107, "", 0, 0)), nil, nil, ReasonExited, []string{"after the application finished"}, ""},
		{"exit 0", onYARN(FileDeleted, status(0, "", 0, 0)), nil, nil, ReasonExited, nil, ""},
		{"heap exhaustion's exit 52", func() Death {
			d := onYARN(FileDeleted, status(52, "", 0, 0))
			d.Heap = thrashing
			return d
		}(), nil, nil, ReasonHeapExhausted, nil, ""},

		{"inferred pmem", onYARN(FileDeleted, over), nil, nil, ReasonYARNPmem, []string{"inferred", "1025 MiB of its 1024 MiB allocation"}, "memoryOverhead by 256 MiB"},
		{"inferred pmem, SIGKILL", onYARN(FileLeftBehind, over), nil, nil, ReasonYARNPmem, []string{"inferred"}, ""},
		{"at the allocation is not over", onYARN(FileLeftBehind, func(y *YARN) { y.TreeRSS = 1024 * mib }), nil, nil, ReasonKilled, nil, ""},
		{"a sample too old", onYARN(FileLeftBehind, and(over, func(y *YARN) { y.SampleAgo = YARNInferWithin + time.Millisecond })), nil, nil, ReasonKilled, nil, ""},
		{"a sample just in time", onYARN(FileLeftBehind, and(over, func(y *YARN) { y.SampleAgo = YARNInferWithin })), nil, nil, ReasonYARNPmem, nil, ""},
		{"pmem check off", onYARN(FileLeftBehind, and(over, func(y *YARN) { y.PmemCheck = false })), nil, nil, ReasonKilled, nil, ""},
		{"no polling monitor (strict cgroups)", onYARN(FileLeftBehind, and(over, func(y *YARN) { y.PollingCheck = false })), nil, nil, ReasonKilled, nil, ""},
		// Stock Hadoop 3.3, no cgroups: nothing enforces (yarn.Enforce), so
		// nothing is inferred.
		{"stock 3.3: no inference", onYARN(FileLeftBehind, and(over, func(y *YARN) { y.PmemCheck, y.VmemCheck, y.PollingCheck = false, false, false })),
			nil, nil, ReasonKilled, nil, ""},
		{"inferred vmem first", onYARN(FileLeftBehind, and(over, func(y *YARN) { y.TreeVsize = 2151 * mib })), nil, nil, ReasonYARNVmem, []string{"inferred", "address space"}, "vmem-pmem-ratio"},
		{"vmem check off", onYARN(FileLeftBehind, func(y *YARN) { y.TreeVsize, y.VmemCheck = 4000*mib, false }), nil, nil, ReasonKilled, nil, ""},
		{"a notice beats an inference", onYARN(FileDeleted, over), nil, spot, ReasonInterrupted, nil, ""},
		{"no YARN", death(FileLeftBehind, calm), nil, nil, ReasonKilled, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.death, tc.kill, tc.notice)
			if v.Reason != tc.want {
				t.Fatalf("reason %s, want %s: %s", v.Reason, tc.want, v.Evidence)
			}
			for _, s := range tc.evidence {
				if !strings.Contains(v.Evidence, s) {
					t.Errorf("evidence %q lacks %q", v.Evidence, s)
				}
			}
			if !strings.Contains(v.Advice, tc.advice) {
				t.Errorf("advice %q lacks %q", v.Advice, tc.advice)
			}
			if v.Reason == ReasonYARNVmem && strings.Contains(v.Advice, "memoryOverhead") {
				t.Errorf("vmem advice asks for memory: %q", v.Advice)
			}
			if v.Reason == ReasonYARNPmem && v.Region != tc.death.YARN.Region {
				t.Errorf("region %q, want %q", v.Region, tc.death.YARN.Region)
			}
		})
	}
}

func TestYARNOverCount(t *testing.T) {
	shared := func(y *YARN) {
		y.Status = &YARNStatus{ExitStatus: -104}
		y.PythonWorkers, y.MappedBytes = true, 300*mib
	}
	v := Decide(onYARN(FileLeftBehind, shared), nil, nil)
	if !strings.Contains(v.Evidence, "smaps-based-rss.enabled=true") || !strings.Contains(v.Evidence, "PySpark") || !strings.Contains(v.Evidence, "300 MiB of mapped files") {
		t.Errorf("no over-count note: %s", v.Evidence)
	}
	v = Decide(onYARN(FileLeftBehind, func(y *YARN) { shared(y); y.SmapsRSS = true }), nil, nil)
	if strings.Contains(v.Evidence, "smaps") {
		t.Errorf("over-count note with smaps-based RSS on: %s", v.Evidence)
	}
	v = Decide(onYARN(FileLeftBehind, status(-104, "", 0, 0)), nil, nil)
	if strings.Contains(v.Evidence, "smaps") {
		t.Errorf("over-count note without shared or mapped pages: %s", v.Evidence)
	}
	// Mapped files alone: a note from 1 MiB on; below it the note would
	// read "0 MiB of mapped files".
	mapped := func(n uint64) string {
		return Decide(onYARN(FileLeftBehind, func(y *YARN) { y.Status = &YARNStatus{ExitStatus: -104}; y.MappedBytes = n }), nil, nil).Evidence
	}
	if ev := mapped(mib); !strings.Contains(ev, "1 MiB of mapped files") {
		t.Errorf("no over-count note for 1 MiB of mapped files: %s", ev)
	}
	if ev := mapped(mib - 1); strings.Contains(ev, "smaps") {
		t.Errorf("over-count note for less than 1 MiB of mapped files: %s", ev)
	}
}

// The judge waits for the NodeManager's status of a YARN death beyond its
// usual delay, up to YARNWait, then decides by inference.
func TestJudgeWaitsForYARN(t *testing.T) {
	var known map[string]YARNStatus
	j := NewJudge[string](Config{YARNWait: 8 * time.Second, YARNStatus: func(id string) (YARNStatus, bool) { s, ok := known[id]; return s, ok }})
	d := onYARN(FileDeleted, func(y *YARN) { y.TreeRSS = 1100 * mib })
	j.Died(d, "a")
	if got := j.Decide(d.Noticed.Add(3 * time.Second)); len(got) != 0 {
		t.Fatalf("decided before the NodeManager's status: %+v", got)
	}
	known = map[string]YARNStatus{yarnID: {ExitStatus: -105}}
	got := j.Decide(d.Noticed.Add(4 * time.Second))
	if len(got) != 1 || got[0].Verdict.Reason != ReasonExited || !strings.Contains(got[0].Verdict.Evidence, "ApplicationMaster") {
		t.Fatalf("with the status read: %+v", got)
	}
	if d.YARN.Status != nil {
		t.Error("the caller's evidence was changed")
	}

	known = nil
	j.Died(d, "b")
	if got := j.Decide(d.Noticed.Add(8*time.Second - time.Millisecond)); len(got) != 0 {
		t.Fatalf("decided before YARNWait: %+v", got)
	}
	got = j.Decide(d.Noticed.Add(8 * time.Second))
	if len(got) != 1 || got[0].Verdict.Reason != ReasonYARNPmem || !strings.Contains(got[0].Verdict.Evidence, "inferred") {
		t.Fatalf("after YARNWait: %+v", got)
	}

	// Without YARN evidence, the usual delay.
	plain := death(FileDeleted, calm)
	j.Died(plain, "c")
	if got := j.Decide(plain.Noticed.Add(DefaultConfig.Delay)); len(got) != 1 {
		t.Fatalf("a death outside YARN waited: %+v", got)
	}
}
