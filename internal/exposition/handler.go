package exposition

import (
	"bufio"
	"bytes"
	"io"
	"net/http"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Source is what one scrape serves, from one snapshot: the registry's
// families (none of the table's) and every subject's Text in the format
// asked for.
type Source interface {
	Snapshot(openMetrics bool) (registry []*dto.MetricFamily, subjects []*Text, err error)
}

// Handler serves src as promhttp would serve the same series from a
// registry: content negotiation, gzip when asked for, opts' limit on
// requests in flight. The text formats are written here; protobuf, the
// created samples of OpenMetrics, and a snapshot's error (which promhttp
// logs, counts and answers as opts say) go to fallback.
func Handler(t *Table, src Source, fallback http.Handler, opts promhttp.HandlerOpts) http.Handler {
	// One writer for each Prometheus server of an HA pair.
	gz := newGzipWriters(2)
	var inFlight chan struct{}
	if opts.MaxRequestsInFlight > 0 {
		inFlight = make(chan struct{}, opts.MaxRequestsInFlight)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		accepted := expfmt.DefaultAcceptedFormats()
		if opts.EnableOpenMetrics {
			accepted = expfmt.DefaultOpenMetricsAcceptedFormats()
		}
		format := expfmt.NegotiateAccept(req.Header, accepted...)
		if t := format.FormatType(); (t != expfmt.TypeTextPlain && t != expfmt.TypeOpenMetrics) || opts.EnableOpenMetricsTextCreatedSamples {
			fallback.ServeHTTP(w, req)
			return
		}
		if inFlight != nil {
			select {
			case inFlight <- struct{}{}:
				defer func() { <-inFlight }()
			default:
				http.Error(w, "Limit of concurrent requests reached, try again later.", http.StatusServiceUnavailable)
				return
			}
		}
		registry, subjects, err := src.Snapshot(format.FormatType() == expfmt.TypeOpenMetrics)
		if err != nil {
			fallback.ServeHTTP(w, req) // errors are rare: a second gather is no cost
			return
		}
		writeAnswer(w, req, format, gz, func(body io.Writer) error {
			return t.Write(body, registry, subjects, format, opts.ErrorLog)
		})
	})
}

// Write writes registry — a registry's families, in name order — with
// the table's families merged among them in name order: a table family's
// header (unless a registry family of the same name came just before),
// then every subject's lines of it. A registry family that does not
// encode is logged and left out, as promhttp does.
func (t *Table) Write(w io.Writer, registry []*dto.MetricFamily, subjects []*Text, format expfmt.Format, errorLog promhttp.Logger) error {
	openMetrics := 0
	if format.FormatType() == expfmt.TypeOpenMetrics {
		openMetrics = 1
	}
	enc := expfmt.NewEncoder(w, format)
	writeSubjects := func(f *Family, header bool) error {
		if !anyLines(subjects, f) {
			return nil
		}
		if header {
			if _, err := w.Write(f.header[openMetrics]); err != nil {
				return err
			}
		}
		for _, s := range subjects {
			if _, err := w.Write(s.families[f.index]); err != nil {
				return err
			}
		}
		return nil
	}
	next := t.families
	for _, mf := range registry {
		for ; len(next) > 0 && next[0].name < mf.GetName(); next = next[1:] {
			if err := writeSubjects(next[0], true); err != nil {
				return err
			}
		}
		if err := enc.Encode(mf); err != nil && errorLog != nil {
			errorLog.Println("error encoding metric family:", err)
		}
		if len(next) > 0 && next[0].name == mf.GetName() {
			if err := writeSubjects(next[0], false); err != nil {
				return err
			}
			next = next[1:]
		}
	}
	for _, f := range next {
		if err := writeSubjects(f, true); err != nil {
			return err
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

func anyLines(subjects []*Text, f *Family) bool {
	for _, s := range subjects {
		if len(s.families[f.index]) > 0 {
			return true
		}
	}
	return false
}

// writeAnswer sets the headers of an answer in format and writes its body,
// compressed with one of gz's writers when the client accepts gzip.
func writeAnswer(w http.ResponseWriter, req *http.Request, format expfmt.Format, gz *gzipWriters, body func(io.Writer) error) {
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", string(format))
	bw := bufio.NewWriterSize(w, 32<<10)
	var out io.Writer = bw
	var z *gzip.Writer
	if acceptsGzip(req) {
		h.Set("Content-Encoding", "gzip")
		z = gz.get(bw)
		out = z
	}
	_ = body(out) // a write error is the client gone
	if z != nil {
		_ = z.Close()
		gz.put(z)
	}
	_ = bw.Flush()
}

func acceptsGzip(req *http.Request) bool {
	for _, v := range req.Header.Values("Accept-Encoding") {
		for _, part := range bytes.Split([]byte(v), []byte(",")) {
			name, params, _ := bytes.Cut(bytes.TrimSpace(part), []byte(";"))
			if string(bytes.TrimSpace(name)) == "gzip" && !bytes.Equal(bytes.ReplaceAll(params, []byte(" "), nil), []byte("q=0")) {
				return true
			}
		}
	}
	return false
}
