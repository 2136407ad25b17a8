// Package expositiontest holds what the tests of internal/exposition and of
// the collector hold the fast path to: expfmt's own text for families, and
// a handler's answer to one scrape, its body decompressed.
package expositiontest

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// ExpfmtText is what expfmt writes for families (OpenMetrics without its
// "# EOF").
func ExpfmtText(t testing.TB, families []*dto.MetricFamily, openMetrics bool) []byte {
	t.Helper()
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	if openMetrics {
		format = expfmt.NewFormat(expfmt.TypeOpenMetrics)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// Serve is h's answer to a scrape of /metrics with the Accept and
// Accept-Encoding headers given, and its body, decompressed when it is
// gzip: a single member, its CRC and length checked.
func Serve(t testing.TB, h http.Handler, accept, encoding string) (*httptest.ResponseRecorder, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", accept)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" {
		return rec, rec.Body.String()
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	body, err := io.ReadAll(zr) // checks the CRC and the length
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	if rest, _ := io.ReadAll(zr); len(rest) > 0 {
		t.Fatalf("%d bytes after the gzip member", len(rest))
	}
	return rec, string(body)
}
