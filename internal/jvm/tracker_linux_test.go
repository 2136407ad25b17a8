package jvm

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

func newLiveTracker(t testing.TB, logger log.Logger) *Tracker {
	t.Helper()
	if logger == nil {
		logger = log.NewNopLogger()
	}
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return tr
}

func mustRefresh(t testing.TB, tr *Tracker) View {
	t.Helper()
	v, err := tr.Refresh()
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	return v
}

func findJVM(v View, pid int) (JVM, bool) {
	for _, j := range v.JVMs {
		if j.PID == pid {
			return j, true
		}
	}
	return JVM{}, false
}

// TestTrackerNoPerfData: a JVM run with -XX:-UsePerfData has no file; it
// is found from /proc all the same, says why it has no counters, and is not
// an error.
func TestTrackerNoPerfData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	j := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, JVMArgs: []string{"-Xmx32m", "-XX:-UsePerfData"}, Args: []string{"--exit-after-s", "300"}})
	var logs bytes.Buffer
	tr := newLiveTracker(t, log.NewLogfmtLogger(log.NewSyncWriter(&logs)))
	view := mustRefresh(t, tr)
	if got, ok := findJVM(view, j.PID); !ok || got.Counters != CountersPerfDataOff || got.MainClass != testjvm.IdleClass {
		t.Fatalf("a JVM without perf data: found %v, %+v", ok, got)
	}
	if strings.Contains(logs.String(), "pid="+strconv.Itoa(j.PID)) {
		t.Errorf("a JVM without perf data was logged as a failure:\n%s", logs.String())
	}
}

// TestTrackerJVMExitsMidScrape kills a JVM while scrapes run back to back:
// no scan fails, the JVM disappears from the view, and its last sample is
// kept for the OOM collector.
func TestTrackerJVMExitsMidScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx64m"},
		Args: []string{"--executor-id", "3", "--app-id", "app-exit", "--heap-mb", "8", "--exit-after-s", "300"}})
	tr := newLiveTracker(t, nil)
	if _, ok := findJVM(mustRefresh(t, tr), j.PID); !ok {
		t.Fatalf("JVM %d not found", j.PID)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := tr.Refresh(); err != nil {
					errs <- err
				}
				tr.LastSample(j.PID)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	j.Kill()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Refresh while a JVM exits: %v", err)
	}

	view := mustRefresh(t, tr)
	if _, ok := findJVM(view, j.PID); ok {
		t.Errorf("dead JVM %d still in the view", j.PID)
	}
	s, ok := tr.LastSample(j.PID)
	if !ok {
		t.Fatalf("no last sample for dead JVM %d", j.PID)
	}
	if s.Role != RoleExecutor || s.ExecutorID != "3" || s.AppID != "app-exit" || s.HeapMax != 64<<20 || s.RSSJVM == 0 {
		t.Errorf("last sample = %+v", s)
	}

	// With no retention the sample goes at the next scan.
	tr.cfg.Retention = 0
	time.Sleep(time.Millisecond)
	mustRefresh(t, tr)
	if _, ok := tr.LastSample(j.PID); ok {
		t.Errorf("sample of dead JVM %d kept past its retention", j.PID)
	}
}

// TestTrackerMaxProcesses: with a cap of one, one of two JVMs is read and
// the other is counted as dropped; the one read stays the same.
func TestTrackerMaxProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	for i := 0; i < 2; i++ {
		testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, JVMArgs: []string{"-Xmx16m"}, Args: []string{"--exit-after-s", "300"}})
	}
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	first := mustRefresh(t, tr)
	if len(first.JVMs) != 1 || first.Dropped < 1 {
		t.Fatalf("cap 1: %d JVMs, %d dropped", len(first.JVMs), first.Dropped)
	}
	time.Sleep(10 * time.Millisecond)
	again := mustRefresh(t, tr)
	if len(again.JVMs) != 1 {
		t.Fatalf("cap 1: %d JVMs on the second scan", len(again.JVMs))
	}
	// The first one may be another test's JVM that has exited since.
	if _, alive := findJVM(View{JVMs: again.JVMs}, first.JVMs[0].PID); !alive && syscall.Kill(first.JVMs[0].PID, 0) == nil {
		t.Errorf("the tracked JVM changed from %d to %d while it still runs", first.JVMs[0].PID, again.JVMs[0].PID)
	}
}

// TestTrackerBackground: started, the tracker samples on its own, so an
// OOM kill between scrapes still finds a recent sample; Stop ends it.
func TestTrackerBackground(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Args: []string{"--executor-id", "4", "--app-id", "app-bg", "--heap-mb", "4", "--exit-after-s", "300"}})
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Sampling: SamplingConfig{Slowest: 100 * time.Millisecond}, Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	tr.Start()
	tr.Start() // idempotent
	var first Sample
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("two background samples of JVM %d (no Refresh call)", j.PID), func() bool {
		s, ok := tr.LastSample(j.PID)
		if ok && first.Time.IsZero() {
			first = s
		}
		return ok && s.Time.After(first.Time)
	})
	if first.Role != RoleExecutor || first.ExecutorID != "4" || first.NSPID != j.NSPID || first.HeapCommitted == 0 {
		t.Errorf("sample = %+v", first)
	}
	tr.Stop()
	tr.Stop() // idempotent
	stopped, _ := tr.LastSample(j.PID)
	time.Sleep(300 * time.Millisecond)
	if after, _ := tr.LastSample(j.PID); after.Time != stopped.Time {
		t.Errorf("sampling went on after Stop: %v then %v", stopped.Time, after.Time)
	}

	var never *Tracker
	if _, ok := never.LastSample(1); ok {
		t.Error("a nil tracker knows a JVM")
	}
	idle, err := NewTracker(Config{ProcFS: "/proc", MaxProcesses: 1}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	idle.Stop() // never started: must not hang
	if _, err := NewTracker(Config{ProcFS: "/proc"}, log.NewNopLogger()); err == nil {
		t.Error("a tracker with no room for JVMs was built")
	}
}

func TestParseFailureGivesStartingJVMsGrace(t *testing.T) {
	now := time.Now()
	notReady := fmt.Errorf("prologue: %w", hsperf.ErrNotAccessible)
	for _, tc := range []struct {
		name    string
		err     error
		started time.Time
		want    string
	}{
		{"starting JVM not yet accessible", notReady, now.Add(-time.Second), ""},
		{"old JVM never accessible", notReady, now.Add(-time.Hour), ReasonCorrupt},
		{"starting JVM with a bad magic", hsperf.ErrBadMagic, now.Add(-time.Second), ReasonCorrupt},
	} {
		if got := parseFailure(tc.err, tc.started, now); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCurrentServesAViewYoungerThanMaxAge(t *testing.T) {
	for _, tc := range []struct {
		maxAge time.Duration
		reuse  bool
	}{
		{maxAge: time.Hour, reuse: true},
		{maxAge: 0, reuse: false},
	} {
		tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 10, MaxAge: tc.maxAge}, log.NewNopLogger())
		if err != nil {
			t.Fatal(err)
		}
		first, err := tr.Current()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // so a second scan has a later time
		second, err := tr.Current()
		if err != nil {
			t.Fatal(err)
		}
		if reused := second.Time.Equal(first.Time); reused != tc.reuse {
			t.Errorf("MaxAge %v: second view reused = %v, want %v", tc.maxAge, reused, tc.reuse)
		}
	}
}

// newHourlyTracker is a tracker whose JVMs, once read, are not due for an
// hour, scanned only when the test calls scan.
func newHourlyTracker(t *testing.T) *Tracker {
	t.Helper()
	hour := time.Hour
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Sampling: SamplingConfig{Slowest: hour, AtRisk: hour, Fastest: hour, Discovery: hour},
		Retention: time.Minute, EndedRetention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return tr
}

// A background scan that would read nothing keeps the last view as it is:
// with the process table unchanged, nothing due and none ended, it is idle
// and reads nothing. A JVM falling due, or ending, makes a new view. (The
// table's own Changed is tested in procmem: on a machine running other
// tests, a real one changes at every scan.)
func TestIdleScanKeepsTheView(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Args: []string{"--executor-id", "7", "--app-id", "app-idle", "--exit-after-s", "300"}})
	tr := newHourlyTracker(t)
	var beats int
	tr.OnScan(func(time.Time, View, []Exit) { beats++ })
	scan := func() (View, bool) {
		t.Helper()
		v, made, err := tr.scan(false)
		if err != nil {
			t.Fatal(err)
		}
		tr.view = v // as sampleInBackground keeps it
		return v, made
	}
	first, made := scan()
	if _, ok := findJVM(first, j.PID); !ok || !made {
		t.Fatalf("the first scan: JVM %d read %v, a view made %v", j.PID, ok, made)
	}
	now := time.Now()
	if !tr.idle(false, now) {
		t.Fatal("nothing due, nothing ended, the table unchanged: not idle")
	}
	if tr.idle(true, now) {
		t.Error("idle though the process table changed")
	}
	reads, before := tr.Reads(), beats
	if v := tr.keepView(now); !v.Time.Equal(first.Time) || tr.Reads() != reads || beats != before+1 {
		t.Errorf("an idle scan: view of %v (first %v), %d reads, %d heartbeats; want the first view, no read, one heartbeat",
			v.Time, first.Time, tr.Reads()-reads, beats-before)
	}
	for _, jv := range first.JVMs {
		tr.sched.plan(jv.PID, jv.ProcessStart, time.Time{}, true)
	}
	if tr.idle(false, time.Now()) {
		t.Error("idle though every JVM is due")
	}
	if v, made := scan(); !made || tr.Reads() == reads {
		t.Errorf("JVMs due: a view made %v, %d reads; want a new view that read them", made, tr.Reads()-reads)
	} else if jv, ok := findJVM(v, j.PID); !ok || !jv.Time.Equal(v.Time) {
		t.Errorf("JVM %d due but not read: %v, %v", j.PID, jv.Time, ok)
	}
	j.Kill()
	<-j.Done()
	if tr.idle(false, time.Now()) {
		t.Error("idle though a JVM ended")
	}
}

// A scan of a changed process table keeps the view when the processes
// that came and went are none of the JVMs (a probe, a script), and makes
// a new one, with the JVM read, when one of them is a JVM.
func TestScanKeepsTheViewWhenOnlyOtherProcessesChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Args: []string{"--executor-id", "8", "--app-id", "app-settled", "--exit-after-s", "300"}})
	tr := newHourlyTracker(t)
	scan := func() (View, bool) {
		t.Helper()
		v, made, err := tr.scan(false)
		if err != nil {
			t.Fatal(err)
		}
		if made {
			tr.view = v // as sampleInBackground keeps it
		}
		return v, made
	}
	if v, _ := scan(); !hasJVM(v, j.PID) {
		t.Fatalf("the first scan did not read JVM %d", j.PID)
	}
	// Other tests start JVMs of their own, which rightly make a new view:
	// a few tries, each with a process of its own that starts and ends.
	kept := false
	for try := 0; try < 5 && !kept; try++ {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
		sleeper := exec.Command("sleep", "30")
		if err := sleeper.Start(); err != nil {
			t.Fatal(err)
		}
		reads := tr.Reads()
		v, made := scan()
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
		kept = !made && tr.Reads() == reads && hasJVM(v, j.PID)
	}
	if !kept {
		t.Fatal("a process that is no JVM started and another ended: every scan made a new view")
	}
	other := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Args: []string{"--executor-id", "9", "--app-id", "app-settled", "--exit-after-s", "300"}})
	deadline := time.Now().Add(time.Minute)
	for {
		v, made := scan()
		if made && hasJVM(v, other.PID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("JVM %d started after the view was kept, never read (last view made %v)", other.PID, made)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func hasJVM(v View, pid int) bool {
	_, ok := findJVM(v, pid)
	return ok
}

// A JVM found gone leaves the view in that scan, though its reading was
// kept: past its youth, a SIGKILLed JVM's file and pid stay among the
// candidates until the process table's next full listing.
func TestEndedJVMLeavesTheViewAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	started := time.Now()
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Args: []string{"--executor-id", "6", "--app-id", "app-end", "--exit-after-s", "300"}})
	tr := newHourlyTracker(t)
	scan := func() View {
		t.Helper()
		v, _, err := tr.scan(true)
		if err != nil {
			t.Fatal(err)
		}
		tr.view = v
		return v
	}
	scan()
	time.Sleep(time.Until(started.Add(procmem.YoungFor + time.Second)))
	v, _, err := tr.scan(false) // keeps the reading: not due for an hour
	if err != nil {
		t.Fatal(err)
	}
	tr.view = v
	if _, ok := findJVM(v, j.PID); !ok {
		t.Fatalf("JVM %d gone before its end", j.PID)
	}
	j.Kill()
	<-j.Done()
	v, _, err = tr.scan(false)
	if err != nil {
		t.Fatal(err)
	}
	ended := false
	for _, s := range v.Ended {
		ended = ended || s.PID == j.PID
	}
	if _, live := findJVM(v, j.PID); live || !ended {
		t.Errorf("the scan after JVM %d was killed: in the view %v, among the ended %v; want false, true", j.PID, live, ended)
	}
}
