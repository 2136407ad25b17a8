package labelvalue

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCap(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"short", "r5.xlarge", 128, "r5.xlarge"},
		{"exact", "abcd", 4, "abcd"},
		{"cut", "abcdef", 4, "abcd"},
		{"invalid utf-8", "a\xffb", 128, "a\uFFFDb"},
		{"cut before a multi-byte rune", "ab€", 4, "ab"},
		{"zero", "abc", 0, ""},
	} {
		if got := Cap(tc.in, tc.max); got != tc.want {
			t.Errorf("%s: Cap(%q, %d) = %q, want %q", tc.name, tc.in, tc.max, got, tc.want)
		}
	}
	if got := Cap(strings.Repeat("x", 5000), MaxBytes); len(got) != MaxBytes {
		t.Errorf("5000 bytes capped to %d, want %d", len(got), MaxBytes)
	}
}

func FuzzCap(f *testing.F) {
	f.Add("r5.xlarge", 4)
	f.Add("ab\xff€€€", 5)
	f.Add("\xff€€€€", 5) // the replacement character is wider than the byte it replaces
	f.Add("\U000c0000", 3)
	f.Add("x", 0)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := Cap(s, max)
		if len(got) > max || !utf8.ValidString(got) {
			t.Fatalf("Cap(%q, %d) = %q", s, max, got)
		}
	})
}
