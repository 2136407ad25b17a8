package jvm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// Each kind of native leak, in a JVM of its own in a memory cgroup of its
// own, is named by the tracker's breakdown as what grew most since the
// JVM's start-up, by 64 MiB at least and with at least half of what grew
// outside the heap: as an OOM verdict would name it. The leaks start after
// the start-up (shortened to 10 s here).
func TestNativeBreakdownNamesEachLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six JVMs")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	cfg := DefaultNativeConfig
	cfg.Startup, cfg.MinInterval = 10*time.Second, 2*time.Second
	logs := &testenv.Buffer{} // the tracker's: a breakdown that cannot be read is logged
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Sampling: SamplingConfig{Slowest: time.Second}, Retention: time.Minute,
		MaxProcesses: 100, MaxAge: time.Second, Native: cfg}, log.NewLogfmtLogger(logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	tr.Start()
	shm := filepath.Join("/dev/shm", "executor-exporter-leak-"+t.Name()[len("TestNative"):])
	mapped := filepath.Join(t.TempDir(), "mapped")
	t.Cleanup(func() { os.Remove(shm) })

	for _, tc := range []struct {
		kind, region string
		args         []string
	}{
		{"direct-large", "native_mmap", nil},
		{"direct-small", "malloc", nil},
		{"threads", "thread_stacks", []string{"--threads", "1000", "--stack-kb", "160"}},
		{"classes", "metaspace", []string{"--target-mb", "120"}},
		{"mapped", "mapped_files", []string{"--file", mapped}},
		{"shm", nativemem.Shmem, []string{"--file", shm}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			cg := testenv.NewMemoryCgroup(t, 1<<30)
			j := testjvm.Start(t, testjvm.Options{
				MainClass: "standin.Leak",
				JVMArgs:   []string{"-Xmx128m", "-XX:MaxDirectMemorySize=1g", "-XX:+UseG1GC"},
				// The leak starts after the start-up, whose last breakdown is the base.
				Args:   append([]string{"--kind", tc.kind, "--after-s", "15"}, tc.args...),
				Cgroup: cg.Procs(),
			})
			waitLine(t, j, "leaked", 90*time.Second)
			// The breakdown that names the leak may be one read while it
			// ran, before the JVM said it was done: at least minGrowth of
			// the region, which no start-up grows, tells it from the base.
			const minGrowth = 64 << 20
			var g nativemem.Growth
			defer func() {
				if t.Failed() {
					reads, checks := tr.NativeReads()
					t.Logf("%s: last growth %s (region %q, %d of %d MiB); %d reads, %d checks; %s; the tracker's log:\n%s",
						tc.kind, g, g.Region, g.Bytes>>20, g.Total>>20, reads, checks, nativeDiagnosis(tr, j.PID, time.Now()), logs.String())
				}
			}()
			testenv.WaitFor(t, 120*time.Second, tc.kind+" named as what grew", func() bool {
				s, ok := tr.LastSample(j.PID)
				if !ok || s.Native == nil {
					return false
				}
				g = s.Native.Growth()
				return g.Region == tc.region && g.Bytes >= minGrowth && float64(g.Bytes) >= 0.5*float64(g.Total)
			})
			t.Logf("%s: %s (net growth outside the heap %d MiB)", tc.kind, g, g.Total>>20)
		})
	}
}

// waitLine waits for the JVM to print line.
func waitLine(t *testing.T, j *testjvm.JVM, line string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-j.Lines:
			if !ok {
				t.Fatalf("the JVM ended before printing %q", line)
			}
			if strings.TrimSpace(l) == line {
				return
			}
		case <-deadline:
			t.Fatalf("the JVM did not print %q within %v", line, timeout)
		}
	}
}

// nativeDiagnosis says what the native loop decides from for pid: the JVM
// in the tracker's last view and its record's breakdown state.
func nativeDiagnosis(tr *Tracker, pid int, now time.Time) string {
	view := tr.Last()
	out := fmt.Sprintf("view of %s ago", now.Sub(view.Time).Round(time.Millisecond))
	for i := range view.JVMs {
		if j := &view.JVMs[i]; j.PID == pid {
			out += fmt.Sprintf("; in it: counters %q, start %s, rss %d MiB, heap committed %d MiB, cgroup %d of %d MiB, read %s ago",
				j.Counters, j.ProcessStart.Format(time.StampMilli), j.RSSJVM>>20, j.HeapCommitted>>20, j.CgroupUsage>>20, j.CgroupLimit>>20, now.Sub(j.Time).Round(time.Millisecond))
		}
	}
	tr.recs.mu.RLock()
	rec := tr.recs.m[pid]
	tr.recs.mu.RUnlock()
	if rec == nil {
		return out + "; no record"
	}
	tr.native.mu.Lock()
	defer tr.native.mu.Unlock()
	out += fmt.Sprintf("; record of a process started %s", rec.start.Format(time.StampMilli))
	if s := rec.native; s != nil {
		out += fmt.Sprintf(", tried %s ago, non-heap %d MiB, usage %d MiB, band %d, breakdown %v", now.Sub(s.tried).Round(time.Millisecond), s.nonHeap>>20, s.usage>>20, s.band, s.mem != nil)
	}
	return out
}
