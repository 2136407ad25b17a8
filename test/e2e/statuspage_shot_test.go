package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// TestStatusPageNativeKill: what an on-call engineer finds on a spot
// machine after a native OOM kill. One executor of a Spark application
// runs healthy with a PySpark worker; another leaks 64 KiB direct buffers
// from several threads (glibc's arenas) after its first minute until its
// container's limit kills it. The kill card must name the region (malloc),
// by how much it grew, and the arena advice, on /status.json and in the
// page Chromium renders. Its screenshot is the README's (-update writes
// docs/img/status-page.png).
func TestStatusPageNativeKill(t *testing.T) {
	testenv.RequireRoot(t)
	requireKmsg(t)
	testjvm.RequireJava(t)
	testjvm.Classpath(t)
	chromium := testenv.RequireTool(t, "chromium")

	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	imds.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2030-01-02T03:04:05Z"}`)
	liveCg := testenv.NewMemoryCgroup(t, 768<<20)
	killCg := testenv.NewMemoryCgroup(t, 448<<20)
	e := startExporter(t, "--cloud.provider=aws", "--cloud.aws.metadata-url="+imds.URL, "--cloud.interruption-poll-interval=100ms")

	const app = "spark-7d2c1e5a9f3b4c6e8a0b2d4f6e8a0c2e"
	live := testjvm.Start(t, testjvm.Options{
		Cgroup:  liveCg.Procs(),
		JVMArgs: []string{"-Xmx384m", "-XX:+UseG1GC"},
		Args:    []string{"--scenario", "--executor-id", "1", "--app-id", app, "--live-mb", "120", "--churn-mb-s", "10", "--python-mb", "60", "--exit-after-s", "400"},
	})
	victim := testjvm.Start(t, testjvm.Options{
		Cgroup:  killCg.Procs(),
		JVMArgs: []string{"-Xmx256m", "-XX:MaxDirectMemorySize=2g", "-XX:+UseG1GC"},
		Args: []string{"--leak", "--executor-id", "2", "--app-id", app, "--kind", "direct-small",
			"--after-s", "65", "--rate-mb-s", "8", "--target-mb", "2048", "--exit-after-s", "400"},
	})
	select {
	case <-victim.Done():
	case <-time.After(4 * time.Minute):
		t.Fatal("the leaking executor was not OOM-killed within 4 minutes")
	}

	var status statuspage.Snapshot
	testenv.WaitFor(t, 60*time.Second, "/status.json to hold the kill, the machine and the live executor", func() bool {
		status = getStatus(t, e)
		return findKill(status, victim.PID) != nil && status.Machine != nil && len(status.Machine.Notices) > 0 &&
			findJVM(status, live.PID) != nil && findJVM(status, live.PID).RSSPython > 0
	})
	k := findKill(status, victim.PID)
	if k.Cause != "native" || k.Region != "malloc" || !strings.Contains(k.Reason, "malloc grew") || !strings.Contains(k.Advice, "MALLOC_ARENA_MAX") {
		t.Errorf("status.json kill: cause %q, region %q, reason %q, advice %q; want native, malloc, how much it grew, the arena advice",
			k.Cause, k.Region, k.Reason, k.Advice)
	}

	dom := chromiumDumpDOM(t, chromium, "http://"+e.Addr+"/")
	for _, want := range []string{`<span class="region">malloc</span>`, "malloc grew", "MALLOC_ARENA_MAX=2", app, "live heap", "of 384 MiB heap max"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	shot := filepath.Join(t.ArtifactDir(), "status-page.png")
	chromiumScreenshot(t, chromium, "http://"+e.Addr+"/", shot)
	t.Logf("screenshot: %s", shot)
	if *update {
		copyFile(t, shot, filepath.Join(testjvm.RepoRoot(), "docs", "img", "status-page.png"))
	}
}
