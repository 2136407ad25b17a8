package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// alertTestOverrides shorten every window and `for` of the mixin so that
// the alerts fire within seconds against 1s scrapes; thresholds stay the
// shipped defaults.
const alertTestOverrides = `{ _config+:: {
  rateInterval: '10s',
  doomedFor: '5s', budgetFor: '5s', budgetPredictFor: '5s',
  heapAfterGCWindow: '10s', heapAfterGCFor: '5s',
  gcOverheadWindow: '10s', gcOverheadFor: '5s',
  nodeOvercommitFor: '5s', nodeAvailableFor: '5s', nodeExhaustionFor: '5s',
  memoryPressureFor: '5s', metadataUnavailableFor: '5s',
  collectorFailingFor: '5s', exporterDownFor: '5s', oomKillWindow: '1m',
} }`

// The executor that fills its heap: 60 MiB kept reachable in a 64 MiB heap,
// with garbage churned so that collections keep running. SerialGC because
// G1 stores each 1 MiB array as a humongous object spanning two regions and
// throws OutOfMemoryError long before 60 MiB.
var fullHeapExecutor = testjvm.Options{
	JVMArgs: []string{"-Xmx64m", "-XX:+UseSerialGC"},
	Args: []string{"--executor-id", "1", "--app-id", "app-alert-test",
		"--heap-mb", "60", "--churn", "--exit-after-s", "600"},
}

// TestAlertsEndToEnd runs the real chain: the built exporter reading a real
// JVM, Prometheus scraping it every second with the mixin's rules (rendered
// with short `for`s), Alertmanager routing to a webhook. The heap alert
// must arrive at the webhook with the executor's identity and the machine's
// instance type (joined from executor_instance_info, from a stub AWS
// metadata service that also announces a spot interruption), the
// interruption alert, the exporter-down alert for a target that does not
// answer, and the collector-failing alert for an exporter reading a
// malformed /proc/meminfo. It runs on Debian's Prometheus 2 and on the
// pinned Prometheus 3.
func TestAlertsEndToEnd(t *testing.T) {
	rules := renderMixin(t, alertTestOverrides)
	for name, bin := range prometheusBinaries(t) {
		t.Run(name, func(t *testing.T) { testAlertsEndToEnd(t, bin, rules) })
	}
}

func testAlertsEndToEnd(t *testing.T, prometheus, rules string) {
	hook := newMixinWebhook(t)
	am := startAlertmanager(t, hook.URL)
	broken := startExporter(t, fixtureArgs("malformed")...)
	dead := testenv.FreeAddr(t)
	st := startMonitoringStack(t, promConfig{Binary: prometheus, RulesDir: rules, Alertmanager: am, Targets: []string{broken.Addr, dead}})
	started := time.Now()

	heap := hook.waitFor(t, 3*time.Minute, "ExecutorJVMHeapNearlyFull", map[string]string{
		"app_id": "app-alert-test", "executor_id": "1", "role": "executor",
		"pid": fmt.Sprint(st.JVM.PID), "instance": st.Exporter.Addr, "severity": "warning",
		"instance_type": "r5.xlarge", "lifecycle": "spot",
	})
	t.Logf("the heap alert reached the webhook %.1fs after Prometheus started", time.Since(started).Seconds())
	for _, want := range []string{"app-alert-test", "executor 1", st.Exporter.Addr, "(r5.xlarge, spot)"} {
		if !strings.Contains(heap.Annotations["description"], want) {
			t.Errorf("description %q does not name %q", heap.Annotations["description"], want)
		}
	}
	if !strings.HasSuffix(heap.Annotations["runbook_url"], "docs/runbook.md#executorjvmheapnearlyfull") {
		t.Errorf("runbook_url = %q", heap.Annotations["runbook_url"])
	}

	hook.waitFor(t, time.Minute, "ExecutorInstanceInterruptionPending", map[string]string{
		"instance": st.Exporter.Addr, "event": "spot_interruption", "severity": "critical",
		"instance_type": "r5.xlarge", "lifecycle": "spot",
	})
	hook.waitFor(t, time.Minute, "ExecutorExporterDown", map[string]string{"instance": dead})
	hook.waitFor(t, time.Minute, "ExecutorCollectorFailing", map[string]string{"instance": broken.Addr, "collector": "memory"})

	// The executor's container (256 MiB) is far from its limit (64 MiB
	// heap), nothing was killed, the rebalance recommendation is not
	// announced: those alerts must not be active.
	if n := len(st.query(t, `ALERTS{alertname="ExecutorInstanceInterruptionPending", event!="spot_interruption"}`)); n != 0 {
		t.Errorf("interruption alert for an event that was not announced (%d series)", n)
	}
	for _, name := range []string{"ExecutorMemoryConfigurationDoomed", "ExecutorOverheadBudgetNearlyFull", "ExecutorOOMKilled"} {
		if n := len(st.query(t, fmt.Sprintf(`ALERTS{alertname=%q, app_id="app-alert-test"}`, name))); n != 0 {
			t.Errorf("%s is active for the test executor (%d series)", name, n)
		}
	}
}

// TestRunbookCoversEveryAlert: every generated alert links to a section of
// docs/runbook.md that exists, named after the alert.
func TestRunbookCoversEveryAlert(t *testing.T) {
	root := testjvm.RepoRoot()
	alerts, err := os.ReadFile(filepath.Join(root, "mixin", "generated", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runbook, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllSubmatch(runbook, -1) {
		anchors[strings.ToLower(string(m[1]))] = true
	}
	names := regexp.MustCompile(`(?m)^  - alert: "?(\w+)"?$`).FindAllSubmatch(alerts, -1)
	links := regexp.MustCompile(`runbook_url: "?\S+/docs/runbook\.md#(\w+)"?`).FindAllSubmatch(alerts, -1)
	if len(names) == 0 || len(names) != len(links) {
		t.Fatalf("%d alerts but %d runbook_urls in alerts.yaml", len(names), len(links))
	}
	for i, n := range names {
		name, anchor := string(n[1]), string(links[i][1])
		if anchor != strings.ToLower(name) || !anchors[anchor] {
			t.Errorf("alert %s: runbook_url anchor #%s has no section '## %s' in docs/runbook.md", name, anchor, name)
		}
	}
}

// mixinJsonnetVersion is the go-jsonnet version mixin/Makefile pins, so the
// tests render with the same tool as `make mixin`.
func mixinJsonnetVersion(t testing.TB) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(testjvm.RepoRoot(), "mixin", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^JSONNET_VERSION\s*\?=\s*(\S+)`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no JSONNET_VERSION in mixin/Makefile")
	}
	return string(m[1])
}

// renderMixin renders the mixin with overrides (jsonnet) into a temporary
// directory and returns the directory of its rule files.
func renderMixin(t testing.TB, overrides string) string {
	t.Helper()
	goTool := testenv.RequireTool(t, "go")
	out := t.TempDir()
	for _, d := range []string{"mixin/generated", "dashboards"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goTool, "run", "github.com/google/go-jsonnet/cmd/jsonnet@"+mixinJsonnetVersion(t),
		"-S", "-m", out, "--tla-code", "overrides="+overrides, "render.jsonnet")
	cmd.Dir = filepath.Join(testjvm.RepoRoot(), "mixin")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("jsonnet: %v\n%s", err, b)
	}
	return filepath.Join(out, "mixin", "generated")
}

// mixinWebhook records what Alertmanager sends.
type mixinWebhook struct {
	URL    string
	mu     sync.Mutex
	alerts []mixinAlert
}

type mixinAlert struct {
	Received    time.Time         `json:"-"`
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func newMixinWebhook(t testing.TB) *mixinWebhook {
	t.Helper()
	h := &mixinWebhook{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Alerts []mixinAlert `json:"alerts"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Errorf("webhook: bad payload %q: %v", body, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		now := time.Now()
		for i := range msg.Alerts {
			msg.Alerts[i].Received = now
		}
		h.mu.Lock()
		h.alerts = append(h.alerts, msg.Alerts...)
		h.mu.Unlock()
	}))
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, a := range h.alerts {
				t.Logf("webhook received: %s %v", a.Status, a.Labels)
			}
		}
	})
	h.URL = srv.URL + "/hook"
	return h
}

// first returns the first notification of the firing alert named name
// with the labels of want (all of them).
func (h *mixinWebhook) first(name string, want map[string]string) (mixinAlert, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.alerts {
		if a.Status != "firing" || a.Labels["alertname"] != name {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && a.Labels[k] == v
		}
		if ok {
			return a, true
		}
	}
	return mixinAlert{}, false
}

// firstNotified is when the first notification of the firing alert named
// name with the labels of want (all of them) arrived; zero if none did.
func (h *mixinWebhook) firstNotified(name string, want map[string]string) time.Time {
	a, _ := h.first(name, want)
	return a.Received
}

// waitFor waits for a firing alert named name whose labels include want.
func (h *mixinWebhook) waitFor(t testing.TB, timeout time.Duration, name string, want map[string]string) mixinAlert {
	t.Helper()
	var found mixinAlert
	testenv.WaitFor(t, timeout, fmt.Sprintf("alert %s %v at the webhook", name, want), func() bool {
		var ok bool
		found, ok = h.first(name, want)
		return ok
	})
	t.Logf("%s arrived: %v", name, found.Labels)
	return found
}
