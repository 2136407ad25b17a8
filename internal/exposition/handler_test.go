package exposition

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/exposition/expositiontest"
)

// registrySeries are series of a registry's that the table's families
// fall among by name: before, between, after them, and one in a table
// family (x_classes) that the subjects' lines then follow.
func registrySeries() prometheus.Collector {
	descs := []*prometheus.Desc{
		prometheus.NewDesc("a_first", "Before the table's.", nil, nil),
		prometheus.NewDesc("x_gc_zzz", "Between the table's.", []string{"l"}, nil),
		prometheus.NewDesc("x_classes", "Classes loaded.", []string{"pid", "role", "app_id", "executor_id"}, nil),
		prometheus.NewDesc("z_last", "After the table's.", nil, nil),
	}
	return collectFunc(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(descs[0], prometheus.GaugeValue, 1)
		ch <- prometheus.MustNewConstMetric(descs[1], prometheus.GaugeValue, 2, "v")
		ch <- prometheus.MustNewConstMetric(descs[2], prometheus.GaugeValue, 3, "1", "driver", "app", "")
		ch <- prometheus.MustNewConstMetric(descs[3], prometheus.GaugeValue, 4)
	})
}

type fixtureSource struct {
	f        *fixture
	subjects []subject
	registry []*dto.MetricFamily
}

func (s fixtureSource) Snapshot(openMetrics bool) ([]*dto.MetricFamily, []*Text, error) {
	return s.registry, s.f.texts(s.subjects, openMetrics), nil
}

// The handler serves, in both text formats, gzipped or not, what promhttp
// serves of the same series gathered by a registry: line for line, one
// header per family, as one valid gzip member; protobuf goes to the
// fallback.
func TestHandlerServesWhatPromhttpServes(t *testing.T) {
	f := newFixture()
	subjects := f.subjects(30)
	opts := promhttp.HandlerOpts{EnableOpenMetrics: true}
	reference := prometheus.NewRegistry()
	reference.MustRegister(registrySeries(), f.collector(subjects))
	want := promhttp.HandlerFor(reference, opts)
	fallback := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	got := Handler(f.table, fixtureSource{f: f, subjects: subjects, registry: gather(t, registrySeries())}, fallback, opts)

	for _, accept := range []string{"application/openmetrics-text;version=1.0.0", "text/plain;version=0.0.4"} {
		wantRec, wantBody := expositiontest.Serve(t, want, accept, "gzip")
		for _, enc := range []string{"gzip", "", "gzip;q=0", "deflate, gzip;q=0.5"} {
			rec, body := expositiontest.Serve(t, got, accept, enc)
			if !slices.Equal(sortedLines(body), sortedLines(wantBody)) {
				t.Fatalf("Accept %q, Accept-Encoding %q: handler and promhttp differ:\n%s\n\npromhttp:\n%s", accept, enc, body, wantBody)
			}
			if strings.HasSuffix(wantBody, "# EOF\n") != strings.HasSuffix(body, "# EOF\n") {
				t.Errorf("Accept %q: the end differs from promhttp's:\n%s", accept, body)
			}
			if strings.Contains(accept, "text/plain") {
				parser := expfmt.NewTextParser(model.UTF8Validation)
				if _, err := parser.TextToMetricFamilies(strings.NewReader(body)); err != nil {
					t.Errorf("the answer does not parse: %v\n%s", err, body)
				}
			}
			wantEncoding := ""
			if enc == "gzip" || enc == "deflate, gzip;q=0.5" {
				wantEncoding = "gzip"
			}
			if rec.Header().Get("Content-Encoding") != wantEncoding || rec.Header().Get("Content-Type") != wantRec.Header().Get("Content-Type") {
				t.Errorf("Accept-Encoding %q: headers %v, promhttp's %v", enc, rec.Header(), wantRec.Header())
			}
		}
	}
	if rec, _ := expositiontest.Serve(t, got, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", ""); rec.Code != http.StatusTeapot {
		t.Errorf("protobuf asked: status %d, not the fallback's", rec.Code)
	}
}

func sortedLines(body string) []string {
	lines := strings.Split(strings.TrimSpace(body), "\n")
	slices.Sort(lines)
	return lines
}

// A subject's lines are grouped by family, and each group is exactly
// the family's lines.
func TestTextGroupsByFamily(t *testing.T) {
	f := newFixture()
	text := f.texts(f.subjects(2), false)[1]
	if len(text.families) != len(f.table.families) {
		t.Fatalf("%d families rendered, the table has %d", len(text.families), len(f.table.families))
	}
	for _, fam := range f.table.families {
		lines := bytes.SplitAfter(text.families[fam.index], []byte("\n"))
		if len(lines) < 2 && fam.name != "x_uptime_seconds" {
			t.Errorf("family %s has no line", fam.name)
		}
		for _, line := range lines {
			if len(line) > 0 && !bytes.HasPrefix(line, []byte(fam.name+"{")) {
				t.Errorf("family %s holds %q", fam.name, line)
			}
		}
	}
}

// A Cache renders once per format and keeps what it rendered.
func TestCacheRendersOncePerFormat(t *testing.T) {
	f := newFixture()
	s := f.subjects(1)[0]
	var c Cache
	renders := 0
	emit := func(sink Sink) { renders++; f.emit(sink, s) }
	text, om := c.Text(f.table, false, emit), c.Text(f.table, true, emit)
	if c.Text(f.table, false, emit) != text || c.Text(f.table, true, emit) != om || renders != 2 {
		t.Errorf("%d renders for two formats asked twice each", renders)
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
