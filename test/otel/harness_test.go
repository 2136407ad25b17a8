// Package otel runs the built exporter behind a real OpenTelemetry
// Collector (built by `make otelcol` from builder.yaml, named by $OTELCOL)
// and checks what the collector's prometheus receiver makes of a scrape:
// docs/opentelemetry.md is written from what these tests observe.
package otel

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// collectorBinary is the collector `make otelcol` builds; `make test`
// passes its path in $OTELCOL. Without it the test fails in CI and skips
// elsewhere.
func collectorBinary(t testing.TB) string {
	t.Helper()
	p := os.Getenv("OTELCOL")
	if p == "" {
		testenv.Unavailable(t, "OTELCOL is not set: make otelcol builds the OpenTelemetry Collector and make test sets it")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("OTELCOL: %v (make otelcol builds it)", err)
	}
	return p
}

// startExporter runs the exporter binary on a free loopback address and
// waits until it serves /metrics.
func startExporter(t testing.TB, args ...string) string {
	t.Helper()
	addr := testenv.FreeAddr(t)
	testenv.StartDaemon(t, testenv.ExporterBinary(t), append([]string{"--web.listen-address=" + addr}, args...)...)
	testenv.WaitFor(t, 30*time.Second, "exporter to serve /metrics on "+addr, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return addr
}

// collectorConfig is the collector configuration docs/opentelemetry.md
// recommends, with the test's exporter as the only target and the test's
// OTLP endpoint as the only destination. The collector's own telemetry
// is off: it would listen on a fixed port.
func collectorConfig(job, target, scrapeInterval, otlpEndpoint string) string {
	return `receivers:
  prometheus:
    config:
      scrape_configs:
        - job_name: ` + job + `
          scrape_interval: ` + scrapeInterval + `
          scrape_timeout: ` + scrapeInterval + `
          static_configs:
            - targets: ['` + target + `']
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  batch: {}
exporters:
  otlp_http:
    endpoint: ` + otlpEndpoint + `
    encoding: json
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [prometheus]
      processors: [memory_limiter, batch]
      exporters: [otlp_http]
`
}

// startCollector writes config to a file and runs the collector on it.
func startCollector(t testing.TB, config string) {
	t.Helper()
	bin := collectorBinary(t)
	path := filepath.Join(t.TempDir(), "otelcol.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.StartDaemon(t, bin, "--config="+path)
}

// scrape returns the metric families of one scrape in Prometheus's text
// format, parsed as Prometheus parses it.
func scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	body := get(t, "http://"+addr+"/metrics", "")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return families
}

// openMetricsUnits returns the # UNIT lines of an OpenMetrics scrape by
// metric family name: the only place a unit can come from.
func openMetricsUnits(t testing.TB, addr string) map[string]string {
	t.Helper()
	body := get(t, "http://"+addr+"/metrics", "application/openmetrics-text;version=1.0.0")
	units := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "UNIT" {
			units[f[2]] = f[3]
		}
	}
	return units
}

func get(t testing.TB, url, accept string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body)
}

// labelsOf returns a sample's labels as Prometheus stores them: a label
// with an empty value is no label.
func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		if lp.GetValue() != "" {
			out[lp.GetName()] = lp.GetValue()
		}
	}
	return out
}

func splitHostPort(t testing.TB, addr string) (string, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}
