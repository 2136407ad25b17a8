package exposition

import (
	"io"

	"github.com/klauspost/compress/gzip"
)

// gzipWriters keeps up to a fixed number of gzip writers (800 kB of
// state each) from one answer to the next: a sync.Pool drops them at
// every garbage collection, between most 15 s scrapes. They compress at
// klauspost/compress's fastest level, a fifth of the standard library's
// default's CPU for 10 % more bytes (BenchmarkDeflateView).
type gzipWriters struct{ free chan *gzip.Writer }

func newGzipWriters(keep int) *gzipWriters { return &gzipWriters{free: make(chan *gzip.Writer, keep)} }

// get returns a writer compressing to w: a kept one, or a new one.
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

// put keeps the closed writer z, unless enough are kept.
func (g *gzipWriters) put(z *gzip.Writer) {
	z.Reset(io.Discard) // no reference to the answer it wrote
	select {
	case g.free <- z:
	default:
	}
}
