package collector

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// executor_container_memory_bytes has one series per kind memory.stat
// gave: kernel only on cgroup v2, nothing without a cgroup.
func TestContainerMemoryByKind(t *testing.T) {
	v2 := procmem.CgroupMemory{Path: "/kubepods.slice/a", Version: 2, Usage: 100, Anon: 60, File: 30, Shmem: 10, Kernel: 7,
		HasAnon: true, HasFile: true, HasShmem: true, HasKernel: true}
	v1 := procmem.CgroupMemory{Path: "/kubepods/b", Version: 1, Usage: 100, Anon: 50, File: 40, Shmem: 0,
		HasAnon: true, HasFile: true, HasShmem: true}
	view := jvm.View{Time: time.Now()}
	for i, cg := range []*procmem.CgroupMemory{&v2, &v1, nil} {
		j := jvm.JVM{Sample: jvm.Sample{Identity: jvm.Identity{PID: 100 + i, Role: "executor", AppID: "app-1", ExecutorID: strconv.Itoa(i)}}}
		if cg != nil {
			j.Cgroup, j.HasCgroup = *cg, true
		}
		view.JVMs = append(view.JVMs, j)
	}
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	got := map[string]float64{}
	var help string
	for _, mf := range setFamilies(t, c, c.series(view)) {
		if mf.GetName() != "executor_container_memory_bytes" {
			continue
		}
		help = mf.GetHelp()
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			got[labels["pid"]+"/"+labels["kind"]] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"100/anon": 60, "100/file": 30, "100/shmem": 10, "100/kernel": 7,
		"101/anon": 50, "101/file": 40, "101/shmem": 0,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if help == "" {
		t.Error("no help")
	}
}

// A real JVM in a real memory cgroup that also holds a tmpfs file: the
// file is shmem, inside file and outside anon, as the kernel charges it.
func TestContainerMemoryByKindLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real JVM")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	cg := testenv.NewMemoryCgroup(t, 512<<20)
	// Written from inside the cgroup, so its pages are charged there until
	// the file is removed (before the cgroup: cleanups run last first).
	shm := filepath.Join("/dev/shm", "executor-exporter-"+filepath.Base(cg.Dir))
	t.Cleanup(func() { _ = os.Remove(shm) })
	if out, err := exec.Command("sh", "-c", fmt.Sprintf("echo $$ > %s && dd if=/dev/zero of=%s bs=1M count=24 status=none", cg.Procs(), shm)).CombinedOutput(); err != nil {
		t.Fatalf("writing %s: %v: %s", shm, err, out)
	}
	_, reg := newLiveJVMCollector(t)
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx128m"}, Cgroup: cg.Procs(),
		Args: []string{"--executor-id", "5", "--app-id", "app-kinds", "--heap-mb", "64", "--exit-after-s", "300"}})

	var s jvmSeries
	testenv.WaitFor(t, 60*time.Second, "64 MiB of heap in the cgroup's anon", func() bool {
		s, _ = scrapeJVM(t, reg, j.PID)
		return s["executor_container_memory_bytes{kind=anon}"] >= 64<<20
	})
	anon, file, shmem := s.get(t, "executor_container_memory_bytes{kind=anon}"),
		s.get(t, "executor_container_memory_bytes{kind=file}"), s.get(t, "executor_container_memory_bytes{kind=shmem}")
	usage := s.get(t, "executor_container_memory_usage_bytes")
	kernel, hasKernel := s["executor_container_memory_bytes{kind=kernel}"]
	t.Logf("cgroup v%d: usage %.0f, anon %.0f, file %.0f, shmem %.0f, kernel %.0f (%v)", cg.Version, usage, anon, file, shmem, kernel, hasKernel)
	if shmem < 24<<20 || shmem > file {
		t.Errorf("shmem %.0f, want the 24 MiB tmpfs file, within file %.0f", shmem, file)
	}
	if anon+file > usage+1<<20 {
		t.Errorf("anon + file = %.0f, above usage %.0f", anon+file, usage)
	}
	if hasKernel != (cg.Version == 2) {
		t.Errorf("kernel series present %v on cgroup v%d", hasKernel, cg.Version)
	}
}

// The signals of a cgroup running short are each version's own: PSI,
// memory.events and memory.high on v2, failcnt on v1, none invented for
// the other; a figure the kernel did not give is absent.
func TestContainerSignals(t *testing.T) {
	v2 := procmem.CgroupMemory{Path: "/kubepods.slice/a", Version: 2, Usage: 100, High: 96,
		Pressure:  procmem.Pressure{SomeTotal: 2500000, FullTotal: 500000, HasSome: true, HasFull: true},
		Events:    procmem.MemoryEvents{High: 3, Max: 7, OOM: 1, OOMKill: 1, HasLow: true, HasHigh: true, HasMax: true, HasOOM: true, HasOOMKill: true},
		HasEvents: true, OOMKills: 1, HasOOMKills: true}
	// A 4.x kernel: no PSI, no oom_kill, memory.high left at max.
	v2Old := procmem.CgroupMemory{Path: "/kubepods.slice/b", Version: 2, Usage: 100,
		Events: procmem.MemoryEvents{Max: 2, HasLow: true, HasHigh: true, HasMax: true, HasOOM: true}, HasEvents: true}
	v1 := procmem.CgroupMemory{Path: "/kubepods/c", Version: 1, Usage: 100, FailCnt: 42, HasFailCnt: true, OOMKills: 2, HasOOMKills: true}
	view := jvm.View{Time: time.Now()}
	for i, cg := range []procmem.CgroupMemory{v2, v2Old, v1} {
		view.JVMs = append(view.JVMs, jvm.JVM{Sample: jvm.Sample{Identity: jvm.Identity{PID: 100 + i, Role: "executor", AppID: "app-1", ExecutorID: strconv.Itoa(i)}},
			Cgroup: cg, HasCgroup: true})
	}
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	got := map[string]float64{}
	for _, mf := range setFamilies(t, c, c.series(view)) {
		name := mf.GetName()
		switch name {
		case "executor_container_memory_pressure_stall_seconds_total", "executor_container_memory_events_total",
			"executor_container_memory_high_bytes", "executor_container_memory_failcnt_total":
		default:
			continue
		}
		if mf.GetHelp() == "" {
			t.Errorf("%s: no help", name)
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			key := name + "/" + labels["pid"]
			if k := labels["kind"] + labels["event"]; k != "" {
				key += "/" + k
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			got[key] = v
		}
	}
	want := map[string]float64{
		"executor_container_memory_pressure_stall_seconds_total/100/some": 2.5,
		"executor_container_memory_pressure_stall_seconds_total/100/full": 0.5,
		"executor_container_memory_events_total/100/low":                  0,
		"executor_container_memory_events_total/100/high":                 3,
		"executor_container_memory_events_total/100/max":                  7,
		"executor_container_memory_events_total/100/oom":                  1,
		"executor_container_memory_events_total/100/oom_kill":             1,
		"executor_container_memory_high_bytes/100":                        96,
		"executor_container_memory_events_total/101/low":                  0,
		"executor_container_memory_events_total/101/high":                 0,
		"executor_container_memory_events_total/101/max":                  2,
		"executor_container_memory_events_total/101/oom":                  0,
		"executor_container_memory_failcnt_total/102":                     42,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}
