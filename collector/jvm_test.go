package collector

import (
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// newLiveJVMCollector returns the jvm collector over this machine's /proc
// and /sys, sampling only when scraped.
func newLiveJVMCollector(t testing.TB) (*jvm.Tracker, *prometheus.Registry) {
	t.Helper()
	tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry() // not pedantic: the fan-out describes only its own two series, as in main
	reg.MustRegister(NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"jvm": NewJVMCollector(tracker, log.NewNopLogger())}))
	return tracker, reg
}

// jvmSeries is one JVM's samples from a scrape: metric name + the labels
// beyond the identity ("area=heap") -> value.
type jvmSeries map[string]float64

func (s jvmSeries) get(t testing.TB, key string) float64 {
	t.Helper()
	v, ok := s[key]
	if !ok {
		t.Fatalf("no sample %s in %v", key, s)
	}
	return v
}

// scrapeJVM gathers reg and returns the samples of pid plus every
// identity label set seen for it.
func scrapeJVM(t testing.TB, reg prometheus.Gatherer, pid int) (jvmSeries, map[string]string) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	series := jvmSeries{}
	var identity map[string]string
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["pid"] != strconv.Itoa(pid) {
				continue
			}
			id := map[string]string{"pid": labels["pid"], "role": labels["role"], "app_id": labels["app_id"], "executor_id": labels["executor_id"]}
			if identity != nil && fmt.Sprint(identity) != fmt.Sprint(id) {
				t.Fatalf("pid %d has two identities: %v and %v", pid, identity, id)
			}
			identity = id
			key := mf.GetName()
			for _, extra := range []string{"area", "pool", "gc", "state", "kind"} {
				if v, ok := labels[extra]; ok && key != "executor_jvm_info" {
					key += "{" + extra + "=" + v + "}"
				}
			}
			series[key] = value(m)
		}
	}
	return series, identity
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	}
	return math.NaN()
}

// jstatGC runs `jstat -gc pid` and returns its columns; "-" columns (not
// applicable to the collector) are left out. Values are KiB and counts.
func jstatGC(t testing.TB, pid int) map[string]float64 {
	t.Helper()
	out, err := exec.Command("jstat", "-gc", strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		t.Fatalf("jstat -gc %d: %v: %s", pid, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("jstat -gc %d: unexpected output %q", pid, out)
	}
	names, values := strings.Fields(lines[0]), strings.Fields(lines[1])
	if len(names) != len(values) {
		t.Fatalf("jstat -gc %d: %d names, %d values: %q", pid, len(names), len(values), out)
	}
	cols := map[string]float64{}
	for i, n := range names {
		if v, err := strconv.ParseFloat(values[i], 64); err == nil {
			cols[n] = v
		}
	}
	return cols
}

func requireJstat(t testing.TB) {
	t.Helper()
	testenv.RequireTool(t, "jstat") // the JDK's reader is the reference these tests compare with
}

// poolColumn says which jstat -gc column group a heap pool is counted in.
func poolColumn(pool string) string {
	p := strings.ToLower(pool)
	switch {
	case strings.Contains(p, "eden"):
		return "E"
	case strings.Contains(p, "survivor"):
		return "S"
	default: // old / tenured, or the single heap of ZGC and Shenandoah
		return "O"
	}
}

// comparison is the exporter's view of one JVM next to jstat's, in KiB.
type comparison struct {
	used, committed map[string]float64 // by column group: S, E, O, M, CCS
	collections     float64
}

func exporterView(s jvmSeries) comparison {
	c := comparison{used: map[string]float64{}, committed: map[string]float64{}}
	for key, v := range s {
		switch {
		case strings.HasPrefix(key, "executor_jvm_memory_pool_used_bytes{pool="), strings.HasPrefix(key, "executor_jvm_memory_pool_committed_bytes{pool="):
			pool := key[strings.Index(key, "pool=")+5 : len(key)-1]
			col := poolColumn(pool)
			switch pool {
			case "Metaspace":
				col = "M"
			case "Compressed Class Space":
				col = "CCS"
			}
			if strings.Contains(key, "_used_") {
				c.used[col] += v / 1024
			} else {
				c.committed[col] += v / 1024
			}
		case strings.HasPrefix(key, "executor_jvm_gc_collections_total{"):
			c.collections += v
		}
	}
	return c
}

func jstatView(cols map[string]float64) comparison {
	c := comparison{used: map[string]float64{}, committed: map[string]float64{}}
	for _, g := range []struct{ group, used, committed string }{
		{"S", "S0U", "S0C"}, {"S", "S1U", "S1C"}, {"E", "EU", "EC"}, {"O", "OU", "OC"}, {"M", "MU", "MC"}, {"CCS", "CCSU", "CCSC"},
	} {
		if v, ok := cols[g.used]; ok {
			c.used[g.group] += v
		}
		if v, ok := cols[g.committed]; ok {
			c.committed[g.group] += v
		}
	}
	for _, n := range []string{"YGC", "FGC", "CGC"} {
		c.collections += cols[n]
	}
	return c
}

// within reports whether got lies between two reference reads, widened by
// jstat's rounding to 0.1 KiB and a little allocation in between.
func within(got, a, b float64) bool {
	lo, hi := math.Min(a, b), math.Max(a, b)
	slack := 64 + 0.01*hi // KiB
	return got >= lo-slack && got <= hi+slack
}

// compare returns what disagrees between the exporter and the two jstat
// reads around it, or "" when everything agrees.
func compare(got, before, after comparison) string {
	var diffs []string
	for _, col := range []string{"S", "E", "O", "M", "CCS"} {
		_, inBefore := before.used[col]
		_, inAfter := after.used[col]
		if !inBefore && !inAfter {
			continue
		}
		if !within(got.used[col], before.used[col], after.used[col]) {
			diffs = append(diffs, fmt.Sprintf("%sU: exporter %.1f KiB, jstat %.1f / %.1f", col, got.used[col], before.used[col], after.used[col]))
		}
		if !within(got.committed[col], before.committed[col], after.committed[col]) {
			diffs = append(diffs, fmt.Sprintf("%sC: exporter %.1f KiB, jstat %.1f / %.1f", col, got.committed[col], before.committed[col], after.committed[col]))
		}
	}
	if before.collections != after.collections || got.collections != before.collections {
		diffs = append(diffs, fmt.Sprintf("collections: exporter %v, jstat %v / %v", got.collections, before.collections, after.collections))
	}
	return strings.Join(diffs, "; ")
}

// TestJVMCollectorAgreesWithJstat starts a real JVM with each collector
// HotSpot 17 has and checks that the exporter's heap pools, metaspace and
// collection counts are what jstat -gc reads from the same counters.
func TestJVMCollectorAgreesWithJstat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real JVMs")
	}
	requireJstat(t)
	for _, gc := range []struct{ name, flag string }{
		{"G1", "-XX:+UseG1GC"},
		{"Parallel", "-XX:+UseParallelGC"},
		{"Serial", "-XX:+UseSerialGC"},
		{"ZGC", "-XX:+UseZGC"},
		{"Shenandoah", "-XX:+UseShenandoahGC"},
	} {
		t.Run(gc.name, func(t *testing.T) {
			t.Parallel()
			j := testjvm.Start(t, testjvm.Options{
				MainClass: testjvm.IdleClass,
				JVMArgs:   []string{gc.flag, "-Xmx96m", "-Xms32m"},
				Args:      []string{"--heap-mb", "12", "--exit-after-s", "300"},
			})
			// Let it fill its 12 MiB, then force a collection so there are
			// counts to compare.
			time.Sleep(500 * time.Millisecond)
			if out, err := exec.Command("jcmd", strconv.Itoa(j.PID), "GC.run").CombinedOutput(); err != nil {
				t.Fatalf("jcmd GC.run: %v: %s", err, out)
			}
			_, reg := newLiveJVMCollector(t)

			// A collection between the reads moves everything; try again
			// until three reads in a row see the same collection count.
			var last string
			for attempt := 0; attempt < 5; attempt++ {
				before := jstatView(jstatGC(t, j.PID))
				series, identity := scrapeJVM(t, reg, j.PID)
				after := jstatView(jstatGC(t, j.PID))
				if identity == nil {
					t.Fatalf("pid %d not exported", j.PID)
				}
				if got := series.get(t, "executor_jvm_info"); got != 1 {
					t.Fatalf("executor_jvm_info = %v", got)
				}
				if before.collections == 0 {
					t.Fatalf("jstat saw no collection after GC.run: %+v", before)
				}
				if last = compare(exporterView(series), before, after); last == "" {
					checkHeapTotals(t, series)
					return
				}
				t.Logf("attempt %d: %s", attempt, last)
			}
			t.Fatalf("exporter and jstat -gc disagree: %s", last)
		})
	}
}

// checkHeapTotals checks the area series are the sums of the pools.
func checkHeapTotals(t *testing.T, s jvmSeries) {
	t.Helper()
	var poolsUsed float64
	for key, v := range s {
		if strings.HasPrefix(key, "executor_jvm_memory_pool_used_bytes{") && !strings.Contains(key, "Metaspace") && !strings.Contains(key, "Class Space") {
			poolsUsed += v
		}
	}
	if heap := s.get(t, "executor_jvm_memory_used_bytes{area=heap}"); heap != poolsUsed {
		t.Errorf("heap used %v != sum of heap pools %v (%v)", heap, poolsUsed, s)
	}
	if heapMax := s.get(t, "executor_jvm_memory_max_bytes{area=heap}"); heapMax != 96<<20 {
		t.Errorf("heap max = %v, want -Xmx96m = %v", heapMax, 96<<20)
	}
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("a", 200)
	runes := strings.Repeat("é", 100) // 2 bytes each: the cut must not split one
	tests := []struct{ in, want string }{
		{"", ""},
		{"app-20261122-0001", "app-20261122-0001"},
		{long, long[:maxLabelBytes]},
		{runes, strings.Repeat("é", maxLabelBytes/2)},
		{"a" + runes, "a" + strings.Repeat("é", (maxLabelBytes-1)/2)},
		{"bad\xff\xfeutf8", "bad\uFFFDutf8"},
	}
	for _, tt := range tests {
		got := labelValue(tt.in)
		if got != tt.want {
			t.Errorf("labelValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > maxLabelBytes || !utf8.ValidString(got) {
			t.Errorf("labelValue(%q) = %q: %d bytes, valid UTF-8 %v", tt.in, got, len(got), utf8.ValidString(got))
		}
	}
}

// TestJVMCollectorConcurrentScrapes runs scrapes in parallel against one
// tracker with a real JVM, as --web.max-requests allows; -race checks the
// tracker's sharing of scans.
func TestJVMCollectorConcurrentScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Args: []string{"--executor-id", "1", "--app-id", "app-conc", "--churn", "--exit-after-s", "300"}})
	tracker, reg := newLiveJVMCollector(t)
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		go func() {
			for i := 0; i < 5; i++ {
				families, err := reg.Gather()
				if err != nil {
					errs <- err
					return
				}
				found := false
				for _, mf := range families {
					if mf.GetName() == "executor_jvm_info" {
						for _, m := range mf.GetMetric() {
							for _, lp := range m.GetLabel() {
								found = found || (lp.GetName() == "pid" && lp.GetValue() == strconv.Itoa(j.PID))
							}
						}
					}
				}
				if !found {
					errs <- fmt.Errorf("JVM %d missing from a concurrent scrape", j.PID)
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < 8; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if s, ok := tracker.LastSample(j.PID); !ok || s.ExecutorID != "1" || s.AppID != "app-conc" {
		t.Errorf("LastSample(%d) = %+v, %v", j.PID, s, ok)
	}
}
