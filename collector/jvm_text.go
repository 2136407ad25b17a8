package collector

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net/http"

	"github.com/klauspost/compress/flate"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// encodedSet is a seriesSet in a text format, compressed: a raw DEFLATE
// stream of non-final blocks ending on a byte boundary (a sync flush),
// which can follow any other such stream inside one gzip member, with the
// checksum and length of the text. The text itself is not kept (half a
// MiB with 100 JVMs): a scrape without gzip encodes the series again.
// Made once per set and format, by the first scrape that asks.
type encodedSet struct {
	deflated []byte
	crc      uint32          // CRC-32 of the text
	size     int             // its length
	names    map[string]bool // its families
}

// encoded returns the set in format (text or OpenMetrics, exactly as
// negotiated), or nil when a family does not encode. The text goes to the
// compressor a chunk at a time, never whole.
func (s *seriesSet) encoded(format expfmt.Format) *encodedSet {
	s.encMu.Lock()
	defer s.encMu.Unlock()
	if e, ok := s.encs[format]; ok {
		return e
	}
	e := &encodedSet{names: make(map[string]bool, len(s.families))}
	for _, f := range s.families {
		e.names[f.GetName()] = true
	}
	z := bytes.NewBuffer(make([]byte, 0, 32<<10)) // 30 KiB with 100 JVMs
	w := deflaters.get()
	w.Reset(z)
	sink := &textSink{w: w}
	if !writeTextFamilies(sink, s.families, format) {
		e = nil // the scrape takes the families
	}
	_ = w.Flush() // no Close: a final block would end the stream
	deflaters.put(w)
	if e != nil {
		e.deflated, e.crc, e.size = z.Bytes(), sink.crc, sink.size
	}
	if s.encs == nil {
		s.encs = map[expfmt.Format]*encodedSet{}
	}
	s.encs[format] = e
	return e
}

// writeTextFamilies writes families to w in format, each family by appendText
// when it can and by expfmt otherwise (the same bytes), through a chunk
// buffer kept from view to view. It reports false when a family does not
// encode at all.
func writeTextFamilies(w io.Writer, families []*dto.MetricFamily, format expfmt.Format) bool {
	openMetrics := format.FormatType() == expfmt.TypeOpenMetrics
	chunk := chunks.get()
	defer func() { chunks.put(chunk[:0]) }()
	var enc expfmt.Encoder
	for i := range families {
		fast, ok := appendText(chunk, families[i:i+1], openMetrics)
		if ok {
			chunk = fast
		} else {
			if enc == nil {
				enc = expfmt.NewEncoder(w, format)
			}
			if _, err := w.Write(chunk); err != nil {
				return false
			}
			chunk = chunk[:0]
			if err := enc.Encode(families[i]); err != nil {
				return false
			}
		}
		if len(chunk) >= chunkSize || i == len(families)-1 {
			if _, err := w.Write(chunk); err != nil {
				return false
			}
			chunk = chunk[:0]
		}
	}
	return true
}

// textSink compresses text and keeps its checksum and length.
type textSink struct {
	w    *flate.Writer
	crc  uint32
	size int
}

func (t *textSink) Write(p []byte) (int, error) {
	t.crc = crc32.Update(t.crc, crc32.IEEETable, p)
	t.size += len(p)
	return t.w.Write(p)
}

// TextHandler serves the text format the way promhttp does (gzip when
// asked for; a gather that fails is served by fallback), with the
// jvm collector's per-JVM series written as they were encoded and
// compressed when the view was first served: a scrape costs, per JVM, a
// copy of its bytes and their checksum. g gathers everything else (a
// registry with ec registered); requests for another format (protobuf)
// go to fallback, which must serve ec.Gatherer(g).
func (ec *ExecutorCollector) TextHandler(g prometheus.Gatherer, fallback http.Handler, opts promhttp.HandlerOpts) http.Handler {
	jc, _ := ec.Collectors["jvm"].(*jvmCollector)
	if jc == nil {
		return fallback
	}
	jc.direct.Store(true)
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
		var enc *encodedSet
		if set := jc.served.Load(); set != nil && len(set.families) > 0 {
			if !acceptsGzip(req) {
				mfs = mergeFamilies(mfs, set.families) // encoded now: only the compressed form is kept
			} else if enc = set.encoded(format); enc == nil || overlaps(mfs, enc.names) {
				mfs, enc = mergeFamilies(mfs, set.families), nil
			}
		}
		writeText(w, req, format, mfs, enc, opts.ErrorLog)
	})
}

func overlaps(mfs []*dto.MetricFamily, names map[string]bool) bool {
	for _, f := range mfs {
		if names[f.GetName()] {
			return true
		}
	}
	return false
}

// deflaters compress at BestSpeed: a view is compressed once, but with a
// scrape interval longer than the sampling interval every scrape meets a
// new view. klauspost/compress (in the binary already, for promhttp's
// zstd) writes the same DEFLATE format as the standard library's
// BestSpeed in half its time, with a writer of 0.8 instead of 1.2 MB; the
// body is a tenth larger than at the default level, which takes eight
// times as long (BenchmarkDeflateView).
var deflaters = newKeeper(func() *flate.Writer { w, _ := flate.NewWriter(nil, flate.BestSpeed); return w })

// chunks hold a view's text on its way to the compressor: appendText
// fills one up to chunkSize, then it is written out.
var chunks = newKeeper(func() []byte { return make([]byte, 0, chunkSize+16<<10) })

const chunkSize = 32 << 10

// keeper keeps one idle value from use to use for the life of the
// process. sync.Pool, for this, drops its values every other garbage
// collection and keeps one per P: with flate writers (1.2 MiB each,
// mostly tables) that was two writers resident and a megabyte of
// garbage a sample. One scrape at a time is the rule; a concurrent one
// makes its own.
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

// writeText writes mfs in format, then enc's series when not nil (only
// with gzip), then
// the format's end (OpenMetrics' "# EOF"), as one gzip member when the
// client accepts gzip: the gathered series compressed now, enc's
// compressed bytes after them, the end in a final block, and the checksum
// and length of all.
func writeText(w http.ResponseWriter, req *http.Request, format expfmt.Format, mfs []*dto.MetricFamily, enc *encodedSet, errorLog promhttp.Logger) {
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", string(format))
	gz := acceptsGzip(req)
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	var tail bytes.Buffer
	if c, ok := expfmt.NewEncoder(&tail, format).(expfmt.Closer); ok {
		_ = c.Close()
	}
	if !gz {
		// Straight to the client: the whole exposition is not buffered.
		bw := bufio.NewWriterSize(w, 32<<10)
		encodeFamilies(bw, format, mfs, errorLog)
		_, _ = bw.Write(tail.Bytes())
		_ = bw.Flush()
		return
	}
	var live bytes.Buffer
	encodeFamilies(&live, format, mfs, errorLog)
	bw := bufio.NewWriterSize(w, 32<<10)
	// RFC 1952 header: deflate, no flags, no time, unknown OS.
	_, _ = bw.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255})
	z := deflaters.get()
	z.Reset(bw)
	_, _ = z.Write(live.Bytes())
	_ = z.Flush()
	deflaters.put(z)
	sum := crc32.ChecksumIEEE(live.Bytes())
	size := uint32(live.Len())
	if enc != nil {
		_, _ = bw.Write(enc.deflated)
		sum = crc32Combine(sum, enc.crc, int64(enc.size))
		size += uint32(enc.size)
	}
	// The end, stored (it is a few bytes at most) in the final block: on
	// a byte boundary after a flush, BFINAL=1 BTYPE=00, then LEN and NLEN.
	n := uint16(tail.Len())
	_, _ = bw.Write([]byte{0x01, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)})
	_, _ = bw.Write(tail.Bytes())
	sum = crc32.Update(sum, crc32.IEEETable, tail.Bytes())
	size += uint32(tail.Len())
	_ = binary.Write(bw, binary.LittleEndian, [2]uint32{sum, size})
	_ = bw.Flush()
}

func encodeFamilies(w io.Writer, format expfmt.Format, mfs []*dto.MetricFamily, errorLog promhttp.Logger) {
	e := expfmt.NewEncoder(w, format)
	for _, f := range mfs {
		if err := e.Encode(f); err != nil && errorLog != nil {
			errorLog.Println("error encoding metric family:", err)
		}
	}
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

// crc32Combine returns the CRC-32 (IEEE) of A followed by B from the CRCs
// of A and B and B's length, as zlib's crc32_combine: B's checksum is not
// recomputed per scrape, so its text need not be kept.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	odd[0] = 0xedb88320 // the reversed polynomial: the operator for one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(even[:], odd[:]) // two zero bits
	gf2Square(odd[:], even[:]) // four
	for {
		// Apply zeros to crcA, one bit of lenB at a time, from eight.
		gf2Square(even[:], odd[:])
		if lenB&1 != 0 {
			crcA = gf2Times(even[:], crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		gf2Square(odd[:], even[:])
		if lenB&1 != 0 {
			crcA = gf2Times(odd[:], crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func gf2Times(mat []uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat []uint32) {
	for n := range 32 {
		square[n] = gf2Times(mat, mat[n])
	}
}
