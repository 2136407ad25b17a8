package main

import (
	"net/http"

	"github.com/prometheus/common/version"

	"github.com/executor-exporter/executor_exporter/collector"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
)

// statusJSONPath is where the status page's content is served as JSON.
const statusJSONPath = "/status.json"

// handleStatusPage serves the status page at / and its JSON twin at
// /status.json (docs/status-page.md) in place of exporter-toolkit's landing
// page. They are on the same server as the metrics, so behind the same TLS
// and basic auth (--web.config.file). Each request assembles a snapshot
// from what the collectors hold; nothing runs when nobody asks. A metrics
// path of / or /status.json keeps the path for the metrics.
func handleStatusPage(mux *http.ServeMux, ec *collector.ExecutorCollector, metricsPath string) {
	source := func() statuspage.Snapshot {
		s := ec.Status()
		s.Version = version.Info()
		s.MetricsPath = metricsPath
		return s
	}
	if metricsPath != "/" {
		mux.Handle("/", statuspage.HTMLHandler(source))
	}
	if metricsPath != statusJSONPath {
		mux.Handle(statusJSONPath, statuspage.JSONHandler(source))
	}
}
