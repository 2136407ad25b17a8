package collector

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// changingViews is a tracker whose every Current is a new view, with one
// JVM more than the last (up to 40, then from 1 again): any two scrapes
// served from different views differ in how many JVMs they count.
type changingViews struct {
	t     testing.TB
	mu    sync.Mutex
	n     int
	at    time.Time
	views map[int]jvm.View
}

func (c *changingViews) Current() (jvm.View, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = c.n%40 + 1
	c.at = c.at.Add(time.Second)
	v, ok := c.views[c.n]
	if !ok {
		v = syntheticView(c.t, c.n, c.at)
		c.views[c.n] = v
	}
	v.Time = c.at
	return v, nil
}

func (c *changingViews) ErrorCounts() map[string]uint64 { return nil }
func (c *changingViews) Reads() uint64                  { return 0 }
func (c *changingViews) NativeReads() (uint64, uint64)  { return 0, 0 }

// Two scrapers at once, in every format: each answer is one view's, its
// count of JVMs (executor_jvm_processes) that of the JVMs whose series it
// serves.
func TestConcurrentScrapesServeOneViewEach(t *testing.T) {
	views := &changingViews{t: t, at: time.Unix(1_800_000_000, 0), views: map[int]jvm.View{}}
	ec := NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"jvm": newJVMCollector(views, log.NewNopLogger())})
	handler := ec.Handler(prometheus.NewRegistry(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
	accepts := []string{
		"text/plain;version=0.0.4",
		"application/openmetrics-text;version=1.0.0",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
	}
	const scrapes = 60
	var wg sync.WaitGroup
	errs := make(chan string, 2*scrapes)
	for scraper := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range scrapes {
				accept := accepts[(i+scraper)%len(accepts)]
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Accept", accept)
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if msg := oneView(rec); msg != "" {
					errs <- accept + ": " + msg
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}

// oneView says what is wrong with an answer that is not one view's.
func oneView(rec *httptest.ResponseRecorder) string {
	if rec.Code != http.StatusOK {
		return "status " + rec.Result().Status
	}
	processes, infos := -1.0, 0
	format := expfmt.ResponseFormat(rec.Result().Header)
	if format.FormatType() == expfmt.TypeProtoDelim {
		dec := expfmt.NewDecoder(rec.Body, format)
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err != nil {
				break
			}
			switch mf.GetName() {
			case "executor_jvm_processes":
				processes = mf.Metric[0].GetGauge().GetValue()
			case "executor_jvm_info":
				infos = len(mf.Metric)
			}
		}
	} else {
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "executor_jvm_processes "); ok {
				processes, _ = strconv.ParseFloat(v, 64)
			}
			if strings.HasPrefix(line, "executor_jvm_info{") {
				infos++
			}
		}
	}
	if processes < 1 || int(processes) != infos {
		return fmt.Sprintf("executor_jvm_processes %v, %d executor_jvm_info series", processes, infos)
	}
	return ""
}
