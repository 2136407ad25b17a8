package jvm

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// A fast leak — 64 MiB/s from half of its container's limit to the OOM
// kill — leaves a sample of the JVM taken at most 2 s before the kill,
// with the default sampling, which reads an idle JVM at half its limit
// every 30 s: the container's headroom makes the sampler read it as it
// nears the limit.
func TestFastLeakSampledBeforeTheKill(t *testing.T) {
	if testing.Short() {
		t.Skip("a JVM killed in a memory cgroup")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	tr, err := NewTracker(Config{ProcFS: "/proc", SysFS: "/sys", Sampling: DefaultSampling, Retention: time.Minute, MaxProcesses: 100}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	tr.Start()

	const limit = 1 << 30
	cg := testenv.NewMemoryCgroup(t, limit)
	// Half of the limit, in tmpfs written by a process in the cgroup:
	// charged to the cgroup, not to the JVM.
	shm := filepath.Join("/dev/shm", "executor-exporter-fill-"+t.Name())
	t.Cleanup(func() { os.Remove(shm) })
	fill := exec.Command("sh", "-c", `echo $$ > "$1" && exec dd if=/dev/zero of="$2" bs=1M count=448 status=none`, "sh", cg.Procs(), shm)
	if out, err := fill.CombinedOutput(); err != nil {
		t.Fatalf("filling the cgroup: %v: %s", err, out)
	}
	const leakAfter = 45 * time.Second
	j := testjvm.Start(t, testjvm.Options{
		MainClass: "standin.Leak",
		JVMArgs:   []string{"-Xmx64m", "-XX:MaxDirectMemorySize=4g", "-XX:+UseSerialGC"},
		Args: []string{"--kind", "direct-large", "--target-mb", "4096", "--rate-mb-s", "64", "--step-mb", "4",
			"--after-s", "45"},
		Cgroup: cg.Procs(),
	})
	started := time.Now()

	// Before the leak: read at half its limit, and then left alone.
	testenv.WaitFor(t, 30*time.Second, "a first sample", func() bool { _, ok := tr.LastSample(j.PID); return ok })
	time.Sleep(leakAfter - 5*time.Second - time.Since(started))
	before, _ := tr.LastSample(j.PID)
	if share := float64(before.CgroupUsage) / limit; share < 0.45 || share > 0.6 {
		t.Fatalf("before the leak the container is at %.0f %% of its limit, want about half", 100*share)
	}
	readsBefore := tr.Reads()

	select {
	case <-j.Done():
	case <-time.After(leakAfter + 60*time.Second - time.Since(started)):
		t.Fatal("the leaking JVM was not killed")
	}
	killed := time.Now()
	if kills := cg.OOMKills(t); kills == 0 {
		t.Fatalf("the JVM ended without an OOM kill in its cgroup: %v", j.Err())
	}
	last, ok := tr.LastSample(j.PID)
	if !ok {
		t.Fatal("no sample of the killed JVM")
	}
	t.Logf("container at %.0f %% before the leak; last sample %v before the kill, at %.0f %% of the limit; %d reads during the leak",
		100*float64(before.CgroupUsage)/limit, killed.Sub(last.Time).Round(time.Millisecond),
		100*float64(last.CgroupUsage)/limit, tr.Reads()-readsBefore)
	if age := killed.Sub(last.Time); age > 2*time.Second {
		t.Errorf("the last sample is %v older than the kill, want at most 2s", age)
	}
}
