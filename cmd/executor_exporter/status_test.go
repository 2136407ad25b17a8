package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/collector"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
)

func TestStatusPageRoutes(t *testing.T) {
	ec := collector.NewExecutorCollectorFrom(log.NewNopLogger(), map[string]collector.Collector{})
	for _, tc := range []struct {
		metricsPath string
		path        string
		code        int
		want        string
	}{
		{"/metrics", "/", 200, `<a href="/metrics">Metrics</a>`},
		{"/metrics", "/status.json", 200, `"metrics_path": "/metrics"`},
		{"/metrics", "/nothing-here", 404, ""},
		// The metrics path wins when it is one of the page's.
		{"/", "/", 200, "metrics"},
		{"/status.json", "/status.json", 200, "metrics"},
		{"/status.json", "/", 200, `<a href="/status.json">Metrics</a>`},
	} {
		mux := http.NewServeMux()
		mux.Handle(tc.metricsPath, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics") }))
		handleStatusPage(mux, ec, tc.metricsPath)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("metrics at %s, GET %s: %d %q, want %d with %q", tc.metricsPath, tc.path, rec.Code, rec.Body.String(), tc.code, tc.want)
		}
	}
}

func TestStatusJSONHasVersion(t *testing.T) {
	mux := http.NewServeMux()
	handleStatusPage(mux, collector.NewExecutorCollectorFrom(log.NewNopLogger(), map[string]collector.Collector{}), "/metrics")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status.json", nil))
	var s statuspage.Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Version, "version=") || s.Time.IsZero() {
		t.Errorf("status.json version %q, time %v; want the build's version and the snapshot's time", s.Version, s.Time)
	}
}
