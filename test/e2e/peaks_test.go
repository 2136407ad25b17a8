package e2e

import (
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// A one-second spike of 200 MiB of native memory, between two scrapes 15 s
// apart, is in the peaks the kernel keeps, though neither scrape saw it and
// the exporter reads an idle JVM far from its limit every 30 s; and the
// peaks of the JVM stay exported after it ends.
func TestSpikeBetweenScrapesIsInThePeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("a JVM in a memory cgroup")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	const spike = 200 << 20
	cg := testenv.NewMemoryCgroup(t, 2<<30)
	app := "app-20261125-peaks"
	j := testjvm.Start(t, testjvm.Options{
		Cgroup:  cg.Procs(),
		JVMArgs: []string{"-Xmx256m", "-XX:MaxDirectMemorySize=1g", "-XX:+UseG1GC"},
		Args: []string{"--scenario", "--executor-id", "3", "--app-id", app, "--live-mb", "64", "--churn-mb-s", "8",
			"--spike-mb", "200", "--spike-after-s", "40", "--spike-for-s", "1", "--exit-after-s", "90"},
	})
	started := time.Now()
	e := startExporter(t)
	id := map[string]string{"pid": strconv.Itoa(j.PID), "role": "executor", "executor_id": "3", "app_id": app}

	// The first scrape 10 s before the spike, the second 15 s later, after
	// it.
	testenv.WaitFor(t, 30*time.Second, "a first reading of the JVM", func() bool {
		_, ok := findSample(e.scrape(t), "executor_container_memory_peak_bytes", id)
		return ok
	})
	wait := func(line string) {
		t.Helper()
		for l := range j.Lines {
			if l == line {
				return
			}
		}
		t.Fatalf("the JVM ended before %q", line)
	}
	time.Sleep(time.Until(started.Add(30 * time.Second)))
	firstAt := time.Now()
	first := e.scrape(t)
	wait("spike over")
	time.Sleep(time.Until(firstAt.Add(15 * time.Second)))
	// The kernel keeps the peaks; the exporter reads them at the JVM's next
	// reading, within the sampler's slowest interval (30 s) of the spike.
	var second map[string]*dto.MetricFamily
	testenv.WaitFor(t, 45*time.Second, "a reading after the spike", func() bool {
		second = e.scrape(t)
		firstPeak, _ := findSample(first, "executor_container_memory_peak_bytes", id)
		p, _ := findSample(second, "executor_container_memory_peak_bytes", id)
		return p >= firstPeak+spike*0.95
	})

	usage := func(name string) float64 {
		t.Helper()
		a, ok := findSample(first, name, id)
		b, ok2 := findSample(second, name, id)
		if !ok || !ok2 {
			t.Fatalf("%s missing from a scrape", name)
		}
		return max(a, b)
	}
	sampled := usage("executor_container_memory_usage_bytes")
	containerPeak, _ := findSample(second, "executor_container_memory_peak_bytes", id)
	residentPeak, _ := findSample(second, "executor_process_resident_memory_peak_bytes", id)
	firstPeak, _ := findSample(first, "executor_container_memory_peak_bytes", id)
	t.Logf("container usage at the scrapes at most %.0f MiB; container peak %.0f MiB (%.0f before the spike); JVM's resident peak %.0f MiB",
		sampled/(1<<20), containerPeak/(1<<20), firstPeak/(1<<20), residentPeak/(1<<20))
	if containerPeak < firstPeak+spike*0.95 {
		t.Errorf("container peak %.0f MiB after the spike, %.0f MiB before: the 200 MiB spike is not in it", containerPeak/(1<<20), firstPeak/(1<<20))
	}
	if rss := usage("executor_process_resident_memory_bytes"); residentPeak < spike {
		t.Errorf("JVM's resident peak %.0f MiB (resident at the scrapes %.0f MiB): the spike is not in it", residentPeak/(1<<20), rss/(1<<20))
	}
	for _, kind := range []string{"heap_live", "nonheap"} {
		if v, ok := findSample(second, "executor_jvm_memory_peak_bytes", merge(id, "kind", kind)); !ok || v <= 0 {
			t.Errorf("executor_jvm_memory_peak_bytes{kind=%q} = %v, %v", kind, v, ok)
		}
	}
	if live, _ := findSample(second, "executor_jvm_memory_peak_bytes", merge(id, "kind", "heap_live")); live < 48<<20 || live > 256<<20 {
		t.Errorf("heap live peak %.0f MiB, want about the 64 MiB the JVM keeps", live/(1<<20))
	}

	// After the end: the final peaks stay, the JVM's other series go.
	select {
	case <-j.Done():
	case <-time.After(time.Until(started.Add(150 * time.Second))):
		t.Fatal("the JVM did not exit")
	}
	testenv.WaitFor(t, 30*time.Second, "the JVM's series to go", func() bool {
		_, ok := findSample(e.scrape(t), "executor_jvm_info", id)
		return !ok
	})
	// The scan that finds the process gone may come one after the scan
	// that no longer reads it.
	var after map[string]*dto.MetricFamily
	testenv.WaitFor(t, 15*time.Second, "the ended JVM's peaks", func() bool {
		after = e.scrape(t)
		_, ok := findSample(after, "executor_container_memory_peak_bytes", id)
		return ok
	})
	if v, ok := findSample(after, "executor_container_memory_peak_bytes", id); !ok || v < containerPeak {
		t.Errorf("after the end, container peak = %v, %v; want %.0f", v, ok, containerPeak)
	}
	if _, ok := findSample(after, "executor_jvm_memory_peak_bytes", merge(id, "kind", "heap_live")); !ok {
		t.Error("after the end, the heap live peak is gone")
	}
	promtoolCheckMetrics(t, e.scrapeText(t))
}
