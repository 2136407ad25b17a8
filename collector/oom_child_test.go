package collector

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// liveSamples is a sample source that also says which JVMs are alive, as
// the JVM tracker does.
type liveSamples struct {
	samples
	live []jvm.Sample
}

func (s liveSamples) LiveSamples() []jvm.Sample { return s.live }

// A process killed inside a tracked executor's cgroup while the JVM lives
// is counted with the executor's identity (pid the JVM's, task the
// child's), judged native, python for a PySpark worker, and is no end of
// the JVM.
func TestOOMCollectorAttributesAChildToItsExecutor(t *testing.T) {
	other := nativeExecutor
	other.Identity = jvm.Identity{PID: 5000, Role: "executor", AppID: "app-2", ExecutorID: "1"}
	other.CgroupPath = "/spark/exec-9"
	src := liveSamples{samples: samples{4242: nativeExecutor, 5000: other},
		live: []jvm.Sample{nativeExecutor, other}}
	var mu sync.Mutex
	var ended []int
	f := newOOMFixture(t, OOMConfig{Attributed: func(pid int, _ time.Time, _, _ string) {
		mu.Lock()
		ended = append(ended, pid)
		mu.Unlock()
	}}, src)
	// The kernel prints the full path; /proc/<pid>/cgroup may be relative.
	f.write(t, memcgKill(777, "/kubepods/spark/exec-3", "python3")...)
	f.write(t, memcgKill(778, "/spark/exec-3", "sh")...)
	// In no tracked JVM's cgroup.
	f.write(t, memcgKill(779, "/spark/exec-4", "python3")...)
	testenv.WaitFor(t, waitTimeout, "three kills", func() bool { return strings.Count(f.logs.String(), "OOM kill") == 3 })
	scrapeOOM(t, f.c)
	got, err := scrapeOOM(t, f.c)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]float64{
		"executor_oom_kills_total{app_id=app-1,cause=native,constraint=CONSTRAINT_MEMCG,executor_id=3,pid=4242,region=python,role=executor,task=python3}": 1,
		"executor_oom_kills_total{app_id=app-1,cause=native,constraint=CONSTRAINT_MEMCG,executor_id=3,pid=4242,role=executor,task=sh}":                    1,
		"executor_oom_kills_total{app_id=,cause=unknown,constraint=CONSTRAINT_MEMCG,executor_id=,pid=,role=,task=python3}":                                1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v\n%v", key, got[key], want, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ended) != 0 {
		t.Errorf("a child's kill ended JVMs %v", ended)
	}
	logs := f.logs.String()
	for _, want := range []string{"process 777 (python3) of Spark executor 3 of app-1 (pid 4242)", "jvm_pid=4242",
		"the executor's child python3 (pid 777), not the JVM, was killed holding 244 MiB", "spark.executor.pyspark.memory"} {
		if !strings.Contains(logs, want) {
			t.Errorf("kill log lacks %q:\n%s", want, logs)
		}
	}
}

// Executors sharing a cgroup (a standalone worker's) cannot be told apart
// by it: a child's kill there names none of them.
func TestOOMCollectorChildInASharedCgroup(t *testing.T) {
	second := nativeExecutor
	second.Identity = jvm.Identity{PID: 5000, Role: "executor", AppID: "app-1", ExecutorID: "4"}
	src := liveSamples{samples: samples{4242: nativeExecutor, 5000: second},
		live: []jvm.Sample{nativeExecutor, second}}
	f := newOOMFixture(t, OOMConfig{}, src)
	f.write(t, memcgKill(777, "/spark/exec-3", "python3")...)
	testenv.WaitFor(t, waitTimeout, "the kill", func() bool { return strings.Contains(f.logs.String(), "OOM kill") })
	scrapeOOM(t, f.c)
	got, _ := scrapeOOM(t, f.c)
	key := "executor_oom_kills_total{app_id=,cause=unknown,constraint=CONSTRAINT_MEMCG,executor_id=,pid=,role=,task=python3}"
	if got[key] != 1 {
		t.Errorf("%s = %v, want 1\n%v", key, got[key], got)
	}
}
