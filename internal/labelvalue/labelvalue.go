// Package labelvalue makes strings read from other processes, the kernel
// log or a metadata service safe to use as Prometheus label values.
package labelvalue

import (
	"strings"
	"unicode/utf8"
)

// MaxBytes is the cap the exporter puts on label values it did not choose:
// a hostile command line or metadata answer must not be able to grow a
// series without bound.
const MaxBytes = 128

// Cap returns s as valid UTF-8 (invalid bytes become U+FFFD) and at most
// max bytes long, cut on a rune boundary.
func Cap(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
