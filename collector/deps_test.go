package collector

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// The pod list has one owner too: whichever of the jvm, oom, exits and
// cloud factories runs first builds it, all of them get the same one, and
// it stops with the other dependencies, not with the cloud collector.
func TestDependenciesBuildThePodListInAnyOrder(t *testing.T) {
	// Node "stopping"'s list hangs until the exporter cancels it; the
	// others' answer at once.
	inFlight, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pods" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("fieldSelector") == "spec.nodeName=stopping" {
			signal(inFlight)
			<-r.Context().Done()
			signal(cancelled)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"PodList","items":[]}`)
	}))
	t.Cleanup(api.Close)
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { parseFlags(t) })

	// build runs the factories in order, as NewExecutorCollector would if
	// the names sorted so, with args for --collector.cloud and
	// --kubernetes.node-name; stop is ExecutorCollector.Stop, also run when
	// t ends.
	build := func(t *testing.T, order []string, args ...string) (ec *ExecutorCollector, stop func()) {
		t.Helper()
		parseFlags(t, append([]string{"--collector.jvm", "--collector.oom", "--collector.exits", "--no-collector.memory",
			"--oom.kmsg-path=" + kmsg, "--cloud.provider=none", "--cloud.interruption-poll-interval=0", "--cloud.timeout=2m",
			"--kubernetes.api-url=" + api.URL}, args...)...)
		ec = &ExecutorCollector{Collectors: map[string]Collector{}, deps: NewDependencies(log.NewNopLogger(), JVMTrackerConfigFromFlags()), logger: log.NewNopLogger()}
		stop = sync.OnceFunc(ec.Stop)
		t.Cleanup(stop)
		for _, name := range order {
			c, err := factories[name](log.NewNopLogger(), ec.deps)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ec.Collectors[name] = c
		}
		return ec, stop
	}
	podsOf := func(ec *ExecutorCollector) map[string]podSource {
		return map[string]podSource{
			"jvm":   ec.Collectors["jvm"].(*jvmCollector).pods,
			"oom":   ec.Collectors["oom"].(*oomCollector).cfg.Pods,
			"exits": ec.Collectors["exits"].(*exitsCollector).cfg.Pods,
		}
	}

	for _, order := range [][]string{{"oom", "jvm", "exits", "cloud"}, {"jvm", "cloud", "oom", "exits"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			ec, _ := build(t, order, "--collector.cloud", "--kubernetes.node-name=n1")
			r := ec.Collectors["cloud"].(*cloudCollector).refresher
			if r == nil || r != ec.deps.refresher || !r.PodsEnabled() {
				t.Fatal("the cloud collector reads another refresher than the one shared, or it lists no pods")
			}
			for name, src := range podsOf(ec) {
				if src != podSource(r) {
					t.Errorf("the %s collector's pod list is %T %p, not the shared refresher's", name, src, src)
				}
			}
		})
	}

	// Without Kubernetes, or without the cloud collector whose refresher
	// lists them, there are no pods to name.
	for _, c := range []struct {
		order []string
		args  []string
	}{
		{[]string{"oom", "exits", "jvm", "cloud"}, []string{"--collector.cloud", "--kubernetes.node-name="}},
		{[]string{"oom", "exits", "jvm"}, []string{"--no-collector.cloud", "--kubernetes.node-name=n1"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			ec, _ := build(t, c.order, c.args...)
			for name, src := range podsOf(ec) {
				if src != nil {
					t.Errorf("the %s collector has a pod list: %T %p", name, src, src)
				}
			}
			if _, cloudOn := ec.Collectors["cloud"]; !cloudOn && ec.deps.refresher != nil {
				t.Error("a refresher built without the cloud collector")
			}
		})
	}

	t.Run("stop", func(t *testing.T) {
		ec, stop := build(t, []string{"exits", "cloud", "jvm", "oom"}, "--collector.cloud", "--kubernetes.node-name=stopping")
		if _, ok := ec.Collectors["cloud"].(Stopper); ok {
			t.Error("the cloud collector stops the refresher whose pod list other collectors read")
		}
		select {
		case <-inFlight:
		case <-time.After(waitTimeout):
			t.Fatal("no list of the pods at start")
		}
		stop()
		select {
		case <-cancelled:
		case <-time.After(waitTimeout):
			t.Fatal("the list of the pods still in flight after Stop")
		}
	})
}
