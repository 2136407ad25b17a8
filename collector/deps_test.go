package collector

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
)

// parseFlags sets the collector flags as the binary's command line would,
// as node_exporter's tests do.
func parseFlags(t *testing.T, args ...string) {
	t.Helper()
	if _, err := kingpin.CommandLine.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
}

// The JVM tracker has one owner: built once for the collectors that share
// it, and its background sampling ends when the exporter stops.
func TestExecutorCollectorOwnsTheJVMTracker(t *testing.T) {
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	parseFlags(t, "--collector.jvm", "--collector.oom", "--no-collector.cloud", "--no-collector.memory",
		"--oom.kmsg-path="+kmsg, "--jvm.sample-interval=10ms")
	t.Cleanup(func() { parseFlags(t) }) // back to the defaults for other tests

	deps := NewDependencies(log.NewNopLogger(), JVMTrackerConfigFromFlags())
	ec, err := NewExecutorCollector(log.NewNopLogger(), deps)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ec.Collectors["jvm"]; !ok {
		t.Fatalf("jvm collector not built: %v", ec.Collectors)
	}
	if _, ok := ec.Collectors["cloud"]; ok {
		t.Fatal("--no-collector.cloud built the cloud collector")
	}
	tracker, err := deps.JVMTracker()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := deps.JVMTracker(); again != tracker {
		t.Fatal("a second JVMTracker call built another tracker")
	}
	if got := ec.Collectors["jvm"].(*jvmCollector).tracker; got != tracker {
		t.Fatal("the jvm collector reads another tracker than the one shared")
	}
	select {
	case <-tracker.Done():
		t.Fatal("background sampling ended before Stop")
	default:
	}
	ec.Stop()
	select {
	case <-tracker.Done():
	case <-time.After(time.Minute):
		t.Fatal("background sampling still running after Stop")
	}
}

// A tracker that cannot be built fails the jvm collector, and the oom
// collector still counts kills, unattributed.
func TestExecutorCollectorWithoutProcfs(t *testing.T) {
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	parseFlags(t, "--no-collector.jvm", "--no-collector.exits", "--collector.oom", "--no-collector.cloud", "--no-collector.memory",
		"--oom.kmsg-path="+kmsg, "--path.procfs="+filepath.Join(t.TempDir(), "missing"))
	t.Cleanup(func() { parseFlags(t) })

	deps := NewDependencies(log.NewNopLogger(), JVMTrackerConfigFromFlags())
	ec, err := NewExecutorCollector(log.NewNopLogger(), deps)
	if err != nil {
		t.Fatalf("oom collector alone must build without procfs: %v", err)
	}
	defer ec.Stop()
	if c := ec.Collectors["oom"].(*oomCollector); c.source != nil {
		t.Errorf("oom collector has a JVM source without procfs: %v", c.source)
	}

	parseFlags(t, "--collector.jvm", "--no-collector.oom", "--no-collector.cloud", "--no-collector.memory",
		"--path.procfs="+filepath.Join(t.TempDir(), "missing"))
	if _, err := NewExecutorCollector(log.NewNopLogger(), NewDependencies(log.NewNopLogger(), JVMTrackerConfigFromFlags())); err == nil {
		t.Error("jvm collector built without procfs")
	}
	// The exits collector counts the tracker's JVMs: nothing to count without it.
	parseFlags(t, "--no-collector.jvm", "--collector.exits", "--no-collector.oom", "--no-collector.cloud", "--no-collector.memory",
		"--path.procfs="+filepath.Join(t.TempDir(), "missing"))
	if _, err := NewExecutorCollector(log.NewNopLogger(), NewDependencies(log.NewNopLogger(), JVMTrackerConfigFromFlags())); err == nil {
		t.Error("exits collector built without procfs")
	}
}
