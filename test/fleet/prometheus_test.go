package fleet

// A real Prometheus 3 (the one `make prometheus3` builds, named by
// $PROMETHEUS3) for the fleet's tests, killed when the test ends and its
// log printed if the test failed.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

func prometheus3(t testing.TB) string {
	t.Helper()
	p := os.Getenv("PROMETHEUS3")
	if p == "" {
		testenv.Unavailable(t, "PROMETHEUS3 is not set: make test builds Prometheus 3 (make prometheus3) and sets it")
	}
	return p
}

// promtool3 is the promtool beside $PROMETHEUS3.
func promtool3(t testing.TB) string {
	return filepath.Join(filepath.Dir(prometheus3(t)), "promtool")
}

type prom struct {
	Addr string
	Dir  string // holds prometheus.yml and data/
}

// startProm runs Prometheus 3 with the prometheus.yml config writes
// (given the server's address and directory) and extra flags.
func startProm(t testing.TB, config func(p *prom) string, flags ...string) *prom {
	t.Helper()
	p := &prom{Addr: testenv.FreeAddr(t), Dir: t.TempDir()}
	cfg := filepath.Join(p.Dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config(p)), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.StartDaemon(t, prometheus3(t), append([]string{"--config.file=" + cfg,
		"--storage.tsdb.path=" + filepath.Join(p.Dir, "data"), "--web.listen-address=" + p.Addr,
		"--web.enable-lifecycle"}, flags...)...)
	testenv.WaitFor(t, 2*time.Minute, "prometheus to be ready", func() bool {
		resp, err := http.Get("http://" + p.Addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// sample is one series of an answer: Value for an instant vector, Values
// for a matrix.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
	Values [][2]any          `json:"values"`
}

func (s sample) float() float64 {
	str, _ := s.Value[1].(string)
	v, _ := strconv.ParseFloat(str, 64)
	return v
}

// answer is a query's result and Prometheus's own account of it.
type answer struct {
	Samples []sample
	Took    time.Duration // wall time of the HTTP request
	Stats   struct {
		Timings struct {
			EvalTotalTime float64 `json:"evalTotalTime"`
		} `json:"timings"`
		Samples struct {
			TotalQueryableSamples int64 `json:"totalQueryableSamples"`
			PeakSamples           int64 `json:"peakSamples"`
		} `json:"samples"`
	}
}

// query runs an instant query at t (zero: now).
func (p *prom) query(expr string, at time.Time) (answer, error) {
	v := url.Values{"query": {expr}, "stats": {"all"}}
	if !at.IsZero() {
		v.Set("time", strconv.FormatInt(at.Unix(), 10))
	}
	return p.api("/api/v1/query", v)
}

// queryRange runs a range query as Grafana does for a time series panel.
func (p *prom) queryRange(expr string, start, end time.Time, step time.Duration) (answer, error) {
	return p.api("/api/v1/query_range", url.Values{"query": {expr}, "stats": {"all"},
		"start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix(), 10)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
}

func (p *prom) api(path string, v url.Values) (answer, error) {
	var a answer
	began := time.Now()
	resp, err := http.PostForm("http://"+p.Addr+path, v)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
			Stats      json.RawMessage `json:"stats"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return a, err
	}
	a.Took = time.Since(began)
	if body.Status != "success" {
		return a, fmt.Errorf("%s: %s", body.Status, body.Error)
	}
	if len(body.Data.Stats) > 0 {
		_ = json.Unmarshal(body.Data.Stats, &a.Stats)
	}
	if body.Data.ResultType == "scalar" {
		a.Samples = []sample{{Value: [2]any{0, "0"}}}
		return a, nil
	}
	return a, json.Unmarshal(body.Data.Result, &a.Samples)
}

// mustQuery runs an instant query now, failing the test on an error.
func (p *prom) mustQuery(t testing.TB, expr string) []sample {
	t.Helper()
	a, err := p.query(expr, time.Time{})
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	return a.Samples
}

// reload makes Prometheus read its configuration again.
func (p *prom) reload(t testing.TB) {
	t.Helper()
	resp, err := http.Post("http://"+p.Addr+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("prometheus reload: %s", resp.Status)
	}
}
