package collector

import (
	"bytes"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// jvmText is one JVM's series in one exposition format, grouped by
// family: family f's lines are fams[f].bytes, in the order the collector
// sends them. A scrape writes each family's header, then every JVM's
// lines of it, so a JVM costs a scrape a copy of bytes, not an encoding.
// The lines are expfmt's bytes (appendText's):
// TestTextHandlerServesWhatPromhttpServes holds them to promhttp's. A
// jvmText is never changed once made, nor are its families: a family
// whose lines all stand from the JVM's last reading is that reading's,
// shared.
type jvmText struct {
	fams []*familyText
	// identity lets the JVM's next reading copy the lines whose series
	// and value are the same (textSink.prev).
	identity             [4][]byte
	infoNames, infoValue []string // executor_jvm_info's labels
	copied               int      // how many lines were copied from the last reading's
	shared               int      // how many families were the last reading's
}

// familyText is one family's lines of a JVM, what each was made of, in
// order, and a hash of the bytes, for the compressed parts kept of each
// family (familyParts).
type familyText struct {
	bytes []byte
	lines []renderedLine
	sum   uint64
}

// renderedLine is one line of a family: what it was made of, and where it
// lies in the family's bytes.
type renderedLine struct {
	desc     *prometheus.Desc // nil for executor_jvm_info
	extra    string
	value    float64
	family   int32
	off, end uint32
}

func (t *jvmText) family(f int) []byte { return t.fams[f].bytes }

// texts returns the series of every JVM of set in one format, for a
// scrape that asked for it.
func (c *jvmCollector) texts(set *jvmSet, openMetrics bool) []*jvmText {
	c.asked[b2i(openMetrics)].Store(time.Now().UnixNano())
	out := make([]*jvmText, len(set.jvms))
	for i, e := range set.jvms {
		out[i] = c.text(e, openMetrics)
	}
	return out
}

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
	sink.start(e.prev[b2i(openMetrics)].Load(), openMetrics)
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
	// its k-th line of a family is the one to compare with the k-th of
	// that family sent now.
	prev   *jvmText
	copied int
	// sent[f] and kept[f] count family f's lines sent and copied so far.
	sent, kept []int
	empty      *familyText
	// infoNames and infoValue are executor_jvm_info's labels, sent
	// (info) by the time the JVM's lines are done.
	infoNames, infoValue []string
}

// lineSpan is a line sent: its bytes are lines[start:end], or, copied,
// the last reading's family's [start:end].
type lineSpan struct {
	start, end uint32
	copied     bool
	made       renderedLine // off and end unset
}

func (s *textSink) start(prev *jvmText, openMetrics bool) {
	s.lines, s.spans, s.openMetrics = s.lines[:0], s.spans[:0], openMetrics
	s.prev, s.copied = prev, 0
	n := len(s.descs.families)
	s.sent, s.kept = slices.Grow(s.sent[:0], n)[:n], slices.Grow(s.kept[:0], n)[:n]
	clear(s.sent)
	clear(s.kept)
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

// copyLine takes the next line of made's family from prev when it was
// made of the same, and says whether it did. The identity labels are the
// same (startJVM), so the bytes are.
func (s *textSink) copyLine(made renderedLine) bool {
	f := made.family
	if s.prev == nil || s.sent[f] >= len(s.prev.fams[f].lines) {
		return false
	}
	p := &s.prev.fams[f].lines[s.sent[f]]
	if p.desc != made.desc || p.extra != made.extra || math.Float64bits(p.value) != math.Float64bits(made.value) {
		return false
	}
	if made.desc == nil && (!slices.Equal(s.prev.infoNames, s.infoNames) || !slices.Equal(s.prev.infoValue, s.infoValue)) {
		return false
	}
	s.spans = append(s.spans, lineSpan{start: p.off, end: p.end, copied: true, made: made})
	s.sent[f]++
	s.kept[f]++
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
	s.sent[made.family]++
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

// done groups the lines by family, keeping their order within each. A
// family whose every line was copied, as many as the last reading had, is
// the last reading's: an idle JVM read again costs the families that
// moved (its container's usage, say), not all of its lines.
func (s *textSink) done() *jvmText {
	n := len(s.descs.families)
	t := &jvmText{fams: make([]*familyText, n), copied: s.copied}
	if s.prev != nil {
		t.identity = s.prev.identity // the same (startJVM), and never changed
	} else {
		for i := range s.identity {
			t.identity[i] = slices.Clone(s.identity[i])
		}
	}
	t.infoNames, t.infoValue = s.infoNames, s.infoValue
	s.infoNames, s.infoValue = nil, nil
	// Each family made anew has buffers of its own, so a family shared
	// by later readings keeps alive its bytes and lines, nothing else.
	at := slices.Grow(s.at[:0], n)[:n]
	clear(at)
	for _, sp := range s.spans {
		if f := sp.made.family; !s.shares(int(f)) {
			at[f] += sp.end - sp.start
		}
	}
	for f := range n {
		switch {
		case s.shares(f):
			t.fams[f] = s.prev.fams[f]
			t.shared++
		case s.sent[f] == 0:
			t.fams[f] = s.emptyFamily()
		default:
			t.fams[f] = &familyText{bytes: make([]byte, 0, at[f]), lines: make([]renderedLine, 0, s.sent[f])}
		}
	}
	for _, sp := range s.spans {
		f := sp.made.family
		if s.shares(int(f)) {
			continue
		}
		src := s.lines
		if sp.copied {
			src = s.prev.fams[f].bytes
		}
		fam := t.fams[f]
		line := sp.made
		line.off = uint32(len(fam.bytes))
		fam.bytes = append(fam.bytes, src[sp.start:sp.end]...)
		line.end = uint32(len(fam.bytes))
		fam.lines = append(fam.lines, line)
	}
	for f := range n {
		if !s.shares(f) && s.sent[f] > 0 {
			t.fams[f].sum = maphash.Bytes(s.seed, t.fams[f].bytes)
		}
	}
	s.at = at
	return t
}

// shares says whether family f is the last reading's: every line of it
// copied, and no more nor fewer than it had.
func (s *textSink) shares(f int) bool {
	return s.prev != nil && s.kept[f] == s.sent[f] && s.sent[f] == len(s.prev.fams[f].lines)
}

// emptyFamily is the family a JVM sends no line of, shared by all.
func (s *textSink) emptyFamily() *familyText {
	if s.empty == nil {
		s.empty = &familyText{sum: maphash.Bytes(s.seed, nil)}
	}
	return s.empty
}
