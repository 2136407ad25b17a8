package collector

import (
	"bytes"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// jvmText is one JVM's series in one exposition format, grouped by
// family: family f's lines are buf[off[f]:off[f+1]], in the order the
// collector sends them. A scrape writes each family's header, then every
// JVM's lines of it, so a JVM costs a scrape a copy of bytes, not an
// encoding. The lines are expfmt's bytes (appendText's):
// TestTextHandlerServesWhatPromhttpServes holds them to promhttp's.
type jvmText struct {
	buf []byte
	off []uint32
	// sums[f] is a hash of family f's lines, for the compressed parts
	// kept of each family (familyParts).
	sums []uint64
	// identity and lines let the JVM's next reading copy the lines whose
	// series and value are the same (textSink.prev).
	identity             [4][]byte
	lines                []renderedLine
	infoNames, infoValue []string // executor_jvm_info's labels
	copied               int      // how many of lines were copied from the last reading's
}

// renderedLine is one line of a jvmText, in the order the collector sent
// it: what it was made of, and where it lies in buf.
type renderedLine struct {
	desc     *prometheus.Desc // nil for executor_jvm_info
	extra    string
	value    float64
	family   int32
	off, end uint32
}

func (t *jvmText) family(f int) []byte { return t.buf[t.off[f]:t.off[f+1]] }

// text returns e's series in one format, rendered on the first call.
// Two scrapes rendering the same entry at once render it twice and keep
// one. The lines of the JVM's last reading (e.prev) whose series and
// value are unchanged are copied, not rendered: between two readings of
// an idle executor, most of its values stand.
func (c *jvmCollector) text(e *jvmEntry, openMetrics bool) *jvmText {
	slot := &e.text[b2i(openMetrics)]
	if t := slot.Load(); t != nil {
		return t
	}
	sink := c.sinks.get()
	sink.lines, sink.spans, sink.openMetrics = sink.lines[:0], sink.spans[:0], openMetrics
	sink.prev, sink.copied = e.prev[b2i(openMetrics)].Load(), 0
	c.emit(sink, e)
	t := sink.done()
	sink.prev = nil
	c.sinks.put(sink)
	if !slot.CompareAndSwap(nil, t) {
		return slot.Load()
	}
	e.prev[b2i(openMetrics)].Store(nil) // rendered: the last reading's text may go
	return t
}

// textSink renders one JVM's series as lines, in the order they come,
// and done groups them by family. Its buffers are kept from JVM to JVM.
type textSink struct {
	descs       *descTable
	infoFamily  int
	openMetrics bool
	// identity is the JVM's identity labels, rendered and in name order
	// (app_id, executor_id, pid, role); a series' extra label goes
	// between two of them.
	identity [4][]byte
	lines    []byte
	spans    []lineSpan
	order    []int    // scratch for info's labels
	at       []uint32 // scratch for done
	seed     maphash.Seed
	// prev is the text of the JVM's last reading in this format, or nil;
	// its k-th line is the one to compare with the k-th sent now.
	prev   *jvmText
	copied int
	// infoNames and infoValue are executor_jvm_info's labels, sent
	// (info) by the time the JVM's lines are done.
	infoNames, infoValue []string
}

type lineSpan struct {
	start, end uint32
	made       renderedLine // off and end unset
}

func (s *textSink) startJVM(id jvm.Identity, pid string) {
	for i, l := range [4][2]string{
		{"app_id", labelValue(id.AppID)}, {"executor_id", labelValue(id.ExecutorID)},
		{"pid", pid}, {"role", labelValue(id.Role)},
	} {
		s.identity[i] = appendLabel(s.identity[i][:0], l[0], l[1])
		if s.prev != nil && !bytes.Equal(s.identity[i], s.prev.identity[i]) {
			s.prev = nil
		}
	}
}

// copyLine copies the next line from prev when it was made of the same,
// and says whether it did.
func (s *textSink) copyLine(made renderedLine) bool {
	k := len(s.spans)
	if s.prev == nil || k >= len(s.prev.lines) {
		return false
	}
	p := &s.prev.lines[k]
	if p.desc != made.desc || p.extra != made.extra || math.Float64bits(p.value) != math.Float64bits(made.value) {
		return false
	}
	if made.desc == nil && (!slices.Equal(s.prev.infoNames, s.infoNames) || !slices.Equal(s.prev.infoValue, s.infoValue)) {
		return false
	}
	start := len(s.lines)
	s.lines = append(s.lines, s.prev.buf[p.off:p.end]...)
	s.spans = append(s.spans, lineSpan{start: uint32(start), end: uint32(len(s.lines)), made: made})
	s.copied++
	return true
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

func (s *textSink) add(d *prometheus.Desc, vt prometheus.ValueType, v float64, extra ...string) {
	meta, ok := s.descs.meta[d]
	if !ok {
		panic("collector: series of a Desc not made by descTable.desc")
	}
	if (vt == prometheus.CounterValue) != (s.descs.families[meta.family].typ == dto.MetricType_COUNTER) {
		panic("collector: " + s.descs.families[meta.family].name + " sent with the wrong type")
	}
	made := renderedLine{desc: d, value: v, family: int32(meta.family)}
	if meta.extra != "" {
		made.extra = extra[0]
	}
	if s.copyLine(made) {
		return
	}
	start := len(s.lines)
	s.lines = append(s.lines, s.descs.families[meta.family].name...)
	s.lines = append(s.lines, '{')
	for i := range s.identity {
		if meta.extra != "" && i == meta.extraAt {
			s.lines = appendLabel(s.lines, meta.extra, extra[0])
			s.lines = append(s.lines, ',')
		}
		s.lines = append(s.lines, s.identity[i]...)
		s.lines = append(s.lines, ',')
	}
	if meta.extra != "" && meta.extraAt == len(s.identity) {
		s.lines = appendLabel(s.lines, meta.extra, extra[0])
		s.lines = append(s.lines, ',')
	}
	s.lines[len(s.lines)-1] = '}'
	s.value(start, made)
}

func (s *textSink) value(start int, made renderedLine) {
	s.lines = append(s.lines, ' ')
	s.lines = appendFloat(s.lines, made.value, s.openMetrics)
	s.lines = append(s.lines, '\n')
	s.spans = append(s.spans, lineSpan{start: uint32(start), end: uint32(len(s.lines)), made: made})
}

// info renders executor_jvm_info with its labels in name order. Labels
// a registry would refuse (a name that cannot be one, twice the same
// name, a value that is not UTF-8) drop the series, as NewConstMetric's
// error does on the registry's path.
func (s *textSink) info(_ *prometheus.Desc, names, values []string) {
	if len(names) != len(values) {
		return
	}
	s.order = s.order[:0]
	for i := range names {
		if !model.LegacyValidation.IsValidLabelName(names[i]) || !utf8.ValidString(values[i]) {
			return
		}
		s.order = append(s.order, i)
	}
	made := renderedLine{value: 1, family: int32(s.infoFamily)}
	s.infoNames, s.infoValue = names, values
	if s.copyLine(made) {
		return
	}
	slices.SortFunc(s.order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	start := len(s.lines)
	s.lines = append(s.lines, s.descs.families[s.infoFamily].name...)
	s.lines = append(s.lines, '{')
	for k, i := range s.order {
		if k > 0 {
			if names[i] == names[s.order[k-1]] {
				s.lines = s.lines[:start]
				return
			}
			s.lines = append(s.lines, ',')
		}
		s.lines = appendLabel(s.lines, names[i], values[i])
	}
	s.lines = append(s.lines, '}')
	s.value(start, made)
}

// done groups the lines by family, keeping their order within each.
func (s *textSink) done() *jvmText {
	t := &jvmText{buf: make([]byte, len(s.lines)), off: make([]uint32, len(s.descs.families)+1),
		lines: make([]renderedLine, len(s.spans))}
	for i := range s.identity {
		t.identity[i] = slices.Clone(s.identity[i])
	}
	t.copied = s.copied
	t.infoNames, t.infoValue = s.infoNames, s.infoValue
	s.infoNames, s.infoValue = nil, nil
	for _, sp := range s.spans {
		t.off[int(sp.made.family)+1] += sp.end - sp.start
	}
	for f := range len(s.descs.families) {
		t.off[f+1] += t.off[f]
	}
	s.at = append(s.at[:0], t.off[:len(s.descs.families)]...)
	for i, sp := range s.spans {
		f := int(sp.made.family)
		line := &t.lines[i]
		*line = sp.made
		line.off = s.at[f]
		s.at[f] += uint32(copy(t.buf[s.at[f]:], s.lines[sp.start:sp.end]))
		line.end = s.at[f]
	}
	t.sums = make([]uint64, len(s.descs.families))
	for f := range t.sums {
		t.sums[f] = maphash.Bytes(s.seed, t.family(f))
	}
	return t
}
