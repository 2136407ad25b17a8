package collector

import (
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
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/exposition/expositiontest"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/nativemem"
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
		rec, body := expositiontest.Serve(t, h, accept, encoding)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		if cl := rec.Header().Get("Content-Length"); cl != "" && cl != strconv.Itoa(rec.Body.Len()) {
			t.Fatalf("Content-Length %s, body %d bytes", cl, rec.Body.Len())
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

// The rendered text of every kind of JVM — labels that need escaping, in
// a pod with labels, with a breakdown, without hsperfdata, ended — is,
// in both formats, what expfmt writes of the same series gathered by a
// registry, line for line; and it parses, one header per family.
func TestRenderedTextIsWhatARegistryServes(t *testing.T) {
	now := time.Now()
	view := syntheticView(t, 5, now)
	view.JVMs[0].AppID = `app "quoted" \ back` + "\nslash"
	view.JVMs[0].ExecutorID = "ünï"
	view.JVMs[1].CgroupPath = "/kubepods/burstable/pod" + layoutUID + "/" + layoutCID
	view.JVMs[2].Native = &jvm.NativeMemory{Checked: now}
	for r := nativemem.Region(0); r < nativemem.NumRegions; r++ {
		view.JVMs[2].Native.Last.Regions[r] = uint64(r) << 20
	}
	view.JVMs[3].Counters = "disabled"
	view.JVMs[4].Stats.Pools = append(view.JVMs[4].Stats.Pools, view.JVMs[4].Stats.Pools[0]) // a name twice: the first counts
	view.Ended = []jvm.Sample{{Identity: jvm.Identity{PID: 20000, Role: "executor", AppID: "app-gone", ExecutorID: "9"},
		Peaks: jvm.Peaks{Container: 3 << 30, Resident: 2 << 30, HeapLive: 1 << 30, Python: 0}}}
	pods := staticPods{cloud.PodsSnapshot{Index: cloud.NewPodIndex([]cloud.Pod{{UID: layoutUID, Namespace: "data-eng", Name: "etl-exec-7",
		Labels:     map[string]string{"spark-app-name": `etl "nightly"`, "team": "data\\eng"},
		Containers: map[string]cloud.Container{layoutCID: {Name: "spark-kubernetes-executor", ID: "containerd://" + layoutCID}}}})}}

	for _, allowlist := range [][]string{nil, {"spark-app-name", "team"}, {"*"}} {
		c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
		c.pods, c.podLabels = pods, allowlist
		set := c.series(view)
		for _, om := range []bool{false, true} {
			got := renderSet(t, c, set, om)
			want := string(expositiontest.ExpfmtText(t, setFamilies(t, c, set), om))
			if om {
				want += "# EOF\n"
			}
			if !slices.Equal(sortedLines(got), sortedLines(want)) {
				t.Errorf("allowlist %v, openMetrics %v: rendered text differs from expfmt's:\n%s\n\nexpfmt:\n%s", allowlist, om, got, want)
			}
			if !om {
				parser := expfmt.NewTextParser(model.UTF8Validation)
				if _, err := parser.TextToMetricFamilies(strings.NewReader(got)); err != nil {
					t.Errorf("allowlist %v: rendered text does not parse: %v", allowlist, err)
				}
			}
			for _, must := range []string{`app_id="app \"quoted\" \\ back\nslash"`, `pod="etl-exec-7"`, `region="gc"`, `counters="disabled"`, `pid="20000"`} {
				if !strings.Contains(got, must) {
					t.Errorf("allowlist %v, openMetrics %v: no %s in\n%s", allowlist, om, must, got)
				}
			}
			if allowlist != nil && !strings.Contains(got, `label_team="data\\eng"`) {
				t.Errorf("allowlist %v: no pod label in\n%s", allowlist, got)
			}
		}
	}
}
