package collector

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/exits"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// liveExits is the exporter's exit path wired as the binary wires it — the
// tracker sampling in the background, the witness, the exits collector,
// and when asked the oom collector on /dev/kmsg and the cloud collector on
// a metadata stub — with the real JVM tracker.
type liveExits struct {
	exits *exitsCollector
	oom   Collector
	cloud *cloudCollector
	logs  *testenv.Buffer
}

func newLiveExits(t *testing.T, withOOM bool, cloudCfg *cloud.Config) *liveExits {
	t.Helper()
	tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", Sampling: jvm.SamplingConfig{Slowest: 200 * time.Millisecond},
		Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	tracker.Start()
	t.Cleanup(tracker.Stop)
	l := &liveExits{logs: &testenv.Buffer{}}
	logger := log.NewLogfmtLogger(l.logs)
	w := newExitWitnessOf(nil)
	c, err := newExitsCollector(ExitsConfig{Retention: time.Hour, MaxSeries: 100}, tracker, w, logger)
	if err != nil {
		t.Fatal(err)
	}
	l.exits = c.(*exitsCollector)
	if withOOM {
		oomC, err := NewOOMCollector(OOMConfig{KmsgPath: "/dev/kmsg", Retention: time.Hour, MaxSeries: 100, Attributed: w.Killed}, tracker, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(oomC.(Stopper).Stop)
		l.oom = oomC
	}
	if cloudCfg != nil {
		l.cloud = newTestCloudCollector(t, *cloudCfg)
		w.WatchNotices(pendingInterruptions(l.cloud.refresher))
	}
	return l
}

// waitExit waits until one exit of pid is counted, scraping as Prometheus
// would, checks its reason and that it stays counted once, and returns the
// log line.
func (l *liveExits) waitExit(t *testing.T, pid int, executorID, want string) string {
	t.Helper()
	prefix := "executor_jvm_exits_total{app_id=app-exits,executor_id=" + executorID + ",pid=" + strconv.Itoa(pid) + ","
	var got map[string]float64
	testenv.WaitFor(t, 60*time.Second, "the exit to be counted", func() bool {
		got, _ = scrapeOOM(t, l.exits)
		for k, v := range got {
			if strings.HasPrefix(k, prefix) && v == 1 {
				return true
			}
		}
		return false
	})
	key := prefix + "reason=" + want + ",role=executor}"
	if got[key] != 1 {
		t.Fatalf("want %s = 1; got %v\nlogs:\n%s", key, got, l.logs.String())
	}
	time.Sleep(time.Second) // five more scans: none may count it again
	got, _ = scrapeOOM(t, l.exits)
	for k, v := range got {
		if strings.HasPrefix(k, prefix) && k != key || k == key && v != 1 {
			t.Errorf("after a second: %s = %v", k, v)
		}
	}
	var lines []string
	for _, line := range strings.Split(l.logs.String(), "\n") {
		if strings.Contains(line, "JVM ended") && strings.Contains(line, "pid="+strconv.Itoa(pid)+" ") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d log lines for pid %d:\n%s", len(lines), pid, l.logs.String())
	}
	t.Log(lines[0])
	return lines[0]
}

// exitsJVM runs the stand-in as in a container, with a private /tmp: a JVM
// of another test starting in a shared /tmp would delete the file of a
// killed one, and its end could no longer be told.
func exitsJVM(t *testing.T, id string, jvmArgs []string, args ...string) testjvm.Options {
	return testjvm.InContainer(t, testjvm.Options{JVMArgs: jvmArgs,
		Args: append([]string{"--executor-id", id, "--app-id", "app-exits", "--exit-after-s", "120"}, args...)})
}

// The five real ends of a Spark executor stand-in, each counted once with
// its reason and identity.
func TestExitsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	testjvm.RequireJava(t)
	waitSampled := func(t *testing.T, pid int) {
		t.Helper()
		tr, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Stop() // closes the files it holds
		testenv.WaitFor(t, 60*time.Second, "the JVM to publish its counters", func() bool {
			v, err := tr.Refresh()
			for _, j := range v.JVMs {
				if err == nil && j.PID == pid {
					return true
				}
			}
			return false
		})
		time.Sleep(500 * time.Millisecond) // a few background samples
	}

	t.Run("killed", func(t *testing.T) {
		l := newLiveExits(t, false, nil)
		j := testjvm.Start(t, exitsJVM(t, "1", []string{"-Xmx64m"}, "--heap-mb", "8"))
		waitSampled(t, j.PID)
		_ = syscall.Kill(j.PID, syscall.SIGKILL)
		j.ExitCode(t, 90*time.Second) // unshare reports a death by signal inconsistently
		l.waitExit(t, j.PID, "1", exits.ReasonKilled)
	})

	t.Run("exited", func(t *testing.T) {
		l := newLiveExits(t, false, nil)
		j := testjvm.Start(t, exitsJVM(t, "2", []string{"-Xmx64m"}, "--heap-mb", "8"))
		waitSampled(t, j.PID)
		_ = syscall.Kill(j.PID, syscall.SIGTERM)
		if code := j.ExitCode(t, 90*time.Second); code != 143 {
			t.Fatalf("exit code %d, want 143", code)
		}
		l.waitExit(t, j.PID, "2", exits.ReasonExited)
	})

	t.Run("heap_exhausted", func(t *testing.T) {
		l := newLiveExits(t, false, nil)
		j := testjvm.Start(t, exitsJVM(t, "3", []string{"-Xmx64m"},
			"--spark-exit", "--heap-mb", "1000", "--step-mb", "1", "--step-ms", "40", "--churn"))
		if code := j.ExitCode(t, 90*time.Second); code != 52 {
			t.Fatalf("exit code %d, want 52 (Spark's OOM exit)", code)
		}
		line := l.waitExit(t, j.PID, "3", exits.ReasonHeapExhausted)
		if !strings.Contains(line, "final counters") {
			t.Errorf("not judged on the final counters: %s", line)
		}
	})

	t.Run("oom_killed", func(t *testing.T) {
		testenv.RequireRoot(t)
		if f, err := os.Open("/dev/kmsg"); err != nil {
			testenv.Unavailable(t, "/dev/kmsg unreadable: %v", err)
		} else {
			f.Close()
		}
		l := newLiveExits(t, true, nil)
		cg := testenv.NewMemoryCgroup(t, 256<<20)
		o := exitsJVM(t, "4", []string{"-Xmx1g", "-XX:-AlwaysPreTouch"}, "--heap-mb", "600", "--step-mb", "4", "--step-ms", "100")
		o.Cgroup = cg.Procs()
		j := testjvm.Start(t, o)
		if j.ExitCode(t, 90*time.Second); cg.OOMKills(t) < 1 {
			t.Fatalf("ended with %d OOM kills in its cgroup; want the kernel's", cg.OOMKills(t))
		}
		line := l.waitExit(t, j.PID, "4", exits.ReasonOOMKilled)
		if !strings.Contains(line, "hsperfdata_file=left_behind") {
			t.Errorf("a kernel kill leaves the file: %s", line)
		}
	})

	// A JVM that publishes no counters is attributed all the same: the
	// kill by the oom collector (cause unknown: no heap figures), its end
	// by the exits collector.
	t.Run("oom_killed without hsperfdata", func(t *testing.T) {
		testenv.RequireRoot(t)
		l := newLiveExits(t, true, nil)
		cg := testenv.NewMemoryCgroup(t, 256<<20)
		o := exitsJVM(t, "6", []string{"-Xmx1g", "-XX:-AlwaysPreTouch", "-XX:+PerfDisableSharedMem"}, "--heap-mb", "600", "--step-mb", "4", "--step-ms", "100")
		o.Cgroup = cg.Procs()
		j := testjvm.Start(t, o)
		if j.ExitCode(t, 90*time.Second); cg.OOMKills(t) < 1 {
			t.Fatalf("ended with %d OOM kills in its cgroup; want the kernel's", cg.OOMKills(t))
		}
		line := l.waitExit(t, j.PID, "6", exits.ReasonOOMKilled)
		if !strings.Contains(line, "perf_disable_shared_mem") {
			t.Errorf("the evidence does not say why there was no file: %s", line)
		}
		kill := "executor_oom_kills_total{app_id=app-exits,cause=unknown,constraint=CONSTRAINT_MEMCG,executor_id=6,pid=" + strconv.Itoa(j.PID) + ",role=executor,task=java}"
		testenv.WaitFor(t, 30*time.Second, "the kill counted against the executor", func() bool {
			got, _ := scrapeOOM(t, l.oom)
			return got[kill] == 1
		})
	})

	t.Run("interrupted", func(t *testing.T) {
		stub := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
		cfg := cloudTestConfig(cloudtest.SysfsWithDMI(t, cloudAWSDMI), stub.URL, 50*time.Millisecond)
		l := newLiveExits(t, false, &cfg)
		j := testjvm.Start(t, exitsJVM(t, "5", []string{"-Xmx64m"}, "--heap-mb", "8"))
		waitSampled(t, j.PID)
		stub.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2030-01-02T03:04:05Z"}`)
		testenv.WaitFor(t, 30*time.Second, "the notice to be polled", func() bool {
			v, ok := cloudValue(cloudGather(t, l.cloud), "executor_instance_interruption_pending", "event", cloud.EventSpotInterruption)
			return ok && v == 1
		})
		_ = syscall.Kill(j.PID, syscall.SIGTERM) // the node drain
		if code := j.ExitCode(t, 90*time.Second); code != 143 {
			t.Fatalf("exit code %d, want 143", code)
		}
		l.waitExit(t, j.PID, "5", exits.ReasonInterrupted)
	})
}
