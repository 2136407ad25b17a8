package hsperf

import (
	"encoding/binary"
	"hash/maphash"
)

// Plan is what ParseStats learned of one JVM's file, so that reading it
// again costs the entries added since rather than all of them. HotSpot's
// PerfData memory is append-only: an entry, once created, keeps its place,
// name, type and length for the life of the JVM, and new ones are added
// after it. A Plan keeps a hash of the entries it parsed and where the
// values Stats reads lie. The next read hashes the same bytes of the file,
// all but the data a JVM rewrites, which Stats either reads again by
// offset (longs) or not at all (the entries it does not read); if the
// hashes match, the entries parsed before would parse the same way, so only
// their values are read again. If anything differs (another JVM behind the
// pid, a hostile or corrupt file) the file is parsed in full and the Plan
// learned anew. The result is the same either way.
//
// The hash is 64 bits rather than a copy of the bytes, which would be about
// 16 KiB per JVM: 3 MiB of resident memory with 100 JVMs and the garbage
// collector's headroom. It is seeded afresh in every process, so a file
// cannot be made ahead of time to hash as another does; two different
// files hashing the same by chance, undetected, is one in 2^64 per read.
//
// The zero Plan is ready to use. A Plan is for one file: pass the same one
// for every read of a JVM, and not to concurrent calls. It holds the
// offsets, about 3 KiB for a JDK 17 G1 JVM.
type Plan struct {
	ok bool
	// entryOffset, num, used: the prologue when last read. entries is how
	// many of the num were parsed (the others were still being written);
	// the last ends at end.
	entryOffset, end, entries int
	num, used                 uint32
	// sum hashes the file up to end as first read, but for its gaps.
	sum   uint64
	gaps  []gap
	slots []slot
}

// planSeed keys the hashes of one process's Plans.
var planSeed = maphash.MakeSeed()

// planSum hashes what a read compares: the prologue's magic, byte order,
// version and accessible flag, and the entries up to end but for the gaps.
func planSum(b []byte, entryOffset, end int, gaps []gap) uint64 {
	var h maphash.Hash
	h.SetSeed(planSeed)
	_, _ = h.Write(b[:8])
	pos := entryOffset
	for _, g := range gaps {
		_, _ = h.Write(b[pos:g.off])
		pos = int(g.end)
	}
	_, _ = h.Write(b[pos:end])
	return h.Sum64()
}

// gap is data no read depends on but through slots: longs' values, and
// all of the data of the entries Stats does not read (sun.ci.lastMethod
// and its like are strings the JVM rewrites).
type gap struct{ off, end uint32 }

// slot is an entry that feeds Stats: which field, and where its value lies.
type slot struct {
	target target
	typ    Type
	value  valueKind
	off, n uint32 // the value's offset in the file; a string's length
}

type valueKind uint8

const (
	noValue     valueKind = iota // a type Stats reads as 0 or ""
	longValue                    // 8 bytes in the file's byte order
	stringValue                  // n bytes
)

// resume checks b (cut at used) against what p learned. When it matches it
// feeds c the values of the entries parsed before and returns how many
// there were and where the next one starts.
func (p *Plan) resume(b []byte, text string, order binary.ByteOrder, entryOffset int, num, used uint32, c *counters) (int, int, bool) {
	if p == nil || !p.ok || entryOffset != p.entryOffset || num < p.num || used < p.used || len(b) < p.end {
		return 0, 0, false
	}
	if planSum(b, entryOffset, p.end, p.gaps) != p.sum {
		return 0, 0, false
	}
	for i := range p.slots {
		s := &p.slots[i]
		var long int64
		var str string
		switch s.value {
		case longValue:
			long = int64(order.Uint64(b[s.off:]))
		case stringValue:
			str = text[s.off : s.off+s.n]
		}
		c.set(s.target, s.typ, long, str)
	}
	return p.entries, p.end, true
}

// learn starts p afresh on b, whose entries start at entryOffset.
func (p *Plan) learn(b []byte, entryOffset int) {
	if p == nil {
		return
	}
	*p = Plan{
		entryOffset: entryOffset,
		end:         entryOffset,
		gaps:        p.gaps[:0],
		slots:       p.slots[:0],
	}
}

// record notes the entry at off, just parsed into e and fed to t.
func (p *Plan) record(b []byte, off int, order binary.ByteOrder, t target, e *Entry) {
	if p == nil {
		return
	}
	// parseEntry has checked the header and that the data lies inside b.
	data := off + int(order.Uint32(b[off+16:off+20]))
	end := off + int(order.Uint32(b[off:off+4]))
	read := t.kind != noTarget
	if !read || e.Type != TypeByte {
		p.gaps = append(p.gaps, gap{uint32(data), uint32(end)})
	}
	if !read {
		return
	}
	s := slot{target: t, typ: e.Type}
	switch {
	case e.Type == TypeLong && order.Uint32(b[off+8:off+12]) == 0:
		s.value, s.off = longValue, uint32(data)
	case e.Type == TypeByte:
		// Compared with the file, not in a gap: the same bytes give
		// the same string.
		s.value, s.off, s.n = stringValue, uint32(data), uint32(len(e.String))
	}
	p.slots = append(p.slots, s)
}

// commit makes what p recorded since learn or resume valid for the next
// read: entries entries of num, ending at end.
func (p *Plan) commit(b []byte, entries, end int, num, used uint32) {
	if p == nil {
		return
	}
	if !p.ok || end != p.end {
		p.sum = planSum(b, p.entryOffset, end, p.gaps)
	}
	p.ok, p.entries, p.end, p.num, p.used = true, entries, end, num, used
}

// forget makes the next read parse in full.
func (p *Plan) forget() {
	if p != nil {
		p.ok = false
	}
}
