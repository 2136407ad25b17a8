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

// writeTextFamilies writes families to w in format, each family by
// appendText when it can and by expfmt otherwise (the same bytes), through
// a chunk buffer kept from scrape to scrape. A family that does not encode
// is logged and left out, as promhttp does.
func (t *textWriters) writeFamilies(w io.Writer, families []*dto.MetricFamily, format expfmt.Format, errorLog promhttp.Logger) error {
	openMetrics := format.FormatType() == expfmt.TypeOpenMetrics
	chunk := t.chunks.get()
	defer func() { t.chunks.put(chunk[:0]) }()
	enc := expfmt.NewEncoder(w, format)
	for i := range families {
		if fast, ok := appendText(chunk, families[i:i+1], openMetrics); ok {
			chunk = fast
		} else {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
			if err := enc.Encode(families[i]); err != nil && errorLog != nil {
				errorLog.Println("error encoding metric family:", err)
			}
		}
		if len(chunk) >= chunkSize || i == len(families)-1 {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

// TextHandler serves the text formats the way promhttp does (gzip when
// asked for; a gather that fails is served by fallback), with the jvm
// collector's per-JVM series, built once per view, encoded by appendText
// instead of expfmt: with 100 JVMs that is most of a scrape's encoding
// (BenchmarkSeries). g gathers everything else and must gather
// ec.ServedApart(), not ec; requests for another format (protobuf) go
// to fallback, which must serve ec.Gatherer(g).
func (ec *ExecutorCollector) TextHandler(g prometheus.Gatherer, fallback http.Handler, opts promhttp.HandlerOpts) http.Handler {
	jc, _ := ec.Collectors["jvm"].(*jvmCollector)
	if jc == nil {
		return fallback
	}
	writers := newTextWriters()
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
		mfs, err := g.Gather()
		if err != nil {
			// promhttp logs, counts (promhttp_metric_handler_errors_total)
			// and answers as opts say; errors are rare, a second gather
			// is no cost.
			fallback.ServeHTTP(w, req)
			return
		}
		if set := jc.served.Load(); set != nil {
			mfs = mergeFamilies(mfs, set.families)
		}
		writers.write(w, req, format, mfs, opts.ErrorLog)
	})
}

// textWriters are what a handler keeps from scrape to scrape. The gzip
// writer compresses at BestSpeed: every scrape at a real interval meets a
// new view, so the JVMs' text is compressed on each. klauspost/compress
// (in the binary already, for promhttp's zstd) writes the same format as
// the standard library's BestSpeed in half its time, with a writer of 0.8
// instead of 1.2 MB; the body is a tenth larger than at the default
// level, which takes eight times as long (BenchmarkDeflateView). chunks
// hold the JVMs' text on its way to the compressor: appendText fills one
// up to chunkSize, then it is written out.
type textWriters struct {
	gzip   *keeper[*gzip.Writer]
	chunks *keeper[[]byte]
}

func newTextWriters() *textWriters {
	return &textWriters{
		gzip:   newKeeper(func() *gzip.Writer { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }),
		chunks: newKeeper(func() []byte { return make([]byte, 0, chunkSize+16<<10) }),
	}
}

const chunkSize = 32 << 10

// keeper keeps one idle value from use to use for the life of its owner.
// sync.Pool, for this, drops its values every other garbage collection
// and keeps one per P: with a gzip writer (0.8 MiB, mostly tables) at a
// 15 s scrape interval, a new writer and a megabyte of garbage almost
// every scrape. One scrape at a time is the rule; a concurrent one makes
// its own.
type keeper[T any] struct {
	idle     chan T
	newValue func() T
}

func newKeeper[T any](newValue func() T) *keeper[T] {
	return &keeper[T]{idle: make(chan T, 1), newValue: newValue}
}

func (k *keeper[T]) get() T {
	select {
	case v := <-k.idle:
		return v
	default:
		return k.newValue()
	}
}

func (k *keeper[T]) put(v T) {
	select {
	case k.idle <- v:
	default:
	}
}

// write writes mfs in format, compressed when the client accepts
// gzip.
func (t *textWriters) write(w http.ResponseWriter, req *http.Request, format expfmt.Format, mfs []*dto.MetricFamily, errorLog promhttp.Logger) {
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", string(format))
	bw := bufio.NewWriterSize(w, 32<<10)
	var out io.Writer = bw
	if acceptsGzip(req) {
		h.Set("Content-Encoding", "gzip")
		z := t.gzip.get()
		z.Reset(bw)
		defer func() {
			_ = z.Close()
			t.gzip.put(z)
			_ = bw.Flush()
		}()
		out = z
	} else {
		defer func() { _ = bw.Flush() }() // an error is the client gone
	}
	_ = t.writeFamilies(out, mfs, format, errorLog) // a write error is the client gone
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
