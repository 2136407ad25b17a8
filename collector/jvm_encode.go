package collector

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// appendText appends families in the Prometheus text format, or in
// OpenMetrics without its "# EOF", byte for byte as expfmt's encoders
// write them, for gauges and counters with legacy names and no
// timestamps, exemplars or created times: the registry's families of a
// scrape and the per-JVM families' headers. Its escaping and number
// formatting are also the per-JVM lines' (jvm_render.go).
// TestAppendTextAgreesWithExpfmt and FuzzAppendText hold it to expfmt's
// bytes. ok is false, and b unchanged, for anything else: the caller
// then uses expfmt.
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

// appendEscaped escapes a label value or help text as expfmt does:
// backslash and newline, and the double quote when quote is set (label
// values; OpenMetrics help texts).
func appendEscaped(b []byte, s string, quote bool) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] != '\\' && s[i] != '\n' && s[i] != '"'
	}
	if plain {
		return append(b, s...) // most values: a byte loop beats strings.ContainsAny
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat formats a sample value as expfmt does: OpenMetrics marks
// integral values with ".0".
func appendFloat(b []byte, f float64, openMetrics bool) []byte {
	switch {
	case f == 0: // -0 too
		if openMetrics {
			return append(b, "0.0"...)
		}
		return append(b, '0')
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	if openMetrics && !bytes.ContainsAny(b[start:], "e.") {
		b = append(b, '.', '0')
	}
	return b
}
