// Package gzipparts writes gzip members (RFC 1952) made of parts that
// are compressed on their own. A part is a run of deflate blocks (RFC
// 1951) that refers to nothing before it and ends on a byte boundary (a
// sync flush), so parts can follow each other in any order and a part
// compressed once can be written into any number of members: a server
// whose answer is mostly the same from one request to the next
// compresses only what changed.
package gzipparts

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/flate"
)

// Part is some bytes, compressed. Its zero value is no bytes.
type Part struct {
	deflated []byte
	crc      uint32 // of the bytes before compression
	size     int64  // how many they were
	// shift is x^(8·size) modulo the CRC polynomial, what appending the
	// part multiplies a member's CRC by: computed once with the part,
	// so writing a kept part costs one multiplication, not one per bit
	// of its size.
	shift uint32
}

// Size is how many bytes the part holds before compression.
func (p Part) Size() int64 { return p.size }

// CompressedSize is how many bytes it takes in a member.
func (p Part) CompressedSize() int { return len(p.deflated) }

// Compressor makes parts. One made by NewCompressor keeps its tables
// from part to part; a stateless one (NewStatelessCompressor) keeps none.
// It is not safe for concurrent use.
type Compressor struct {
	fw  *flate.Writer // nil: stateless
	out bytes.Buffer
}

// NewStatelessCompressor compresses each part with klauspost/compress's
// stateless deflate: a fast encoder whose tables live only for the call,
// nothing kept between parts but the output buffer (the library pools its
// bit writer, which the garbage collector frees). A part is a few percent
// larger than BestSpeed's and takes up to two and a half times as long,
// and a megabyte of encoder state is not part of the heap between parts.
func NewStatelessCompressor() *Compressor { return &Compressor{} }

// NewCompressor compresses at level (flate.BestSpeed to flate.BestCompression).
func NewCompressor(level int) (*Compressor, error) {
	fw, err := flate.NewWriter(nil, level)
	if err != nil {
		return nil, err
	}
	return &Compressor{fw: fw}, nil
}

// Compress returns b as a part; it keeps nothing of b.
func (c *Compressor) Compress(b []byte) Part {
	if len(b) == 0 {
		return Part{}
	}
	c.out.Reset()
	// Writes to a bytes.Buffer do not fail.
	if c.fw == nil {
		// No dictionary: the part refers to nothing before it; not the
		// end of the stream: it ends on a byte boundary, no final block.
		_ = flate.StatelessDeflate(&c.out, b, false, nil)
	} else {
		c.fw.Reset(&c.out) // a fresh window: the part refers to nothing before it
		_, _ = c.fw.Write(b)
		_ = c.fw.Flush() // ends on a byte boundary, no final block
	}
	return Part{deflated: bytes.Clone(c.out.Bytes()), crc: crc32.ChecksumIEEE(b), size: int64(len(b)), shift: x8nModP(int64(len(b)))}
}

// header is a gzip member's header: deflate, no flags, no time, the
// fastest compression (XFL 4), unknown OS.
var header = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255}

// finalBlock is an empty, final deflate block with fixed codes.
var finalBlock = []byte{0x03, 0x00}

// Member writes one gzip member to w, part after part.
type Member struct {
	w       io.Writer
	crc     uint32
	size    int64
	started bool
	err     error
}

// NewMember starts a member; nothing is written before the first part or
// Close.
func NewMember(w io.Writer) *Member { return &Member{w: w} }

func (m *Member) write(b []byte) {
	if m.err != nil {
		return
	}
	if !m.started {
		m.started = true
		if _, m.err = m.w.Write(header); m.err != nil {
			return
		}
	}
	_, m.err = m.w.Write(b)
}

// WritePart writes p; the first error is kept and returned from then on.
func (m *Member) WritePart(p Part) error {
	if p.size == 0 {
		return m.err
	}
	m.write(p.deflated)
	m.crc = combine(m.crc, p.crc, p.shift)
	m.size += p.size
	return m.err
}

// ErrClosed is returned for parts written to a closed member.
var ErrClosed = errors.New("gzipparts: member closed")

// Close ends the member: the final block, the checksum and the size.
func (m *Member) Close() error {
	m.write(finalBlock)
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], m.crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(m.size)) // the size modulo 2^32, as RFC 1952 has it
	m.write(trailer[:])
	err := m.err
	if m.err == nil {
		m.err = ErrClosed
	}
	return err
}
