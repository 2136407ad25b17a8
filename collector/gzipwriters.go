package collector

import (
	"io"

	"github.com/klauspost/compress/gzip"
)

// gzipWriters keeps up to a fixed number of gzip writers from one answer
// to the next. A writer is 800 kB of compressor state to allocate and
// fault in; a sync.Pool drops its writers at every garbage collection,
// and at 15 s scrapes one runs between most scrapes. Answers beyond the
// kept number (more scrapes at once than Prometheus servers) make their
// own and drop them.
//
// The writers compress at klauspost/compress's fastest level: a scrape's
// body is a few hundred kilobytes of text, which the standard library's
// default level (promhttp's) compresses 10 % smaller in four to five
// times the CPU (BenchmarkDeflateView). Its stateless mode keeps no
// history from one write to the next, and the body comes in many.
type gzipWriters struct {
	free chan *gzip.Writer
}

func newGzipWriters(keep int) *gzipWriters {
	return &gzipWriters{free: make(chan *gzip.Writer, keep)}
}

// get returns a writer compressing to w.
func (g *gzipWriters) get(w io.Writer) *gzip.Writer {
	select {
	case z := <-g.free:
		z.Reset(w)
		return z
	default:
		z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		return z
	}
}

// put keeps z for a later answer, or drops it when enough are kept. z
// must be closed.
func (g *gzipWriters) put(z *gzip.Writer) {
	z.Reset(io.Discard) // no reference to the answer it wrote
	select {
	case g.free <- z:
	default:
	}
}
