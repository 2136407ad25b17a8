package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// The scenarios' Prometheus scrapes and evaluates every 2 s where users
// typically use 15-30 s: the rules (windows, for: durations) are the
// shipped ones, so an alert goes pending up to an interval later there.
const scenarioInterval = "2s"

// scenarioLab is what the scenarios share: the exporter, Prometheus with
// the shipped rules, Alertmanager and its webhook, and a recorder of every
// alert's states; for the node scenario, a second exporter that sees the
// node cgroup's memory as the machine's.
type scenarioLab struct {
	Exporter     *exporter
	NodeExporter *exporter // nil without a node scenario
	node         testenv.MemoryCgroup
	Prom         *promServer
	PromVersion  string
	hook         *mixinWebhook
	rec          *alertRecorder
}

const (
	endKilled = "OOM-killed"
	endOOME   = "OutOfMemoryError"
)

type scenarioEnd struct {
	Kind string // endKilled, endOOME, or "" (still running at the end of the watch)
	At   time.Time
}

type scenarioResult struct {
	Start  time.Time
	End    scenarioEnd
	PIDs   []int
	Alerts []*alertRecord
	// The most the executors' non-heap memory used of their overhead
	// budget, and of their container limit, over the scenario.
	MaxBudgetUsed, MaxLimitUsed float64
}

func startScenarioLab(t *testing.T, run []scenario) *scenarioLab {
	t.Helper()
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	requireKmsg(t)
	lab := &scenarioLab{hook: newMixinWebhook(t)}
	lab.Exporter = startExporter(t, "--cloud.provider=none")
	targets := []string{lab.Exporter.Addr}
	for _, sc := range run {
		if sc.Node > 0 {
			lab.node = testenv.NewMemoryCgroup(t, sc.Node<<20)
			lab.NodeExporter = startNodeExporter(t, lab.node)
			targets = append(targets, lab.NodeExporter.Addr)
		}
	}
	bin, version := testenv.RequireTool(t, "prometheus"), "Debian"
	if p := os.Getenv("PROMETHEUS3"); p != "" {
		bin, version = p, "3"
	}
	lab.PromVersion = prometheusVersion(bin, version)
	am := startAlertmanager(t, lab.hook.URL)
	rules := filepath.Join(testenv.RepoRoot(), "mixin", "generated")
	lab.Prom = startPrometheus(t, promConfig{Binary: bin, RulesDir: rules, Alertmanager: am, Targets: targets, Interval: scenarioInterval})
	lab.rec = recordAlerts(t, lab.Prom)
	return lab
}

// prometheusVersion reads a Prometheus binary's version: from --version
// for a release build (Debian's), from its Go module for one built with go
// install (which --version leaves empty).
func prometheusVersion(bin, fallback string) string {
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	if f := strings.Fields(string(out)); len(f) > 2 && f[2] != "(branch:" {
		return f[2]
	}
	out, _ = exec.Command("go", "version", "-m", bin).Output()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "mod" && f[1] == "github.com/prometheus/prometheus" {
			return fallback + " (module " + f[2] + ")"
		}
	}
	return fallback
}

// startNodeExporter runs a second exporter inside the node cgroup, in a
// mount namespace where /proc/meminfo is LXCFS's view of that cgroup (as
// in an LXC container): the node's memory is the cgroup's limit.
func startNodeExporter(t *testing.T, node testenv.MemoryCgroup) *exporter {
	t.Helper()
	if node.Version != 1 && node.Version != 2 {
		t.Fatalf("node cgroup version %d", node.Version)
	}
	mnt := startLXCFS(t)
	bin := testenv.ExporterBinary(t)
	unshare := testenv.RequireTool(t, "unshare")
	addr := testenv.FreeAddr(t)
	script := fmt.Sprintf("mount --bind %s /proc/meminfo && echo $$ > %s && exec %s --web.listen-address=%s --cloud.provider=none",
		filepath.Join(mnt, "proc", "meminfo"), node.Procs(), bin, addr)
	e := startExporterCmd(t, addr, exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script))
	testenv.WaitFor(t, 30*time.Second, "the node's exporter to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return e
}

// startLXCFS mounts LXCFS on a temporary directory and unmounts it when
// the test ends.
func startLXCFS(t *testing.T) string {
	t.Helper()
	bin := testenv.RequireTool(t, "lxcfs")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Unavailable(t, "no /dev/fuse for LXCFS: %v", err)
	}
	mnt, run := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "--pidfile", filepath.Join(run, "lxcfs.pid"), mnt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = exec.Command("umount", "-l", mnt).Run()
	})
	testenv.WaitFor(t, 30*time.Second, "LXCFS to serve meminfo", func() bool {
		_, err := os.Stat(filepath.Join(mnt, "proc", "meminfo"))
		return err == nil
	})
	return mnt
}

// run starts a scenario's executors and watches until one is killed or
// throws OutOfMemoryError (and the kill alert had time to fire), or until
// the watch ends.
func (lab *scenarioLab) run(t *testing.T, sc scenario) *scenarioResult {
	t.Helper()
	r := &scenarioResult{}
	var jvms []*testjvm.JVM
	var cgroups []testenv.MemoryCgroup
	for i, x := range sc.Executors {
		var cg testenv.MemoryCgroup
		if sc.Node > 0 {
			cg = lab.node.Child(t, fmt.Sprintf("executor-%d", i+1), x.Limit<<20)
		} else {
			cg = testenv.NewMemoryCgroup(t, x.Limit<<20)
		}
		mode := "--scenario"
		if x.Leak {
			mode = "--leak"
		}
		args := append([]string{mode, "--executor-id", strconv.Itoa(i + 1), "--app-id", "app-" + sc.Name,
			"--exit-after-s", strconv.Itoa(int(sc.Watch.Seconds()) + 120)}, x.Args...)
		cgroups = append(cgroups, cg)
		j := testjvm.Start(t, testjvm.Options{JVMArgs: x.JVMArgs, Args: args, Cgroup: cg.Procs()})
		if r.Start.IsZero() {
			r.Start = time.Now()
		}
		jvms = append(jvms, j)
		r.PIDs = append(r.PIDs, j.PID)
	}
	deadline := time.After(sc.Watch)
	ended := make(chan scenarioEnd, 2*len(jvms))
	for _, j := range jvms {
		go func() {
			<-j.Done()
			ended <- scenarioEnd{Kind: endKind(j.Err()), At: time.Now()}
		}()
	}
	// A process the kernel kills in an executor's container need not be
	// the JVM: a PySpark worker grown larger than its JVM is killed
	// instead, and the JVM lives on. Either kill ends the scenario.
	stop := make(chan struct{})
	defer close(stop)
	for _, cg := range cgroups {
		go func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if n, err := oomKills(cg); err == nil && n > 0 {
					ended <- scenarioEnd{Kind: endKilled, At: time.Now()}
					return
				}
			}
		}()
	}
	exporter := lab.Exporter.Addr
	if sc.Node > 0 {
		exporter = lab.NodeExporter.Addr
	}
	select {
	case r.End = <-ended:
		t.Logf("%s: %s %.0f s after the start", sc.Name, r.End.Kind, r.End.At.Sub(r.Start).Seconds())
		if r.End.Kind == endKilled {
			// The kill alert needs the victim's next scrapes and an evaluation.
			testenv.WaitFor(t, 90*time.Second, "ExecutorOOMKilled for "+sc.Name, func() bool {
				return lab.rec.seen("ExecutorOOMKilled", exporter, r.PIDs)
			})
		}
	case <-deadline:
	}
	r.Alerts = lab.rec.of(exporter, r.PIDs, sc.Node > 0)
	pids := make([]string, len(r.PIDs))
	for i, p := range r.PIDs {
		pids[i] = strconv.Itoa(p)
	}
	sel := fmt.Sprintf(`{instance=%q, pid=~%q}`, exporter, strings.Join(pids, "|"))
	r.MaxBudgetUsed = lab.maxOver(t, "executor:memory_overhead_budget_used:ratio"+sel, time.Since(r.Start))
	r.MaxLimitUsed = lab.maxOver(t, "executor:memory_demand:bytes"+sel+" / on(instance, pid) executor_container_memory_limit_bytes"+sel, time.Since(r.Start))
	return r
}

// maxOver is the largest value expr took in the last d, -1 if none.
func (lab *scenarioLab) maxOver(t *testing.T, expr string, d time.Duration) float64 {
	t.Helper()
	res := lab.Prom.query(t, fmt.Sprintf("max(max_over_time((%s)[%ds:%s]))", expr, int(d.Seconds())+1, scenarioInterval))
	if len(res) == 0 || len(res[0].Value) < 2 {
		return -1
	}
	v, _ := strconv.ParseFloat(fmt.Sprint(res[0].Value[1]), 64)
	return v
}

func endKind(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		ws := exit.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
			return endKilled
		case ws.Exited() && ws.ExitStatus() == 52:
			return endOOME
		}
	}
	return fmt.Sprintf("exit (%v)", err)
}

// alertRecord is what was seen of one alert (name and labels).
type alertRecord struct {
	Name        string
	Labels      map[string]string
	Severity    string
	Description string
	Pending     time.Time // first seen pending (or firing: then both)
	Firing      time.Time
	LastSeen    time.Time
}

func (a *alertRecord) String() string {
	return fmt.Sprintf("%s pending %s firing %s", a.Name, a.Pending.Format(time.TimeOnly), a.Firing.Format(time.TimeOnly))
}

type alertRecorder struct {
	mu      sync.Mutex
	records map[string]*alertRecord
}

// recordAlerts polls Prometheus's alerts every second until the test ends.
func recordAlerts(t *testing.T, p *promServer) *alertRecorder {
	rec := &alertRecorder{records: map[string]*alertRecord{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			alerts, err := p.alerts()
			if err != nil {
				continue
			}
			now := time.Now()
			rec.mu.Lock()
			for _, a := range alerts {
				key := alertKey(a.Labels)
				r := rec.records[key]
				if r == nil {
					r = &alertRecord{Name: a.Labels["alertname"], Labels: a.Labels, Severity: a.Labels["severity"], Pending: now}
					rec.records[key] = r
				}
				r.LastSeen = now
				// The description as it was when the alert fired (as
				// notified), or while pending: not after the executor's
				// end, when its series are going.
				if a.State == "firing" && r.Firing.IsZero() {
					r.Firing = now
					r.Description = a.Annotations["description"]
				} else if r.Firing.IsZero() {
					r.Description = a.Annotations["description"]
				}
			}
			rec.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return rec
}

func alertKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, labels[k])
	}
	return b.String()
}

// of returns the alerts of the JVMs pids seen by the exporter at instance,
// and with node, that exporter's node-level alerts, by first pending time.
func (rec *alertRecorder) of(instance string, pids []int, node bool) []*alertRecord {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []*alertRecord
	for _, r := range rec.records {
		if r.Labels["instance"] != instance {
			continue
		}
		pid, hasPID := r.Labels["pid"]
		if (hasPID && containsPID(pids, pid)) || (!hasPID && node) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pending.Before(out[j].Pending) })
	return out
}

// seen reports whether the alert name fired for one of pids, as the
// exporter at instance saw it (the node scenario's exporter sees every
// JVM on the machine too).
func (rec *alertRecorder) seen(name, instance string, pids []int) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.records {
		if r.Name == name && !r.Firing.IsZero() && r.Labels["instance"] == instance && containsPID(pids, r.Labels["pid"]) {
			return true
		}
	}
	return false
}

func containsPID(pids []int, s string) bool {
	for _, p := range pids {
		if strconv.Itoa(p) == s {
			return true
		}
	}
	return false
}

// firstWarning is the first alert other than the kill itself.
func (r *scenarioResult) firstWarning() *alertRecord {
	for _, a := range r.Alerts {
		if a.Name != "ExecutorOOMKilled" {
			return a
		}
	}
	return nil
}

func (r *scenarioResult) alert(name string) *alertRecord {
	for _, a := range r.Alerts {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// oomKills is a cgroup's count of OOM kills (testenv.MemoryCgroup.OOMKills,
// which fails the test, for a goroutine of its own).
func oomKills(cg testenv.MemoryCgroup) (uint64, error) {
	file := "memory.events"
	if cg.Version == 1 {
		file = "memory.oom_control"
	}
	data, err := os.ReadFile(filepath.Join(cg.Dir, file))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return strconv.ParseUint(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no oom_kill line in %s", file)
}
