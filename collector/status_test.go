package collector

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// The status page shows the last kills, newest first, with the verdict
// that the counter carries, its advice apart, and the victim's last sample.
func TestStatusRecentKills(t *testing.T) {
	f := newOOMFixture(t, OOMConfig{}, samples{4242: nativeExecutor})
	// 24 kills of untracked processes, then one of the executor: the page
	// keeps the last maxRecent.
	for pid := 1; pid <= 24; pid++ {
		f.write(t, memcgKill(pid, "/other", "python3")...)
	}
	f.write(t, memcgKill(4242, "/spark/exec-3", "java")...)
	testenv.WaitFor(t, waitTimeout, "25 kills", func() bool { return strings.Count(f.logs.String(), "OOM kill") == 25 })

	s := NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"oom": f.c}).Status()
	if !s.KillsFollowed {
		t.Error("KillsFollowed false while the kernel log is read")
	}
	if len(s.Kills) != maxRecent {
		t.Fatalf("%d kills on the page, want the last %d", len(s.Kills), maxRecent)
	}
	k := s.Kills[0]
	if k.PID != 4242 || k.Victim == nil || k.Victim.ExecutorID != "3" || k.Victim.AppID != "app-1" || k.Cause != "native" {
		t.Fatalf("newest kill %+v, want executor 3 of app-1, native", k)
	}
	if !strings.HasPrefix(k.Advice, "raise spark.executor.memoryOverhead by ") || strings.Contains(k.Reason, "spark.") || !strings.Contains(k.Reason, "committed heap 40 MiB") {
		t.Errorf("reason %q, advice %q: want the figures in the reason and the setting in the advice", k.Reason, k.Advice)
	}
	if ls := k.LastSample; ls == nil || ls.ContainerLimit != 256<<20 || ls.HeapMax != 64<<20 || !ls.Time.Equal(nativeExecutor.Time) {
		t.Errorf("last sample %+v, want the tracker's sample of the victim", ls)
	}
	if k.KilledAnonRSS != 250000<<10 {
		t.Errorf("killed anon RSS %d, want the kernel's 250000 kB", k.KilledAnonRSS)
	}
	if oldest := s.Kills[len(s.Kills)-1]; oldest.PID != 6 || oldest.Victim != nil || oldest.LastSample != nil {
		t.Errorf("oldest kill kept: %+v, want pid 6, not a tracked JVM", oldest)
	}
	// The log line still carries the advice.
	if !strings.Contains(f.logs.String(), "filled the container; raise spark.executor.memoryOverhead") {
		t.Errorf("the kill's log line lost its advice:\n%s", f.logs.String())
	}
}

// The page never makes the tracker read: before the first sampling it has
// no JVMs, however often it is asked; after one it shows that sampling.
func TestStatusReadsNoJVM(t *testing.T) {
	tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", MaxProcesses: 50, Retention: time.Minute}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	ec := &ExecutorCollector{Collectors: map[string]Collector{}, deps: &Dependencies{tracker: tracker, trackerBuilt: true}, logger: log.NewNopLogger()}
	for i := 0; i < 3; i++ {
		if s := ec.Status(); !s.JVMsSampled.IsZero() || len(s.JVMs) != 0 {
			t.Fatalf("status before any sampling: sampled %v, %d JVMs; the page made the tracker read", s.JVMsSampled, len(s.JVMs))
		}
	}
	view, err := tracker.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	s := ec.Status()
	if !s.JVMsSampled.Equal(view.Time) || len(s.JVMs) != len(view.JVMs) {
		t.Errorf("status shows sampling at %v with %d JVMs, want the tracker's at %v with %d", s.JVMsSampled, len(s.JVMs), view.Time, len(view.JVMs))
	}
	if s.Machine != nil || s.KillsFollowed || s.ExitsCounted {
		t.Errorf("no cloud, oom or exits collector, yet the page has %+v, %v, %v", s.Machine, s.KillsFollowed, s.ExitsCounted)
	}
}

func TestStatusMachine(t *testing.T) {
	server := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	server.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`)
	c := newTestCloudCollector(t, cloudTestConfig(cloudtest.SysfsWithDMI(t, cloudAWSDMI), server.URL, 20*time.Millisecond))
	ec := NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"cloud": c})
	testenv.WaitFor(t, waitTimeout, "the machine and a pending notice on the page", func() bool {
		s := ec.Status()
		return s.Machine != nil && pendingNotice(s.Machine) != nil
	})
	m := ec.Status().Machine
	got := fmt.Sprintf("%s %s %s %s %s", m.Provider, m.InstanceType, m.Lifecycle, m.Zone, m.InstanceID)
	if got != "aws m5.xlarge spot eu-west-1a i-0123456789abcdef0" || m.LastRefresh.IsZero() {
		t.Errorf("machine %q (refreshed %v), want the stand-in's spot m5.xlarge", got, m.LastRefresh)
	}
	if n := pendingNotice(m); n.Event != "spot_interruption" || n.Time.Unix() != 1505722920 {
		t.Errorf("pending notice %+v, want spot_interruption at the announced time", n)
	}
}

func pendingNotice(m *statuspage.Machine) *statuspage.Notice {
	for i := range m.Notices {
		if m.Notices[i].Pending {
			return &m.Notices[i]
		}
	}
	return nil
}

// BenchmarkStatusJVMs is the snapshot's share of a request for the page:
// turning the tracker's last view of 100 JVMs into rows.
func BenchmarkStatusJVMs(b *testing.B) {
	jvms := make([]jvm.JVM, 100)
	for i := range jvms {
		jvms[i].Sample = jvm.Sample{Identity: jvm.Identity{PID: 1000 + i, Role: "executor", AppID: "spark-app", ExecutorID: fmt.Sprint(i)},
			CgroupPath: fmt.Sprintf("/kubepods.slice/kubepods-pod%08d_0000_0000_0000_000000000000.slice/cri-containerd-%064d.scope", i, i)}
		jvms[i].MainClass, jvms[i].HasCgroup = "org.apache.spark.executor.CoarseGrainedExecutorBackend", true
	}
	b.ReportAllocs()
	var rows []statuspage.JVM
	for b.Loop() {
		rows = make([]statuspage.JVM, 0, len(jvms))
		for i := range jvms {
			rows = append(rows, statusJVM(&jvms[i], cloud.PodsSnapshot{}))
		}
	}
	if len(rows) != len(jvms) {
		b.Fatalf("%d rows for %d JVMs", len(rows), len(jvms))
	}
}
