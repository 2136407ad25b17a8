package collector

import (
	"bufio"
	"bytes"
	"io"
	"net/http"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// writeFamilies writes families — the registry's, in name order — with
// the per-JVM families merged among them in name order: a per-JVM
// family's header (unless a registry family of the same name came just
// before), then every JVM's lines of it. A registry family that does not
// encode is logged and left out, as promhttp does.
func writeFamilies(w io.Writer, families []*dto.MetricFamily, perJVM []jvmFamily, texts []*jvmText, format expfmt.Format, errorLog promhttp.Logger) error {
	openMetrics := format.FormatType() == expfmt.TypeOpenMetrics
	enc := expfmt.NewEncoder(w, format)
	writeJVMs := func(f int, header bool) error {
		if !anyLines(texts, f) {
			return nil
		}
		if header {
			if _, err := w.Write(perJVM[f].header[b2i(openMetrics)]); err != nil {
				return err
			}
		}
		for _, t := range texts {
			if _, err := w.Write(t.family(f)); err != nil {
				return err
			}
		}
		return nil
	}
	f := 0
	for _, mf := range families {
		for ; f < len(perJVM) && perJVM[f].name < mf.GetName(); f++ {
			if err := writeJVMs(f, true); err != nil {
				return err
			}
		}
		if err := enc.Encode(mf); err != nil && errorLog != nil {
			errorLog.Println("error encoding metric family:", err)
		}
		if f < len(perJVM) && perJVM[f].name == mf.GetName() {
			if err := writeJVMs(f, false); err != nil {
				return err
			}
			f++
		}
	}
	for ; f < len(perJVM); f++ {
		if err := writeJVMs(f, true); err != nil {
			return err
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

func anyLines(texts []*jvmText, f int) bool {
	for _, t := range texts {
		if len(t.family(f)) > 0 {
			return true
		}
	}
	return false
}

// Handler serves every collector's series and g's (the build info, the
// exporter's own metrics), as promhttp does: content negotiation, gzip
// when asked for, opts' limit on requests in flight and error handling.
// Each request serves one snapshot of the JVM tracker's view: its
// collectors' series and the per-JVM series come from the same view,
// whatever other requests run at the same time. The text formats are
// written here, with each JVM's series as rendered once per reading
// (jvm_render.go); protobuf goes through promhttp.
func (ec *ExecutorCollector) Handler(g prometheus.Gatherer, opts promhttp.HandlerOpts) http.Handler {
	fallback := promhttp.HandlerForTransactional(ec.Gatherer(g), opts)
	jc, _ := ec.Collectors["jvm"].(*jvmCollector)
	if jc == nil {
		return fallback
	}
	// One writer a Prometheus server of an HA pair.
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
		set := jc.snapshot()
		mfs, err := ec.gatherWith(set, false, g)
		if err != nil {
			// promhttp logs, counts (promhttp_metric_handler_errors_total)
			// and answers as opts say; errors are rare, a second gather
			// is no cost.
			fallback.ServeHTTP(w, req)
			return
		}
		texts := jc.texts(set, format.FormatType() == expfmt.TypeOpenMetrics)
		writeAnswer(w, req, format, gz, func(body io.Writer) error {
			return writeFamilies(body, mfs, jc.descs.families, texts, format, opts.ErrorLog)
		})
	})
}

// gatherWith gathers every collector, the jvm collector from set (nil:
// there is none), with its per-JVM series or without, and g.
func (ec *ExecutorCollector) gatherWith(set *jvmSet, perJVM bool, g prometheus.Gatherer) ([]*dto.MetricFamily, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(fromSnapshot{ec: ec, set: set, perJVM: perJVM}); err != nil {
		return nil, err
	}
	return prometheus.Gatherers{reg, g}.Gather()
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
