package collector

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/executor-exporter/executor_exporter/internal/gzipparts"
)

// bodyWriter is where a scrape's answer goes: the registry's families as
// bytes (Write), the per-JVM families as the JVMs rendered them.
type bodyWriter interface {
	io.Writer
	// jvmFamily writes family f: its header (unless a registry family
	// of the same name came just before), then every JVM's lines of it.
	jvmFamily(f int, header bool, texts []*jvmText) error
}

// writeFamilies writes families — the registry's, in name order — with
// the per-JVM families merged among them in name order. A registry family
// is written by appendText when it can be and by expfmt otherwise (the
// same bytes); one that does not encode is logged and left out, as
// promhttp does.
func writeFamilies(body bodyWriter, scratch []byte, families []*dto.MetricFamily, perJVM []jvmFamily, texts []*jvmText, format expfmt.Format, errorLog promhttp.Logger) ([]byte, error) {
	openMetrics := format.FormatType() == expfmt.TypeOpenMetrics
	enc := expfmt.NewEncoder(body, format)
	writeRegistry := func(f *dto.MetricFamily) error {
		if fast, ok := appendText(scratch[:0], []*dto.MetricFamily{f}, openMetrics); ok {
			scratch = fast
			_, err := body.Write(scratch)
			return err
		}
		if err := enc.Encode(f); err != nil && errorLog != nil {
			errorLog.Println("error encoding metric family:", err)
		}
		return nil
	}
	writeJVMs := func(f int, header bool) error {
		for _, text := range texts {
			if len(text.family(f)) > 0 {
				return body.jvmFamily(f, header, texts)
			}
		}
		return nil // no JVM has series of f
	}
	f := 0
	for _, mf := range families {
		for ; f < len(perJVM) && perJVM[f].name < mf.GetName(); f++ {
			if err := writeJVMs(f, true); err != nil {
				return scratch, err
			}
		}
		if err := writeRegistry(mf); err != nil {
			return scratch, err
		}
		if f < len(perJVM) && perJVM[f].name == mf.GetName() {
			if err := writeJVMs(f, false); err != nil {
				return scratch, err
			}
			f++
		}
	}
	for ; f < len(perJVM); f++ {
		if err := writeJVMs(f, true); err != nil {
			return scratch, err
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return scratch, c.Close()
	}
	return scratch, nil
}

// TextHandler serves the text formats the way promhttp does (gzip when
// asked for; a gather that fails is served by fallback), with the jvm
// collector's per-JVM series as each JVM's text was rendered once per
// reading (jvm_render.go): with 100 JVMs they are most of a scrape
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
		var texts []*jvmText
		if set := jc.served.Load(); set != nil {
			texts = jc.texts(set, format.FormatType() == expfmt.TypeOpenMetrics)
		}
		writers.write(w, req, format, mfs, jc.descs.families, texts, opts.ErrorLog)
	})
}

// textWriters are what a handler keeps from scrape to scrape: the
// compressor, the scratch buffers, and the per-JVM families' compressed
// parts (familyParts). It compresses with klauspost/compress (in the
// binary already, for promhttp's zstd) stateless: each part with tables
// that live for the call, a part a few percent larger than BestSpeed's
// in up to two and a half times its time, where a kept BestSpeed encoder
// is a megabyte of heap between scrapes, which the garbage collector's
// target doubles in resident memory (BenchmarkDeflateView).
type textWriters struct {
	compressors *keeper[*gzipparts.Compressor]
	scratch     *keeper[[]byte] // appendText's
	chunks      *keeper[[]byte] // gzipBody's
	answers     *keeper[*bytes.Buffer]
	plain       *keeper[*bufio.Writer]
	parts       *familyParts
}

func newTextWriters() *textWriters {
	return &textWriters{
		compressors: newKeeper(gzipparts.NewStatelessCompressor),
		scratch:     newKeeper(func() []byte { return make([]byte, 0, 16<<10) }),
		chunks:      newKeeper(func() []byte { return make([]byte, 0, chunkSize+16<<10) }),
		answers:     newKeeper(func() *bytes.Buffer { return bytes.NewBuffer(make([]byte, 0, 64<<10)) }),
		plain:       newKeeper(func() *bufio.Writer { return bufio.NewWriterSize(nil, 32<<10) }),
		parts:       newFamilyParts(),
	}
}

// chunkSize is how many bytes of the registry's families a gzip answer
// gathers before it compresses them.
const chunkSize = 32 << 10

// keeper keeps one idle value from use to use for the life of its owner.
// sync.Pool, for this, drops its values every other garbage collection
// and keeps one per P: with a compressor (0.8 MiB, mostly tables) at a
// 15 s scrape interval, a new one and a megabyte of garbage almost every
// scrape. One scrape at a time is the rule; a concurrent one makes its
// own.
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

// write answers with mfs and the JVMs' texts in format, compressed when
// the client accepts gzip.
func (t *textWriters) write(w http.ResponseWriter, req *http.Request, format expfmt.Format, mfs []*dto.MetricFamily, perJVM []jvmFamily, texts []*jvmText, errorLog promhttp.Logger) {
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", string(format))
	openMetrics := format.FormatType() == expfmt.TypeOpenMetrics
	scratch := t.scratch.get()
	defer func() { t.scratch.put(scratch[:0]) }()
	if !acceptsGzip(req) {
		bw := t.plain.get()
		bw.Reset(w)
		body := &plainBody{w: bw, families: perJVM, openMetrics: openMetrics}
		scratch, _ = writeFamilies(body, scratch, mfs, perJVM, texts, format, errorLog) // a write error is the client gone
		_ = bw.Flush()
		bw.Reset(nil)
		t.plain.put(bw)
		return
	}
	// A compressed answer is a few tens of kilobytes: it is assembled
	// whole and sent with its length in one write, where a stream of
	// chunks would cost a system call each, on both ends of the socket.
	answer := t.answers.get()
	gz := &gzipBody{member: gzipparts.NewMember(answer), comp: t.compressors.get(), chunk: t.chunks.get(), parts: t.parts,
		families: perJVM, openMetrics: openMetrics}
	scratch, _ = writeFamilies(gz, scratch, mfs, perJVM, texts, format, errorLog) // only the buffer is written to
	_ = gz.close()
	t.compressors.put(gz.comp)
	t.chunks.put(gz.chunk[:0])
	h.Set("Content-Encoding", "gzip")
	h.Set("Content-Length", strconv.Itoa(answer.Len()))
	_, _ = w.Write(answer.Bytes()) // an error is the client gone
	answer.Reset()
	t.answers.put(answer)
}

// plainBody writes an answer as it is.
type plainBody struct {
	w           *bufio.Writer
	families    []jvmFamily
	openMetrics bool
}

func (p *plainBody) Write(b []byte) (int, error) { return p.w.Write(b) }

func (p *plainBody) jvmFamily(f int, header bool, texts []*jvmText) error {
	if header {
		if _, err := p.w.Write(p.families[f].header[b2i(p.openMetrics)]); err != nil {
			return err
		}
	}
	for _, text := range texts {
		if _, err := p.w.Write(text.family(f)); err != nil {
			return err
		}
	}
	return nil
}

// gzipBody writes an answer as one gzip member of parts: the registry's
// families compressed on every scrape, chunk by chunk, and each per-JVM
// family as the part kept for it while every JVM's lines of it stay the
// same (familyParts).
type gzipBody struct {
	member      *gzipparts.Member
	comp        *gzipparts.Compressor
	chunk       []byte // registry families not yet compressed
	parts       *familyParts
	families    []jvmFamily
	openMetrics bool
	runs        int // runs of the registries' families flushed so far
}

func (g *gzipBody) Write(b []byte) (int, error) {
	g.chunk = append(g.chunk, b...)
	if len(g.chunk) >= chunkSize {
		return len(b), g.flush()
	}
	return len(b), nil
}

// flush writes the registries' families gathered since the last part.
// Most runs of them between two per-JVM families stand from one scrape
// to the next (the build and instance info, the sampler's gauges): a run
// whose bytes are those of the same run in the last answer is that
// answer's part, not compressed again.
func (g *gzipBody) flush() error {
	if len(g.chunk) == 0 {
		return nil
	}
	g.runs++
	key := familyPartKey{family: -g.runs, openMetrics: g.openMetrics}
	part := g.parts.get(key, bytesSum(g.parts.seed, g.chunk), func() gzipparts.Part { return g.comp.Compress(g.chunk) })
	g.chunk = g.chunk[:0]
	return g.member.WritePart(part)
}

func (g *gzipBody) jvmFamily(f int, header bool, texts []*jvmText) error {
	if err := g.flush(); err != nil {
		return err
	}
	key := familyPartKey{family: f, openMetrics: g.openMetrics, header: header}
	part := g.parts.get(key, familySum(texts, f), func() gzipparts.Part {
		// The chunk is empty here, and holds the family meanwhile.
		if header {
			g.chunk = append(g.chunk, g.families[f].header[b2i(g.openMetrics)]...)
		}
		for _, text := range texts {
			g.chunk = append(g.chunk, text.family(f)...)
		}
		part := g.comp.Compress(g.chunk)
		g.chunk = g.chunk[:0]
		return part
	})
	return g.member.WritePart(part)
}

func (g *gzipBody) close() error {
	if err := g.flush(); err != nil {
		return err
	}
	return g.member.Close()
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
