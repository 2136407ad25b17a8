package exposition

import (
	"bytes"
	"math"
	"strconv"
)

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
