package collector

import (
	"hash/maphash"
	"sync"

	"github.com/executor-exporter/executor_exporter/internal/gzipparts"
)

// familyParts keeps each per-JVM family's compressed part, per format,
// with the sum of the lines it was made from, so that a gzip answer
// compresses only the families whose lines changed since the last one:
// with every JVM far from its limit, a scrape every 15 s and a reading
// every 30 s, every other scrape has nothing new, and the families that
// rarely move (the breakdown by region, the info series, the limits) are
// compressed once per change. Safe for concurrent use; two scrapes
// missing at once both compress, and the last one's part is kept.
type familyParts struct {
	mu    sync.Mutex
	parts map[familyPartKey]keptPart
	seed  maphash.Seed // bytesSum's
	made  int          // parts compressed, for tests
}

// familyPartKey names a part: family is a per-JVM family's index, or -n
// for the n-th run of the registries' families in an answer (gzipBody).
type familyPartKey struct {
	family              int
	openMetrics, header bool
}

type keptPart struct {
	sum  familyPartSum
	part gzipparts.Part
}

// familyPartSum identifies a family's lines: how many JVMs, and a sum of
// each one's lines, in order; or a run of bytes (bytesSum): its length
// and their hash.
type familyPartSum struct {
	count int // JVMs, or bytes
	sum   uint64
}

func newFamilyParts() *familyParts {
	return &familyParts{parts: map[familyPartKey]keptPart{}, seed: maphash.MakeSeed()}
}

// bytesSum identifies a run of bytes by its length and a 64-bit seeded
// hash, as familySum does a family's lines.
func bytesSum(seed maphash.Seed, b []byte) familyPartSum {
	return familyPartSum{count: len(b), sum: maphash.Bytes(seed, b)}
}

// get returns the part kept for key if it was made from lines of this
// sum, else the part compress makes, which it keeps.
func (p *familyParts) get(key familyPartKey, sum familyPartSum, compress func() gzipparts.Part) gzipparts.Part {
	p.mu.Lock()
	kept, ok := p.parts[key]
	p.mu.Unlock()
	if ok && kept.sum == sum {
		return kept.part
	}
	part := compress()
	p.mu.Lock()
	p.made++
	p.parts[key] = keptPart{sum: sum, part: part}
	p.mu.Unlock()
	return part
}

// familySum is the sum of every JVM's lines of family f. Each JVM's is a
// 64-bit seeded hash of its lines (familyText.sum); they are folded in
// order by steps that each map a changed hash to a changed result, so
// two different sets of lines share a sum with a chance of about 2^-64.
func familySum(texts []*jvmText, f int) familyPartSum {
	var h uint64
	for _, t := range texts {
		h = (h ^ t.fams[f].sum) * 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	return familyPartSum{count: len(texts), sum: h}
}
