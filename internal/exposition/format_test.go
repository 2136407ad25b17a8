package exposition

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/exposition/expositiontest"
)

func family(name, help string, typ dto.MetricType, metrics ...*dto.Metric) *dto.MetricFamily {
	return &dto.MetricFamily{Name: new(name), Help: new(help), Type: typ.Enum(), Metric: metrics}
}

func sample(typ dto.MetricType, v float64, labels ...string) *dto.Metric {
	m := &dto.Metric{}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: new(labels[i]), Value: new(labels[i+1])})
	}
	if typ == dto.MetricType_COUNTER {
		m.Counter = &dto.Counter{Value: new(v)}
	} else {
		m.Gauge = &dto.Gauge{Value: new(v)}
	}
	return m
}

// The fast path writes what expfmt writes, byte for byte, in both formats:
// 100 subjects' series, and values and strings that need care.
func TestAppendTextAgreesWithExpfmt(t *testing.T) {
	f := newFixture()
	g, k := dto.MetricType_GAUGE, dto.MetricType_COUNTER
	sets := map[string][]*dto.MetricFamily{
		"100 subjects": gather(t, f.collector(f.subjects(100))),
		"care": {
			family("a_gauge", "help with \\ and \n and \"quotes\"", g,
				sample(g, 0), sample(g, math.Copysign(0, -1), "l", "neg zero"), sample(g, 1, "l", `back\slash`), sample(g, -1, "l", "new\nline"),
				sample(g, 1.5, "l", `"quoted"`), sample(g, 1e21, "l", "big"), sample(g, 123456789, "l", "int"), sample(g, 1e-7, "l", "small"),
				sample(g, math.NaN(), "l", "nan"), sample(g, math.Inf(1), "l", "inf"), sample(g, math.Inf(-1), "l", "-inf"),
				sample(g, 2, "a", "", "b", "ünïcode")),
			family("a_counter_total", "", k, sample(k, 0), sample(k, 42, "x", "y"), sample(k, 0.25, "x", "z")),
		},
	}
	for name, families := range sets {
		for _, om := range []bool{false, true} {
			got, ok := appendText(nil, families, om)
			if !ok {
				t.Fatalf("%s (OpenMetrics %v): fast path refused", name, om)
			}
			if want := expositiontest.ExpfmtText(t, families, om); !bytes.Equal(got, want) {
				t.Errorf("%s (OpenMetrics %v): fast path\n%s\nexpfmt\n%s", name, om, got, want)
			}
		}
	}
}

// What the fast path does not know it leaves to expfmt.
func TestAppendTextRefuses(t *testing.T) {
	g := dto.MetricType_GAUGE
	withTimestamp := sample(g, 1)
	withTimestamp.TimestampMs = new(int64(5))
	for name, tc := range map[string]struct {
		f  *dto.MetricFamily
		om bool
	}{
		"untyped":                       {family("u", "", dto.MetricType_UNTYPED, &dto.Metric{Untyped: &dto.Untyped{Value: new(1.0)}}), false},
		"timestamp":                     {family("t", "", g, withTimestamp), false},
		"OpenMetrics counter no _total": {family("c", "", dto.MetricType_COUNTER, sample(dto.MetricType_COUNTER, 1)), true},
		"UTF-8 name":                    {family("ü", "", g, sample(g, 1)), false},
		"UTF-8 label name":              {family("g", "", g, sample(g, 1, "ü", "v")), false},
		"gauge without a value":         {family("g", "", g, &dto.Metric{}), false},
	} {
		if got, ok := appendText([]byte("keep"), []*dto.MetricFamily{tc.f}, tc.om); ok || string(got) != "keep" {
			t.Errorf("%s: ok %v, %q", name, ok, got)
		}
	}
}

func FuzzAppendText(f *testing.F) {
	f.Add("value", "help", 1.5, false)
	f.Add("a\\b\"c\nd", "h\\\n\"", math.Copysign(0, -1), true)
	f.Add("", "", math.Inf(-1), true)
	f.Add("\xff", "x", 1e300, false)
	f.Fuzz(func(t *testing.T, value, help string, v float64, om bool) {
		if !utf8.ValidString(value) || !utf8.ValidString(help) {
			return // expfmt's input is valid UTF-8 (the registry checks it)
		}
		families := []*dto.MetricFamily{
			family("g", help, dto.MetricType_GAUGE, sample(dto.MetricType_GAUGE, v, "l", value)),
			family("c_total", help, dto.MetricType_COUNTER, sample(dto.MetricType_COUNTER, v, "l", value, "m", value)),
		}
		got, ok := appendText(nil, families, om)
		if !ok {
			t.Fatal("refused")
		}
		if want := expositiontest.ExpfmtText(t, families, om); !bytes.Equal(got, want) {
			t.Fatalf("fast path %q, expfmt %q", got, want)
		}
	})
}

// appendText appends families in the Prometheus text format, or in
// OpenMetrics without its "# EOF", with the escaping and number
// formatting the subjects' lines are rendered with (sink.go), for
// gauges and counters with legacy names and no timestamps, exemplars or
// created times: TestAppendTextAgreesWithExpfmt and FuzzAppendText hold
// it, and so those, to expfmt's bytes. ok is false, and b unchanged, for
// anything else.
func appendText(b []byte, families []*dto.MetricFamily, openMetrics bool) (_ []byte, ok bool) {
	start := len(b)
	for _, f := range families {
		name := f.GetName()
		typ := f.GetType()
		if (typ != dto.MetricType_GAUGE && typ != dto.MetricType_COUNTER) || !model.LegacyValidation.IsValidMetricName(name) {
			return b[:start], false
		}
		famName, sampleName := name, name
		if openMetrics && typ == dto.MetricType_COUNTER {
			if !strings.HasSuffix(name, "_total") {
				return b[:start], false // OpenMetrics calls it unknown: leave it to expfmt
			}
			famName = name[:len(name)-len("_total")]
		}
		if f.Help != nil {
			b = append(b, "# HELP "...)
			b = append(b, famName...)
			b = append(b, ' ')
			b = appendEscaped(b, f.GetHelp(), openMetrics)
			b = append(b, '\n')
		}
		b = append(b, "# TYPE "...)
		b = append(b, famName...)
		if typ == dto.MetricType_COUNTER {
			b = append(b, " counter\n"...)
		} else {
			b = append(b, " gauge\n"...)
		}
		for _, m := range f.Metric {
			var v float64
			switch {
			case m.TimestampMs != nil:
				return b[:start], false
			case typ == dto.MetricType_GAUGE && m.Gauge != nil:
				v = m.Gauge.GetValue()
			case typ == dto.MetricType_COUNTER && m.Counter != nil && m.Counter.Exemplar == nil && m.Counter.CreatedTimestamp == nil:
				v = m.Counter.GetValue()
			default:
				return b[:start], false
			}
			b = append(b, sampleName...)
			if len(m.Label) > 0 {
				b = append(b, '{')
				for i, lp := range m.Label {
					if !model.LegacyValidation.IsValidLabelName(lp.GetName()) {
						return b[:start], false
					}
					if i > 0 {
						b = append(b, ',')
					}
					b = append(b, lp.GetName()...)
					b = append(b, '=', '"')
					b = appendEscaped(b, lp.GetValue(), true)
					b = append(b, '"')
				}
				b = append(b, '}')
			}
			b = append(b, ' ')
			b = appendFloat(b, v, openMetrics)
			b = append(b, '\n')
		}
	}
	return b, true
}
