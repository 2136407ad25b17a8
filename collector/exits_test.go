package collector

import (
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/exits"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/jvmend"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

type exitsFixture struct {
	c    *exitsCollector
	w    *exitWitness
	logs *testenv.Buffer
	now  time.Time
}

func newExitsFixture(t *testing.T, cfg ExitsConfig) *exitsFixture {
	t.Helper()
	tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", MaxProcesses: 10}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	f := &exitsFixture{w: newExitWitnessOf(nil), logs: &testenv.Buffer{}, now: time.Unix(1_800_000_000, 0)}
	c, err := newExitsCollector(cfg, tracker, f.w, log.NewLogfmtLogger(f.logs))
	if err != nil {
		t.Fatal(err)
	}
	f.c = c.(*exitsCollector)
	f.c.now = func() time.Time { return f.now }
	return f
}

var defaultExitsConfig = ExitsConfig{Retention: time.Hour, MaxSeries: 10}

// gone reports one executor found gone now, last seen alive a second ago.
func (f *exitsFixture) gone(pid int, executorID string, file exits.File) {
	s := jvm.Sample{Identity: jvm.Identity{PID: pid, Role: jvm.RoleExecutor, AppID: "app-1", ExecutorID: executorID}, Time: f.now.Add(-time.Second),
		HeapUsed: 100 << 20, HeapMax: 1 << 30, RSSJVM: 300 << 20}
	f.w.Gone(f.now, []jvm.Exit{{Last: s, End: jvmend.End{PID: pid, Start: f.now.Add(-time.Hour), LastAlive: s.Time, Noticed: f.now, File: file,
		Heap: exits.Heap{Known: true, Source: "final counters", Used: s.HeapUsed, Max: s.HeapMax}}}})
}

func exitKey(pid, executorID, reason string) string {
	return "executor_jvm_exits_total{app_id=app-1,executor_id=" + executorID + ",pid=" + pid + ",reason=" + reason + ",role=executor}"
}

func TestExitsCollectorCountsOnceAndShowsZeroFirst(t *testing.T) {
	f := newExitsFixture(t, defaultExitsConfig)
	f.gone(101, "1", exits.FileLeftBehind)
	got, _ := scrapeOOM(t, f.c)
	if len(got) != 1 || got["executor_jvm_exits_series_dropped_total{}"] != 0 {
		t.Fatalf("counted before the delay for a late kill record: %v", got)
	}
	f.now = f.now.Add(2 * time.Second)
	f.w.Killed(101, f.now, "heap", "") // read after the JVM vanished
	key := exitKey("101", "1", exits.ReasonOOMKilled)
	for i, want := range []float64{0, 1, 1} {
		got, _ = scrapeOOM(t, f.c)
		if v, ok := got[key]; !ok || v != want {
			t.Fatalf("scrape %d: %s = %v (present %v), want %v; all: %v", i, key, v, ok, want, got)
		}
		f.now = f.now.Add(10 * time.Second)
	}
	if n := strings.Count(f.logs.String(), "JVM ended"); n != 1 {
		t.Fatalf("%d log lines for one death:\n%s", n, f.logs.String())
	}
	for _, want := range []string{"Spark executor 1 of app-1 (pid 101)", "reason=oom_killed", "kernel OOM kill (cause heap)", "hsperfdata_file=left_behind", "heap_used_mib=100.0"} {
		if !strings.Contains(f.logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, f.logs.String())
		}
	}
}

func TestExitsCollectorReasonsWithoutKills(t *testing.T) {
	f := newExitsFixture(t, defaultExitsConfig)
	f.gone(201, "1", exits.FileLeftBehind)
	f.gone(202, "2", exits.FileDeleted)
	f.gone(203, "3", exits.FileUnknown)
	f.now = f.now.Add(exits.DefaultConfig.Delay)
	scrapeOOM(t, f.c) // decides, shows 0
	got, _ := scrapeOOM(t, f.c)
	for _, key := range []string{exitKey("201", "1", exits.ReasonKilled), exitKey("202", "2", exits.ReasonExited), exitKey("203", "3", exits.ReasonUnknown)} {
		if got[key] != 1 {
			t.Errorf("%s = %v; all: %v", key, got[key], got)
		}
	}
	if !strings.Contains(f.logs.String(), "level=info") || !strings.Contains(f.logs.String(), "level=warn") {
		t.Errorf("an orderly exit is info, a kill a warning:\n%s", f.logs.String())
	}

	var s statuspage.Snapshot
	f.c.reportStatus(&s)
	if !s.ExitsCounted || len(s.Exits) != 3 || s.Exits[0].Detail == "" {
		t.Fatalf("status: %+v", s)
	}
}

func TestExitsCollectorInterruption(t *testing.T) {
	f := newExitsFixture(t, defaultExitsConfig)
	pending := []string{}
	f.w.WatchNotices(func() []string { return pending })
	f.gone(301, "1", exits.FileDeleted)
	f.now = f.now.Add(3 * time.Second)
	pending = []string{"spot_interruption"} // polled only after the JVM went
	f.w.Decide(f.now)
	f.now = f.now.Add(2 * time.Second)
	scrapeOOM(t, f.c)
	if got, _ := scrapeOOM(t, f.c); got[exitKey("301", "1", exits.ReasonInterrupted)] != 1 {
		t.Fatalf("not interrupted: %v\n%s", got, f.logs.String())
	}
}

func TestExitsCollectorBoundsAndRetention(t *testing.T) {
	f := newExitsFixture(t, ExitsConfig{Retention: time.Hour, MaxSeries: 2, NewSeriesHold: time.Minute})
	for i, pid := range []int{1, 2, 3} {
		f.gone(pid, string(rune('a'+i)), exits.FileDeleted)
		f.now = f.now.Add(exits.DefaultConfig.Delay)
		f.w.Decide(f.now)
	}
	got, _ := scrapeOOM(t, f.c)
	if len(got) != 3 || got["executor_jvm_exits_series_dropped_total{}"] != 1 {
		t.Fatalf("want 2 series and 1 dropped: %v", got)
	}
	if _, ok := got[exitKey("1", "a", exits.ReasonExited)]; ok {
		t.Error("the oldest series was kept")
	}
	f.now = f.now.Add(30 * time.Second)
	if got, _ = scrapeOOM(t, f.c); got[exitKey("3", "c", exits.ReasonExited)] != 0 {
		t.Errorf("a series younger than the hold reads %v", got[exitKey("3", "c", exits.ReasonExited)])
	}
	f.now = f.now.Add(time.Minute)
	if got, _ = scrapeOOM(t, f.c); got[exitKey("3", "c", exits.ReasonExited)] != 1 {
		t.Errorf("after the hold: %v", got)
	}
	f.now = f.now.Add(time.Hour)
	if got, _ = scrapeOOM(t, f.c); len(got) != 1 {
		t.Errorf("series kept past retention: %v", got)
	}
}

func TestNewExitsCollectorRejectsBadConfig(t *testing.T) {
	tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", MaxProcesses: 10}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []ExitsConfig{{Retention: time.Hour}, {MaxSeries: 1}} {
		if _, err := newExitsCollector(cfg, tracker, newExitWitnessOf(nil), log.NewNopLogger()); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// A death that waits for a late kill record is decided when the delay is
// over, scrape or no scrape.
func TestExitsDecidedWithoutScrape(t *testing.T) {
	f := newExitsFixture(t, defaultExitsConfig)
	f.now = time.Now()
	f.gone(401, "1", exits.FileLeftBehind)
	testenv.WaitFor(t, 30*time.Second, "the exit decided", func() bool {
		var s statuspage.Snapshot
		f.c.reportStatus(&s)
		return len(s.Exits) == 1 && s.Exits[0].Reason == exits.ReasonKilled
	})
}
