package collector

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// sortedLines is a text exposition's lines, sorted, with the scrape
// duration (which differs between two scrapes) read as 0.
func sortedLines(body string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		if strings.HasPrefix(l, "executor_scrape_collector_duration_seconds{") {
			l = l[:strings.LastIndexByte(l, ' ')] + " 0"
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	return lines
}

// The text handler serves, gzipped or not, what promhttp serves of the same
// view, as one valid gzip member; other formats go to promhttp.
func TestTextHandlerServesWhatPromhttpServes(t *testing.T) {
	testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m", "-XX:+UseSerialGC"}, Args: []string{"--executor-id", "1", "--app-id", "app-text"}})
	testjvm.Start(t, testjvm.Options{MainClass: testjvm.DriverClass, JVMArgs: []string{"-Xmx32m", "-XX:+UseG1GC"}})
	tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000, MaxAge: time.Hour}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tracker.Refresh(); err != nil {
		t.Fatal(err)
	}
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 2, EnableOpenMetrics: true}
	ec := NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"jvm": NewJVMCollector(tracker, log.NewNopLogger())})
	handler := ec.Handler(prometheus.NewRegistry(), opts)
	plain := prometheus.NewRegistry()
	plain.MustRegister(ec)
	promhttpHandler := promhttp.HandlerFor(plain, opts)

	get := func(h http.Handler, accept, encoding string) (*httptest.ResponseRecorder, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", accept)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		body := rec.Body.String()
		if cl := rec.Header().Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(body)) {
			t.Fatalf("Content-Length %s, body %d bytes", cl, len(body))
		}
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			zr.Multistream(false)
			b, err := io.ReadAll(zr) // checks the CRC and the length
			if err != nil {
				t.Fatalf("gzip: %v", err)
			}
			if rest, _ := io.ReadAll(rec.Body); len(rest) > 0 {
				t.Fatalf("%d bytes after the gzip member", len(rest))
			}
			body = string(b)
		}
		return rec, body
	}
	for _, accept := range []string{
		"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		"text/plain;version=0.0.4",
	} {
		testTextHandlerAccept(t, get, handler, promhttpHandler, accept)
	}
	rec, _ := get(handler, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "")
	if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "protobuf") {
		t.Errorf("protobuf asked, %q served", ct)
	}
}

func testTextHandlerAccept(t *testing.T, get func(http.Handler, string, string) (*httptest.ResponseRecorder, string), handler, promhttpHandler http.Handler, accept string) {
	t.Helper()
	wantRec, want := get(promhttpHandler, accept, "gzip")
	if !strings.Contains(want, `app_id="app-text"`) {
		t.Fatalf("promhttp does not serve the test's JVM:\n%s", want)
	}
	if strings.HasPrefix(accept, "application/openmetrics") != strings.HasSuffix(want, "# EOF\n") {
		t.Fatalf("Accept %q: promhttp's answer:\n%s", accept, want)
	}
	for _, enc := range []string{"gzip", "", "gzip;q=0", "deflate, gzip;q=0.5"} {
		for range 2 { // the second scrape serves the same view
			rec, got := get(handler, accept, enc)
			if strings.HasSuffix(want, "# EOF\n") && !strings.HasSuffix(got, "# EOF\n") {
				t.Fatalf("Accept %q: no # EOF at the end:\n%s", accept, got)
			}
			if !slices.Equal(sortedLines(got), sortedLines(want)) {
				t.Fatalf("Accept %q, Accept-Encoding %q: text handler and promhttp differ:\n%s\n\npromhttp:\n%s", accept, enc, got, want)
			}
			wantEncoding := ""
			if strings.Contains(enc, "gzip") && !strings.Contains(enc, "q=0,") && !strings.HasSuffix(enc, "q=0") {
				wantEncoding = "gzip"
			}
			if rec.Header().Get("Content-Encoding") != wantEncoding || rec.Header().Get("Content-Type") != wantRec.Header().Get("Content-Type") {
				t.Errorf("Accept-Encoding %q: headers %v, promhttp's %v", enc, rec.Header(), wantRec.Header())
			}
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for enc, want := range map[string]bool{
		"gzip": true, "gzip, deflate": true, "deflate , gzip;q=0.5": true, "br;q=1.0, gzip;q=0.8": true,
		"": false, "identity": false, "gzip;q=0": false, "gzip; q=0": false, "xgzip": false,
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", enc)
		if got := acceptsGzip(req); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", enc, got, want)
		}
	}
}
