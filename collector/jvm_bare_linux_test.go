package collector

import (
	"strconv"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// JVMs that publish no hsperfdata are exported with their identity, why
// they have no counters, and what /proc and the cgroup say; none of the
// counter series.
func TestJVMCollectorWithoutHsperfdata(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	_, reg := newLiveJVMCollector(t)
	for _, tc := range []struct {
		flag, counters string
	}{
		{"-XX:+PerfDisableSharedMem", "perf_disable_shared_mem"},
		{"-XX:-UsePerfData", "use_perf_data_off"},
		{"-XX:+UsePerfData", "hsperfdata"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m", tc.flag},
				Args: []string{"--executor-id", "9", "--app-id", "app-bare", "--heap-mb", "8", "--exit-after-s", "300"}})
			var series jvmSeries
			var identity map[string]string
			testenv.WaitFor(t, 60*time.Second, "the JVM's series", func() bool {
				series, identity = scrapeJVM(t, reg, j.PID)
				return series["executor_jvm_info"] == 1
			})
			if identity["executor_id"] != "9" || identity["app_id"] != "app-bare" || identity["role"] != "executor" {
				t.Errorf("identity %v", identity)
			}
			if series.get(t, "executor_process_resident_memory_bytes{kind=jvm}") <= 0 {
				t.Error("no resident memory")
			}
			series.get(t, "executor_container_memory_usage_bytes")
			_, hasHeap := series["executor_jvm_memory_used_bytes{area=heap}"]
			if hasHeap != (tc.counters == "hsperfdata") {
				t.Errorf("heap series present %v with counters %s", hasHeap, tc.counters)
			}
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, mf := range families {
				for _, m := range mf.GetMetric() {
					labels := map[string]string{}
					for _, lp := range m.GetLabel() {
						labels[lp.GetName()] = lp.GetValue()
					}
					if mf.GetName() == "executor_jvm_info" && labels["pid"] == strconv.Itoa(j.PID) {
						got = labels["counters"]
					}
				}
			}
			if got != tc.counters {
				t.Errorf("counters=%q, want %q", got, tc.counters)
			}
		})
	}
}
