package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/nativemem"
	"github.com/executor-exporter/executor_exporter/internal/oom"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// samples is a SampleSource of samples a test builds, standing in for the
// JVM tracker's memory of JVMs it has read.
type samples map[int]jvm.Sample

func (s samples) LastSample(pid int) (jvm.Sample, bool) {
	v, ok := s[pid]
	return v, ok
}

// LiveSamples: none is known alive (liveSamples says which are).
func (s samples) LiveSamples() []jvm.Sample { return nil }

type oomFixture struct {
	c    *oomCollector
	w    *os.File
	logs *testenv.Buffer
	now  time.Time
	mu   sync.Mutex
}

// newOOMFixture starts the collector on an empty file that the test
// appends kernel records to.
func newOOMFixture(t *testing.T, cfg OOMConfig, src jvm.SampleSource) *oomFixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if cfg.KmsgPath == "" {
		cfg.KmsgPath = path
	}
	if cfg.Retention == 0 {
		cfg.Retention = time.Hour
	}
	if cfg.MaxSeries == 0 {
		cfg.MaxSeries = 100
	}
	cfg.Follow = oom.FollowConfig{PollInterval: 5 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	f := &oomFixture{w: w, logs: &testenv.Buffer{}, now: time.Unix(1_800_000_000, 0)}
	c, err := NewOOMCollector(cfg, src, log.NewLogfmtLogger(f.logs))
	if err != nil {
		t.Fatal(err)
	}
	f.c = c.(*oomCollector)
	f.c.now = func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
	t.Cleanup(f.c.Stop)
	// The follower seeks to the end when it opens the file, so a record
	// written before that is skipped: write a harmless one until one is
	// read, then the ones that matter.
	testenv.WaitFor(t, waitTimeout, "the follower to start", func() bool {
		f.write(t, "6,1,1,-;fixture ready")
		time.Sleep(5 * time.Millisecond)
		got, _ := scrapeOOM(t, f.c)
		return got["executor_oom_kmsg_records_total{}"] > 0
	})
	return f
}

func (f *oomFixture) write(t *testing.T, records ...string) {
	t.Helper()
	for _, r := range records {
		if _, err := fmt.Fprintln(f.w, r); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *oomFixture) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// waitTimeout bounds how long a test waits for a collector's background
// goroutine; it only ends a hang, the machine may be busy.
const waitTimeout = 30 * time.Second

// scrapeOOM runs one Update and returns every sample as "name{labels}" →
// value, and the Update error.
func scrapeOOM(t *testing.T, c Collector) (map[string]float64, error) {
	t.Helper()
	ch := make(chan prometheus.Metric, 1000)
	err := c.Update(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		var pairs []string
		for _, lp := range pb.GetLabel() {
			// Kills outside pods leave the pod labels empty, and kills
			// not native the region; the keys below name them only when set.
			if lp.GetValue() == "" && (lp.GetName() == "namespace" || lp.GetName() == "pod" || lp.GetName() == "container" || lp.GetName() == "region") {
				continue
			}
			pairs = append(pairs, lp.GetName()+"="+lp.GetValue())
		}
		sort.Strings(pairs)
		name := m.Desc().String()
		name = name[strings.Index(name, `"`)+1:]
		name = name[:strings.Index(name, `"`)]
		out[name+"{"+strings.Join(pairs, ",")+"}"] = pb.GetCounter().GetValue()
	}
	return out, err
}

const executorKillKey = "executor_oom_kills_total{app_id=app-1,cause=native,constraint=CONSTRAINT_MEMCG,executor_id=3,pid=4242,role=executor,task=java}"

var nativeExecutor = jvm.Sample{
	Identity: jvm.Identity{PID: 4242, Role: "executor", AppID: "app-1", ExecutorID: "3"},
	Time:     time.Unix(1_800_000_000, 0).Add(-time.Second),
	HeapUsed: 10 << 20, HeapCommitted: 40 << 20, HeapMax: 64 << 20, NonHeapCommitted: 30 << 20,
	RSSJVM:     250 << 20,
	CgroupPath: "/spark/exec-3", CgroupLimit: 256 << 20, CgroupUsage: 250 << 20,
}

func memcgKill(pid int, memcg, task string) []string {
	return []string{
		fmt.Sprintf("6,10,100,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=%s,task_memcg=%s,task=%s,pid=%d,uid=0", memcg, memcg, task, pid),
		fmt.Sprintf("3,11,101,-;Memory cgroup out of memory: Killed process %d (%s) total-vm:3000000kB, anon-rss:250000kB, file-rss:1000kB, shmem-rss:0kB, UID:0 pgtables:900kB oom_score_adj:0", pid, task),
	}
}

func TestOOMCollectorAttributesAndShowsZeroFirst(t *testing.T) {
	f := newOOMFixture(t, OOMConfig{}, samples{4242: nativeExecutor})
	f.write(t, memcgKill(4242, "/spark/exec-3", "java")...)
	testenv.WaitFor(t, waitTimeout, "the kill to be counted", func() bool { return strings.Contains(f.logs.String(), "OOM kill") })

	first, err := scrapeOOM(t, f.c)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := first[executorKillKey]; !ok || v != 0 {
		t.Fatalf("first scrape: %s = %v, %v; want present at 0\n%v", executorKillKey, v, ok, first)
	}
	second, _ := scrapeOOM(t, f.c)
	if v := second[executorKillKey]; v != 1 {
		t.Fatalf("second scrape: %s = %v, want 1", executorKillKey, v)
	}
	// A second kill of the same series counts at once.
	f.write(t, memcgKill(4242, "/spark/exec-3", "java")...)
	testenv.WaitFor(t, waitTimeout, "the second kill", func() bool { return strings.Count(f.logs.String(), "OOM kill") == 2 })
	third, _ := scrapeOOM(t, f.c)
	if v := third[executorKillKey]; v != 2 {
		t.Errorf("after a second kill: %v, want 2", v)
	}

	logs := f.logs.String()
	for _, want := range []string{"Spark executor 3 of app-1 (pid 4242)", "cause native", "spark.executor.memoryOverhead",
		"heap_max_mib=64.0", "cgroup_limit_mib=256.0", "sample_age_seconds=1.0", "level=warn"} {
		if !strings.Contains(logs, want) {
			t.Errorf("kill log lacks %q:\n%s", want, logs)
		}
	}
}

func TestOOMCollectorUntrackedGlobalAndPidReuse(t *testing.T) {
	f := newOOMFixture(t, OOMConfig{}, samples{4242: nativeExecutor})
	f.write(t,
		// Not a JVM the tracker knows.
		"6,1,1,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/x,task_memcg=/x,task=stress,pid=77,uid=0",
		"3,2,2,-;Memory cgroup out of memory: Killed process 77 (stress) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB",
		// A global OOM of a process that is not a tracked JVM.
		"6,3,3,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=python3,pid=78,uid=0",
		"3,4,4,-;Out of memory: Killed process 78 (python3) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB",
	)
	// The tracked pid, but killed in another cgroup: a reused pid.
	f.write(t, memcgKill(4242, "/other", "java")...)
	// A comm longer than any label may be.
	f.write(t, "Out of memory: Killed process 79 ("+strings.Repeat("x", 300)+") total-vm:1kB")
	testenv.WaitFor(t, waitTimeout, "four kills", func() bool { return strings.Count(f.logs.String(), "OOM kill") == 4 })
	scrapeOOM(t, f.c)
	got, err := scrapeOOM(t, f.c)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]float64{
		"executor_oom_kills_total{app_id=,cause=unknown,constraint=CONSTRAINT_MEMCG,executor_id=,pid=,role=,task=stress}":                                 1,
		"executor_oom_kills_total{app_id=,cause=node,constraint=CONSTRAINT_NONE,executor_id=,pid=,role=,task=python3}":                                    1,
		"executor_oom_kills_total{app_id=,cause=unknown,constraint=CONSTRAINT_MEMCG,executor_id=,pid=,role=,task=java}":                                   1,
		"executor_oom_kills_total{app_id=,cause=node,constraint=CONSTRAINT_NONE,executor_id=,pid=,role=,task=" + strings.Repeat("x", maxLabelBytes) + "}": 1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	if _, ok := got[executorKillKey]; ok {
		t.Errorf("a kill in another cgroup was attributed to the tracked JVM")
	}
}

func TestOOMCollectorBoundsSeries(t *testing.T) {
	f := newOOMFixture(t, OOMConfig{MaxSeries: 2, Retention: time.Hour}, samples{})
	for i, task := range []string{"a", "b", "c"} {
		f.write(t, fmt.Sprintf("Out of memory: Killed process %d (%s) total-vm:1kB", 100+i, task))
		testenv.WaitFor(t, waitTimeout, "kill "+task, func() bool { return strings.Count(f.logs.String(), "OOM kill") == i+1 })
		f.advance(time.Minute)
	}
	got, _ := scrapeOOM(t, f.c)
	tasks := []string{}
	for key := range got {
		if strings.HasPrefix(key, "executor_oom_kills_total") {
			tasks = append(tasks, key[strings.Index(key, "task=")+5:len(key)-1])
		}
	}
	sort.Strings(tasks)
	if strings.Join(tasks, ",") != "b,c" {
		t.Errorf("series tasks = %v, want the two newest b,c", tasks)
	}
	if got["executor_oom_series_dropped_total{}"] != 1 {
		t.Errorf("dropped = %v, want 1", got["executor_oom_series_dropped_total{}"])
	}
	// Past the retention after its last kill, a series goes: now is 3 min
	// after the first kill; b was killed at 1 min, c at 2 min.
	f.advance(58*time.Minute + 30*time.Second)
	got, _ = scrapeOOM(t, f.c)
	for key := range got {
		if strings.Contains(key, "task=b") {
			t.Errorf("series b outlived its retention: %s", key)
		}
	}
	if _, ok := got["executor_oom_kills_total{app_id=,cause=node,constraint=CONSTRAINT_NONE,executor_id=,pid=,role=,task=c}"]; !ok {
		t.Errorf("series c expired early: %v", got)
	}
}

func TestOOMCollectorNewSeriesHold(t *testing.T) {
	f := newOOMFixture(t, OOMConfig{NewSeriesHold: 30 * time.Second}, samples{})
	f.write(t, "Out of memory: Killed process 5 (x) total-vm:1kB")
	testenv.WaitFor(t, waitTimeout, "the kill", func() bool { return strings.Contains(f.logs.String(), "OOM kill") })
	key := "executor_oom_kills_total{app_id=,cause=node,constraint=CONSTRAINT_NONE,executor_id=,pid=,role=,task=x}"
	for i := 0; i < 3; i++ {
		got, _ := scrapeOOM(t, f.c)
		if v, ok := got[key]; !ok || v != 0 {
			t.Fatalf("scrape %d within the hold: %v %v, want 0", i, v, ok)
		}
	}
	f.advance(30 * time.Second)
	if got, _ := scrapeOOM(t, f.c); got[key] != 1 {
		t.Errorf("after the hold: %v, want 1", got[key])
	}
}

func TestOOMCollectorMalformedRecords(t *testing.T) {
	f := newOOMFixture(t, OOMConfig{}, samples{})
	f.write(t, "6,1,1,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=java,pid=zz,uid=0", "3,2,2,-;Out of memory: Killed process 5 (x) total-vm:1kB")
	testenv.WaitFor(t, waitTimeout, "the good kill after the bad line", func() bool { return strings.Contains(f.logs.String(), "OOM kill") })
	got, err := scrapeOOM(t, f.c)
	if err != nil {
		t.Fatal(err)
	}
	if got["executor_oom_kmsg_malformed_records_total{}"] != 1 {
		t.Errorf("malformed = %v, want 1", got["executor_oom_kmsg_malformed_records_total{}"])
	}
}

func TestOOMCollectorUnreadableKmsg(t *testing.T) {
	logs := &testenv.Buffer{}
	missing := filepath.Join(t.TempDir(), "no-kmsg")
	c, err := NewOOMCollector(OOMConfig{KmsgPath: missing, Retention: time.Hour, MaxSeries: 10,
		Follow: oom.FollowConfig{MinBackoff: 2 * time.Millisecond, MaxBackoff: 2 * time.Millisecond}}, samples{}, log.NewLogfmtLogger(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.(Stopper).Stop()
	testenv.WaitFor(t, waitTimeout, "the open error", func() bool { return c.(*oomCollector).follower.Err() != nil })
	time.Sleep(50 * time.Millisecond) // many retries at 2 ms
	got, err := scrapeOOM(t, c)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Update error = %v, want one naming %s", err, missing)
	}
	if _, ok := got["executor_oom_kmsg_malformed_records_total{}"]; !ok {
		t.Errorf("the collector's own counters went missing with the kernel log: %v", got)
	}
	if n := strings.Count(logs.String(), "cannot read the kernel log"); n != 1 {
		t.Errorf("logged the unreadable kernel log %d times, want once:\n%s", n, logs)
	}
	// Through the framework: success 0, and the scrape goes on.
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"oom": c}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "executor_scrape_collector_success" {
			for _, m := range mf.GetMetric() {
				found = true
				if m.GetGauge().GetValue() != 0 {
					t.Errorf("collector success = %v, want 0", m.GetGauge().GetValue())
				}
			}
		}
	}
	if !found {
		t.Error("no executor_scrape_collector_success")
	}
}

func TestNewOOMCollectorRejectsBadConfig(t *testing.T) {
	for _, cfg := range []OOMConfig{
		{KmsgPath: "", Retention: time.Hour, MaxSeries: 1},
		{KmsgPath: "/dev/null", Retention: time.Hour, MaxSeries: 0},
		{KmsgPath: "/dev/null", Retention: 0, MaxSeries: 1},
	} {
		if c, err := NewOOMCollector(cfg, samples{}, log.NewNopLogger()); err == nil {
			c.(Stopper).Stop()
			t.Errorf("NewOOMCollector(%+v) accepted", cfg)
		}
	}
}

// staticPods is a pod list that does not change.
type staticPods struct{ snap cloud.PodsSnapshot }

func (s staticPods) Pods() cloud.PodsSnapshot { return s.snap }
func (staticPods) WantPod(string, string)     {}

// A kill names the victim's namespace, pod and container from its cgroup
// (the last sample's, or the kernel's task_memcg for a process that is not
// a tracked JVM) and the pod list, so the series says which pod after the
// pod and the JVM's info series are gone.
func TestOOMCollectorNamesThePod(t *testing.T) {
	podCgroup := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(layoutUID, "-", "_") +
		".slice/cri-containerd-" + layoutCID + ".scope"
	pods := staticPods{cloud.PodsSnapshot{Index: cloud.NewPodIndex([]cloud.Pod{{UID: layoutUID, Namespace: "data-eng", Name: "etl-exec-7",
		Containers: map[string]cloud.Container{layoutCID: {Name: "spark-kubernetes-executor"}}}})}}
	exec := nativeExecutor
	exec.CgroupPath = podCgroup
	f := newOOMFixture(t, OOMConfig{Pods: pods}, samples{4242: exec})
	f.write(t, memcgKill(4242, podCgroup, "java")...)
	f.write(t, memcgKill(4343, podCgroup, "python3")...)                                          // a PySpark worker: not a JVM
	f.write(t, memcgKill(4444, "/hadoop-yarn/container_1700000000000_0001_01_000002", "java")...) // YARN
	testenv.WaitFor(t, waitTimeout, "three kills", func() bool { return strings.Count(f.logs.String(), "OOM kill") == 3 })
	scrapeOOM(t, f.c)
	got, err := scrapeOOM(t, f.c)
	if err != nil {
		t.Fatal(err)
	}
	const pod = "container=spark-kubernetes-executor,"
	for _, key := range []string{
		"executor_oom_kills_total{app_id=app-1,cause=native,constraint=CONSTRAINT_MEMCG," + pod + "executor_id=3,namespace=data-eng,pid=4242,pod=etl-exec-7,role=executor,task=java}",
		"executor_oom_kills_total{app_id=,cause=unknown,constraint=CONSTRAINT_MEMCG," + pod + "executor_id=,namespace=data-eng,pid=,pod=etl-exec-7,role=,task=python3}",
		"executor_oom_kills_total{app_id=,cause=unknown,constraint=CONSTRAINT_MEMCG,container=container_1700000000000_0001_01_000002,executor_id=,pid=,role=,task=java}",
	} {
		if got[key] != 1 {
			t.Errorf("%s = %v, want 1\n%v", key, got[key], got)
		}
	}
}

// A native kill of a JVM with a breakdown carries the region that grew in
// its series and its log line; the exit witness hears of it too.
func TestOOMCollectorNamesTheRegion(t *testing.T) {
	s := nativeExecutor
	start := s.Time.Add(-10 * time.Minute)
	var first, last nativemem.Breakdown
	first[nativemem.Heap], first[nativemem.Malloc] = 40<<20, 20<<20
	last[nativemem.Heap], last[nativemem.Malloc], last[nativemem.ThreadStacks] = 40<<20, 190<<20, 25<<20
	s.Native = &jvm.NativeMemory{
		First: nativemem.Reading{Time: start, Regions: first},
		Last:  nativemem.Reading{Time: s.Time, Regions: last},
	}
	told := make(chan string, 10)
	f := newOOMFixture(t, OOMConfig{Attributed: func(pid int, _ time.Time, cause, region string) {
		told <- fmt.Sprintln(pid, cause, region)
	}}, samples{4242: s})
	f.write(t, memcgKill(4242, "/spark/exec-3", "java")...)
	testenv.WaitFor(t, waitTimeout, "the kill to be counted", func() bool { return strings.Contains(f.logs.String(), "OOM kill") })
	got, _ := scrapeOOM(t, f.c)
	key := strings.Replace(executorKillKey, "pid=4242,", "pid=4242,region=malloc,", 1)
	if v, ok := got[key]; !ok || v != 0 {
		t.Errorf("%s = %v, %v; want present\n%v", key, v, ok, got)
	}
	for _, want := range []string{"region=malloc", "malloc grew 170 MiB", "MALLOC_ARENA_MAX"} {
		if !strings.Contains(f.logs.String(), want) {
			t.Errorf("the log line lacks %q: %s", want, f.logs.String())
		}
	}
	select {
	case got := <-told:
		if got != "4242 native malloc\n" {
			t.Errorf("the exit witness was told %q, want the kill with its region", got)
		}
	case <-time.After(waitTimeout):
		t.Error("the exit witness was not told of the kill")
	}
}
