// Package e2e runs the built exporter binary against real things: procfs
// fixtures, real JVMs, real Prometheus and Alertmanager, a real OOM kill.
package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// exporter is a running executor_exporter process.
type exporter struct {
	Addr string
	cmd  *exec.Cmd
	logs *bytes.Buffer
	mu   *sync.Mutex
}

// startExporter runs the binary with args plus a loopback listen address and
// waits until it answers plain HTTP. It is stopped when the test ends; its
// log is printed if the test failed.
func startExporter(t testing.TB, args ...string) *exporter {
	t.Helper()
	e := startExporterNoWait(t, testenv.FreeAddr(t), args...)
	testenv.WaitFor(t, 20*time.Second, "exporter to listen on "+e.Addr, func() bool {
		resp, err := http.Get("http://" + e.Addr + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return e
}

// startExporterNoWait starts the binary on addr and returns at once, for
// callers that wait in their own way (TLS, expected failures).
func startExporterNoWait(t testing.TB, addr string, args ...string) *exporter {
	t.Helper()
	return startExporterCmd(t, addr, exec.Command(testenv.ExporterBinary(t), append([]string{"--web.listen-address=" + addr}, args...)...))
}

// startExporterCmd starts cmd, a command that runs the exporter on addr
// (perhaps through a wrapper), and returns at once.
func startExporterCmd(t testing.TB, addr string, cmd *exec.Cmd) *exporter {
	t.Helper()
	e := &exporter{Addr: addr, logs: &bytes.Buffer{}, mu: &sync.Mutex{}, cmd: cmd}
	e.cmd.Stdout = testenv.LockedWriter{Mu: e.mu, W: e.logs}
	e.cmd.Stderr = testenv.LockedWriter{Mu: e.mu, W: e.logs}
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = e.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = e.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("exporter log:\n%s", e.Logs())
		}
	})
	return e
}

// Logs returns what the exporter has logged so far.
func (e *exporter) Logs() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logs.String()
}

// scrapeText returns the body of GET /metrics, failing the test on a
// non-200 answer.
func (e *exporter) scrapeText(t testing.TB) string {
	t.Helper()
	resp, err := http.Get("http://" + e.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s: %s", resp.Status, body)
	}
	return string(body)
}

// scrape returns the parsed metric families of one scrape.
func (e *exporter) scrape(t testing.TB) map[string]*dto.MetricFamily {
	t.Helper()
	return parseMetrics(t, e.scrapeText(t))
}

func parseMetrics(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return families
}

// findSample returns the value of the first sample of name whose labels
// include all of want, and whether there was one.
func findSample(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf, ok := families[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if labelsMatch(m, want) {
			return metricValue(m), true
		}
	}
	return 0, false
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, lp := range m.GetLabel() {
		have[lp.GetName()] = lp.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// promtoolCheckMetrics runs `promtool check metrics` on a scrape.
func promtoolCheckMetrics(t testing.TB, text string) {
	t.Helper()
	cmd := exec.Command(testenv.RequireTool(t, "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
