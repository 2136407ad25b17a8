package jvm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/exits"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// exitRecorder is a tracker sampling every 100 ms in the background and
// the exits it reported.
type exitRecorder struct {
	tr    *Tracker
	mu    sync.Mutex
	exits []Exit
}

func newExitRecorder(t *testing.T) *exitRecorder {
	t.Helper()
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Sampling: SamplingConfig{Slowest: 100 * time.Millisecond}, Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	r := &exitRecorder{tr: tr}
	tr.OnScan(func(_ time.Time, _ View, gone []Exit) {
		r.mu.Lock()
		r.exits = append(r.exits, gone...)
		r.mu.Unlock()
	})
	tr.Start()
	t.Cleanup(tr.Stop)
	return r
}

// waitSeen waits until the tracker has sampled pid (n times).
func (r *exitRecorder) waitSeen(t *testing.T, pid, n int) JVM {
	t.Helper()
	var j JVM
	seen := 0
	var last time.Time
	testenv.WaitFor(t, 60*time.Second, "the tracker to sample the JVM", func() bool {
		v, err := r.tr.Current()
		if err != nil {
			return false
		}
		var ok bool
		if j, ok = findJVM(v, pid); ok && !v.Time.Equal(last) {
			seen++
			last = v.Time
		}
		return seen >= n
	})
	return j
}

// waitExit waits for the one exit of pid and checks no other was reported for it.
func (r *exitRecorder) waitExit(t *testing.T, pid int) Exit {
	t.Helper()
	var got []Exit
	testenv.WaitFor(t, 60*time.Second, "the JVM's exit", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		got = got[:0]
		for _, e := range r.exits {
			if e.End.PID == pid {
				got = append(got, e)
			}
		}
		return len(got) > 0
	})
	time.Sleep(300 * time.Millisecond) // three more scans: none may report it again
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.exits {
		if e.End.PID == pid {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("pid %d reported gone %d times", pid, n)
	}
	return got[0]
}

func exitCode(t *testing.T, j *testjvm.JVM) int { return j.ExitCode(t, 60*time.Second) }

var executorArgs = []string{"--executor-id", "5", "--app-id", "app-exits"}

// The four ways a JVM with hsperfdata ends, seen from outside it, and the
// reason the rule gives each without kernel kills or notices.
func TestTrackerExits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	for _, tc := range []struct {
		name     string
		jvmArgs  []string
		args     []string
		end      func(j *testjvm.JVM)
		wantCode int
		wantFile exits.File
		want     string
		// emptied: the heap must be nearly empty at the end, so that only
		// the last read before it can tell it was full.
		emptied bool
	}{
		{
			name: "SIGKILL leaves the file", jvmArgs: []string{"-Xmx64m"}, args: []string{"--heap-mb", "8"},
			// unshare reports its child's death by a signal inconsistently:
			// the code is not checked.
			end: func(j *testjvm.JVM) { _ = syscall.Kill(j.PID, syscall.SIGKILL) }, wantCode: -1,
			wantFile: exits.FileLeftBehind, want: exits.ReasonKilled,
		},
		{
			name: "SIGTERM: the JVM deletes it", jvmArgs: []string{"-Xmx64m"}, args: []string{"--heap-mb", "8"},
			end: func(j *testjvm.JVM) { _ = syscall.Kill(j.PID, syscall.SIGTERM) }, wantCode: 143,
			wantFile: exits.FileDeleted, want: exits.ReasonExited,
		},
		{
			// Spark's exit 52: the heap fills, full collections free
			// nothing, OutOfMemoryError reaches the uncaught-exception
			// handler, System.exit(52).
			name: "heap exhausted, exit 52", jvmArgs: []string{"-Xmx64m", "-XX:+UseG1GC"},
			args:     []string{"--spark-exit", "--heap-mb", "1000", "--step-mb", "1", "--step-ms", "40", "--churn"},
			wantCode: 52, wantFile: exits.FileDeleted, want: exits.ReasonHeapExhausted,
		},
		{
			// The task's data goes with its stack as the error unwinds, and
			// a collection empties the heap before the exit: full at the last
			// read, not at the end. The heap fills at 10 MiB/s, so that its
			// last tenth lasts a few of the tracker's 100 ms readings, as a
			// real executor's last seconds of collecting do.
			name: "heap exhausted, emptied on the way out", jvmArgs: []string{"-Xmx64m", "-XX:+UseG1GC"},
			args:     []string{"--spark-exit", "--free-on-oome", "--heap-mb", "1000", "--step-mb", "1", "--step-ms", "100", "--churn"},
			wantCode: 52, wantFile: exits.FileDeleted, want: exits.ReasonHeapExhausted, emptied: true,
		},
		{
			name: "heap exhausted under the parallel collector", jvmArgs: []string{"-Xmx64m", "-XX:+UseParallelGC"},
			args:     []string{"--spark-exit", "--heap-mb", "1000", "--step-mb", "1", "--step-ms", "40", "--churn"},
			wantCode: 52, wantFile: exits.FileDeleted, want: exits.ReasonHeapExhausted,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newExitRecorder(t)
			j := testjvm.Start(t, testjvm.InContainer(t, testjvm.Options{JVMArgs: tc.jvmArgs, Args: append(append(tc.args, executorArgs...), "--exit-after-s", "300")}))
			if j.NSPID == j.PID {
				t.Fatalf("not in its own pid namespace: pid %d", j.PID)
			}
			r.waitSeen(t, j.PID, 1)
			if tc.end != nil {
				r.waitSeen(t, j.PID, 2)
				tc.end(j)
			}
			if code := exitCode(t, j); tc.wantCode >= 0 && code != tc.wantCode {
				t.Fatalf("exit code %d, want %d", code, tc.wantCode)
			}
			e := r.waitExit(t, j.PID)
			if e.Last.ExecutorID != "5" || e.Last.AppID != "app-exits" || e.Last.Role != RoleExecutor {
				t.Errorf("identity %+v", e.Last.Identity)
			}
			if e.End.File != tc.wantFile {
				t.Errorf("file %v (%s), want %v", e.End.File, e.End.FileNote, tc.wantFile)
			}
			if !e.End.Heap.Known || e.End.Heap.Source != "final counters" {
				t.Errorf("no final counters: %+v", e.End.Heap)
			}
			if h := e.End.Heap; tc.emptied && (h.Max == 0 || float64(h.Used) >= 0.5*float64(h.Max)) {
				t.Errorf("the heap was not emptied on the way out: %d of %d bytes used at the end", h.Used, h.Max)
			}
			if !e.End.LastAlive.Before(e.End.Noticed) || e.End.Start.IsZero() {
				t.Errorf("times: %+v", e.End)
			}
			if v := exits.Decide(exits.Death{End: e.End}, nil, nil); v.Reason != tc.want {
				t.Errorf("reason %q, want %q: %s; %+v", v.Reason, tc.want, v.Evidence, e.End.Heap)
			} else {
				t.Logf("%s: %s", v.Reason, v.Evidence)
			}
		})
	}
}

// JVMs that publish no hsperfdata are found from /proc, with their
// identity, memory and why they have no counters; their end is unknown
// unless something else tells it.
func TestTrackerBareJVMs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	r := newExitRecorder(t)
	for _, tc := range []struct {
		flag, want string
	}{
		{"-XX:+PerfDisableSharedMem", CountersSharedMemDisabled},
		{"-XX:-UsePerfData", CountersPerfDataOff},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m", tc.flag},
				Args: append([]string{"--heap-mb", "8", "--exit-after-s", "300"}, executorArgs...)})
			got := r.waitSeen(t, j.PID, 1)
			if got.Counters != tc.want || got.ExecutorID != "5" || got.AppID != "app-exits" || got.Xmx != "32m" {
				t.Errorf("JVM %+v", got)
			}
			if got.RSSJVM == 0 || !got.HasCgroup || got.HeapMax != 0 {
				t.Errorf("memory: rss %d, cgroup %v, heap max %d", got.RSSJVM, got.HasCgroup, got.HeapMax)
			}
			if s, ok := r.tr.LastSample(j.PID); !ok || s.ExecutorID != "5" {
				t.Errorf("no last sample for OOM attribution: %+v", s)
			}
			_ = syscall.Kill(j.PID, syscall.SIGKILL)
			e := r.waitExit(t, j.PID)
			if e.End.File != exits.FileUnknown || e.End.Heap.Known {
				t.Errorf("death %+v", e.End)
			}
			if v := exits.Decide(exits.Death{End: e.End}, nil, nil); v.Reason != exits.ReasonUnknown {
				t.Errorf("reason %q: %s", v.Reason, v.Evidence)
			}
		})
	}
}

// A JVM that starts in the same /tmp as the user's dead JVM deletes its
// file: its absence then proves no orderly exit, and the end is not judged
// from it.
func TestTrackerExitFileDeletedByAnotherJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	var gone []Exit
	tr.OnScan(func(_ time.Time, _ View, g []Exit) { gone = append(gone, g...) })
	a := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Args: append([]string{"--exit-after-s", "300"}, executorArgs...)})
	if _, ok := findJVM(mustRefresh(t, tr), a.PID); !ok {
		t.Fatalf("JVM %d not tracked", a.PID)
	}
	_ = syscall.Kill(a.PID, syscall.SIGKILL)
	<-a.Done()
	// b cleans /tmp/hsperfdata_root of a's file while it starts.
	b := testjvm.Start(t, testjvm.Options{MainClass: testjvm.IdleClass, JVMArgs: []string{"-Xmx32m"}, Args: []string{"--exit-after-s", "300"}})
	if _, err := os.Stat(fmt.Sprintf("/tmp/hsperfdata_root/%d", a.PID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the killed JVM's file is still there (%v): nothing to test", err)
	}
	mustRefresh(t, tr)
	var e *Exit
	for i := range gone {
		if gone[i].End.PID == a.PID {
			e = &gone[i]
		}
	}
	if e == nil {
		t.Fatalf("no exit for %d: %+v", a.PID, gone)
	}
	if e.End.File != exits.FileUnknown || !strings.Contains(e.End.FileNote, strconv.Itoa(b.PID)) {
		// Another test's JVM may have cleaned it first: any java process
		// started since will do, b is only the one certain to.
		if e.End.File != exits.FileUnknown || !strings.Contains(e.End.FileNote, "started in the same /tmp") {
			t.Errorf("file %v (%s), want unknown naming a JVM started since", e.End.File, e.End.FileNote)
		}
	}
	if v := exits.Decide(exits.Death{End: e.End}, nil, nil); v.Reason != exits.ReasonUnknown {
		t.Errorf("reason %q: %s", v.Reason, v.Evidence)
	}
}

// A file deleted by something else while the JVM runs on (a /tmp cleaner)
// says nothing of the JVM's end; the JVM's own unlink at an orderly exit,
// which a scan may catch just before the process goes, still does.
func TestTrackerFileDeletedWhileRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	r := newExitRecorder(t)
	j := testjvm.Start(t, testjvm.InContainer(t, testjvm.Options{JVMArgs: []string{"-Xmx64m"},
		Args: append([]string{"--heap-mb", "8", "--exit-after-s", "300"}, executorArgs...)}))
	r.waitSeen(t, j.PID, 1)
	file := fmt.Sprintf("/proc/%d/root/tmp/hsperfdata_root/%d", j.PID, j.NSPID)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	// Without its file the JVM is no longer read, but it is still alive.
	time.Sleep(unlinkedGrace + time.Second)
	if _, ok := r.tr.LastSample(j.PID); !ok {
		t.Fatal("the JVM's last sample is gone while it runs")
	}
	_ = syscall.Kill(j.PID, syscall.SIGTERM)
	exitCode(t, j)
	e := r.waitExit(t, j.PID)
	if e.End.File != exits.FileUnknown || !strings.Contains(e.End.FileNote, "deleted while the JVM ran") {
		t.Errorf("file %v (%s), want unknown: deleted while the JVM ran", e.End.File, e.End.FileNote)
	}
}
