package collector

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/oom"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// TestOOMRegionOfAFastLeak: a native leak that the kernel ends within
// seconds of its start, long before the breakdown by region is read again,
// is still counted with its region — inferred by elimination from the last
// sample's hsperfdata against the JVM's breakdown and from the kernel's
// report of the kill — in executor_oom_kills_total's region label and on
// the status page. Real JVMs (the Leak stand-in) in 256 MiB memory
// cgroups, the real tracker, and the oom collector following /dev/kmsg.
func TestOOMRegionOfAFastLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("JVMs killed in memory cgroups")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		testenv.Unavailable(t, "no /dev/kmsg: %v", err)
	}
	shm := "/dev/shm/executor-exporter-region-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		files, _ := filepath.Glob(shm + "*")
		for _, f := range files {
			os.Remove(f)
		}
	})
	for _, tc := range []struct {
		name, region string
		args         []string
	}{
		// 16 MiB of direct buffers every 100 ms: no counter tells them
		// from malloc.
		{"direct buffers", oom.RegionDirectOrMalloc, []string{"--kind", "direct-large", "--rate-mb-s", "160", "--step-mb", "16"}},
		{"generated classes", "metaspace", []string{"--kind", "classes", "--rate-mb-s", "64", "--step-mb", "8"}},
		{"threads", "thread_stacks", []string{"--kind", "threads", "--stack-kb", "64", "--rate-mb-s", "64", "--step-mb", "8"}},
		{"tmpfs", "shmem", []string{"--kind", "shm", "--file", shm, "--rate-mb-s", "160", "--step-mb", "16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One breakdown, when the JVM is found, and no other for
			// minutes: none sees the leak.
			native := jvm.DefaultNativeConfig
			native.MinInterval = 30 * time.Minute
			tr, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", Sampling: jvm.DefaultSampling,
				Retention: 5 * time.Minute, MaxProcesses: 100, Native: native}, log.NewNopLogger())
			if err != nil {
				t.Fatal(err)
			}
			tr.Start()
			t.Cleanup(tr.Stop)
			logs := &testenv.Buffer{}
			c, err := NewOOMCollector(OOMConfig{KmsgPath: "/dev/kmsg", Retention: time.Hour, MaxSeries: 100}, tr, log.NewLogfmtLogger(logs))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.(Stopper).Stop)

			cg := testenv.NewMemoryCgroup(t, 256<<20)
			j := testjvm.Start(t, testjvm.Options{
				JVMArgs: []string{"-Xmx32m", "-XX:+UseSerialGC", "-XX:MaxDirectMemorySize=2g"},
				Args: append([]string{"--leak", "--executor-id", "7", "--app-id", "app-region",
					"--on-signal", "USR1", "--target-mb", "2048"}, tc.args...),
				Cgroup: cg.Procs(),
			})
			testenv.WaitFor(t, 60*time.Second, "the JVM's breakdown by region", func() bool {
				s, ok := tr.LastSample(j.PID)
				return ok && s.Native != nil
			})
			if err := syscall.Kill(j.PID, syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			leak := time.Now()
			select {
			case <-j.Done():
			case <-time.After(90 * time.Second):
				t.Fatal("the leaking JVM was not killed")
			}
			t.Logf("killed %v into the leak", time.Since(leak).Round(100*time.Millisecond))
			if cg.OOMKills(t) == 0 {
				t.Fatalf("the JVM ended without an OOM kill in its cgroup: %v", j.Err())
			}
			pid := "pid=" + strconv.Itoa(j.PID) + ","
			var key string
			testenv.WaitFor(t, 30*time.Second, "the kill to be counted", func() bool {
				got, _ := scrapeOOM(t, c)
				for k := range got {
					if strings.HasPrefix(k, "executor_oom_kills_total{") && strings.Contains(k, pid) {
						key = k
						return true
					}
				}
				return false
			})
			if !strings.Contains(key, "cause=native") || !strings.Contains(key, "region="+tc.region+",") {
				t.Errorf("counted as %s, want cause native, region %s\n%s", key, tc.region, logs)
			}

			var snap statuspage.Snapshot
			c.(*oomCollector).reportStatus(&snap)
			// Other kills on the machine are on the page too.
			i := slices.IndexFunc(snap.Kills, func(k statuspage.Kill) bool { return k.PID == j.PID })
			if i < 0 {
				t.Fatal("the kill is not on the status page")
			}
			k := snap.Kills[i]
			t.Logf("verdict: %s: %s; %s", k.Region, k.Reason, k.Advice)
			if k.Region != tc.region || !strings.Contains(k.Reason, "inferred by elimination") {
				t.Errorf("status page: region %q, reason %q; want %s, inferred", k.Region, k.Reason, tc.region)
			}
			var page bytes.Buffer
			if err := statuspage.Render(&page, &snap); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(page.String(), `<span class="region">`+tc.region+`</span>`) {
				t.Errorf("the status page does not show region %s", tc.region)
			}
		})
	}
}
