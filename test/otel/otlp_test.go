package otel

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The OTLP/JSON encoding of an ExportMetricsServiceRequest, as much of it
// as the tests read (field names as the OTLP specification gives them).
type exportRequest struct {
	ResourceMetrics []struct {
		Resource struct {
			Attributes []keyValue `json:"attributes"`
		} `json:"resource"`
		ScopeMetrics []struct {
			Scope struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"scope"`
			Metrics []otlpMetric `json:"metrics"`
		} `json:"scopeMetrics"`
	} `json:"resourceMetrics"`
}

type keyValue struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

type otlpMetric struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Unit        string `json:"unit"`
	Gauge       *struct {
		DataPoints []numberPoint `json:"dataPoints"`
	} `json:"gauge"`
	Sum *struct {
		DataPoints             []numberPoint `json:"dataPoints"`
		AggregationTemporality int           `json:"aggregationTemporality"`
		IsMonotonic            bool          `json:"isMonotonic"`
	} `json:"sum"`
	Summary *struct {
		DataPoints []summaryPoint `json:"dataPoints"`
	} `json:"summary"`
	Histogram *struct {
		DataPoints             []summaryPoint `json:"dataPoints"`
		AggregationTemporality int            `json:"aggregationTemporality"`
	} `json:"histogram"`
	ExponentialHistogram json.RawMessage `json:"exponentialHistogram"`
}

type numberPoint struct {
	Attributes        []keyValue `json:"attributes"`
	StartTimeUnixNano jsonUint   `json:"startTimeUnixNano"`
	TimeUnixNano      jsonUint   `json:"timeUnixNano"`
	AsDouble          *jsonFloat `json:"asDouble"`
	AsInt             *jsonInt   `json:"asInt"`
	Flags             uint32     `json:"flags"`
}

// summaryPoint is what the tests read of a summary or histogram point.
type summaryPoint struct {
	Attributes        []keyValue `json:"attributes"`
	StartTimeUnixNano jsonUint   `json:"startTimeUnixNano"`
	TimeUnixNano      jsonUint   `json:"timeUnixNano"`
	Count             jsonUint   `json:"count"`
	Sum               *jsonFloat `json:"sum"`
	Flags             uint32     `json:"flags"`
}

// OTLP/JSON writes 64-bit integers as decimal strings; plain numbers are
// accepted too.
type jsonUint uint64

func (u *jsonUint) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseUint(strings.Trim(string(b), `"`), 10, 64)
	*u = jsonUint(v)
	return err
}

type jsonInt int64

func (i *jsonInt) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(strings.Trim(string(b), `"`), 10, 64)
	*i = jsonInt(v)
	return err
}

// jsonFloat accepts a number or the strings NaN, Infinity and -Infinity.
type jsonFloat float64

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	switch s := strings.Trim(string(b), `"`); s {
	case "NaN":
		*f = jsonFloat(math.NaN())
	case "Infinity", "+Infinity", "Inf", "+Inf":
		*f = jsonFloat(math.Inf(1))
	case "-Infinity", "-Inf":
		*f = jsonFloat(math.Inf(-1))
	default:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		*f = jsonFloat(v)
	}
	return nil
}

// noRecordedValue is DataPointFlags.FLAG_NO_RECORDED_VALUE: the point
// stands for a Prometheus staleness marker.
const noRecordedValue = 1

// Kinds of OTLP metric.
const (
	kindGauge     = "Gauge"
	kindSum       = "Sum"
	kindSummary   = "Summary"
	kindHistogram = "Histogram"
	kindExpHisto  = "ExponentialHistogram"
)

// aggregationCumulative is AGGREGATION_TEMPORALITY_CUMULATIVE.
const aggregationCumulative = 2

// point is one data point of one export, flattened with its metric and
// resource.
type point struct {
	Export      int               // index of the export it came in
	Resource    map[string]string // resource attributes
	Scope       string
	Name        string
	Description string
	Unit        string
	Kind        string
	Temporality int  // Sum and Histogram
	Monotonic   bool // Sum
	Attrs       map[string]string
	Start, Time uint64
	Value       float64 // number points; a summary's or histogram's count
	Flags       uint32
}

// Key names a series: its resource, metric name and attributes.
func (p point) Key() string { return labelsKey(p.Resource) + " " + p.Name + labelsKey(p.Attrs) }

// Stale says whether the point stands for a staleness marker.
func (p point) Stale() bool { return p.Flags&noRecordedValue != 0 }

func labelsKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// attrs turns OTLP attributes into a map. A value that is not a string
// (every Prometheus label is one) is kept as its JSON, so that it never
// equals the label it came from.
func attrs(kvs []keyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		var v struct {
			StringValue *string `json:"stringValue"`
		}
		if err := json.Unmarshal(kv.Value, &v); err == nil && v.StringValue != nil {
			m[kv.Key] = *v.StringValue
		} else {
			m[kv.Key] = "json:" + string(kv.Value)
		}
	}
	return m
}

// otlpSink is an OTLP/HTTP endpoint for metrics in JSON, as a backend
// serves it: the collector's otlp_http exporter sends to it.
type otlpSink struct {
	URL string

	mu     sync.Mutex
	points []point
	n      int    // exports received
	last   []byte // the last export's body, as received
	errs   []string
}

func newOTLPSink(t testing.TB) *otlpSink {
	t.Helper()
	s := &otlpSink{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *otlpSink) serve(w http.ResponseWriter, r *http.Request) {
	body, err := s.read(r)
	if err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, err.Error())
		s.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req exportRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, fmt.Sprintf("decode export: %v", err))
		s.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.points = append(s.points, flatten(s.n, &req)...)
	s.n++
	s.last = body
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

func (s *otlpSink) read(r *http.Request) ([]byte, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/metrics" {
		return nil, fmt.Errorf("unexpected %s %s", r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return nil, fmt.Errorf("Content-Type %q, want application/json", ct)
	}
	var body io.Reader = r.Body
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	default:
		return nil, fmt.Errorf("Content-Encoding %q", enc)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(body, 64<<20)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// flatten turns one export into its points.
func flatten(export int, req *exportRequest) []point {
	var out []point
	for _, rm := range req.ResourceMetrics {
		res := attrs(rm.Resource.Attributes)
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				base := point{Export: export, Resource: res, Scope: sm.Scope.Name, Name: m.Name,
					Description: m.Description, Unit: m.Unit}
				add := func(kind string, a []keyValue, start, ts jsonUint, v float64, flags uint32) {
					p := base
					p.Kind, p.Attrs, p.Start, p.Time, p.Value, p.Flags = kind, attrs(a), uint64(start), uint64(ts), v, flags
					switch {
					case m.Sum != nil:
						p.Temporality, p.Monotonic = m.Sum.AggregationTemporality, m.Sum.IsMonotonic
					case m.Histogram != nil:
						p.Temporality = m.Histogram.AggregationTemporality
					}
					out = append(out, p)
				}
				switch {
				case m.Gauge != nil:
					for _, dp := range m.Gauge.DataPoints {
						add(kindGauge, dp.Attributes, dp.StartTimeUnixNano, dp.TimeUnixNano, dp.value(), dp.Flags)
					}
				case m.Sum != nil:
					for _, dp := range m.Sum.DataPoints {
						add(kindSum, dp.Attributes, dp.StartTimeUnixNano, dp.TimeUnixNano, dp.value(), dp.Flags)
					}
				case m.Summary != nil:
					for _, dp := range m.Summary.DataPoints {
						add(kindSummary, dp.Attributes, dp.StartTimeUnixNano, dp.TimeUnixNano, float64(dp.Count), dp.Flags)
					}
				case m.Histogram != nil:
					for _, dp := range m.Histogram.DataPoints {
						add(kindHistogram, dp.Attributes, dp.StartTimeUnixNano, dp.TimeUnixNano, float64(dp.Count), dp.Flags)
					}
				case m.ExponentialHistogram != nil:
					add(kindExpHisto, nil, 0, 0, 0, 0)
				}
			}
		}
	}
	return out
}

func (dp numberPoint) value() float64 {
	switch {
	case dp.AsDouble != nil:
		return float64(*dp.AsDouble)
	case dp.AsInt != nil:
		return float64(*dp.AsInt)
	}
	return math.NaN()
}

// Points returns a copy of every point received so far, in arrival order.
func (s *otlpSink) Points() []point {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]point(nil), s.points...)
}

// Exports counts the exports received.
func (s *otlpSink) Exports() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Last returns the body of the last export received.
func (s *otlpSink) Last() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Errors returns what the sink refused, for the test's failure message.
func (s *otlpSink) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}
