package collector

import (
	"hash/maphash"
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
}

func (t *jvmText) family(f int) []byte { return t.buf[t.off[f]:t.off[f+1]] }

// text returns e's series in one format, rendered on the first call.
// Two scrapes rendering the same entry at once render it twice and keep
// one.
func (c *jvmCollector) text(e *jvmEntry, openMetrics bool) *jvmText {
	slot := &e.text[b2i(openMetrics)]
	if t := slot.Load(); t != nil {
		return t
	}
	sink := c.sinks.get()
	sink.lines, sink.spans, sink.openMetrics = sink.lines[:0], sink.spans[:0], openMetrics
	c.emit(sink, e)
	t := sink.done()
	c.sinks.put(sink)
	if !slot.CompareAndSwap(nil, t) {
		return slot.Load()
	}
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
}

type lineSpan struct {
	family     int
	start, end uint32
}

func (s *textSink) startJVM(id jvm.Identity, pid string) {
	for i, l := range [4][2]string{
		{"app_id", labelValue(id.AppID)}, {"executor_id", labelValue(id.ExecutorID)},
		{"pid", pid}, {"role", labelValue(id.Role)},
	} {
		s.identity[i] = appendLabel(s.identity[i][:0], l[0], l[1])
	}
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
	s.value(start, meta.family, v)
}

func (s *textSink) value(start, family int, v float64) {
	s.lines = append(s.lines, ' ')
	s.lines = appendFloat(s.lines, v, s.openMetrics)
	s.lines = append(s.lines, '\n')
	s.spans = append(s.spans, lineSpan{family: family, start: uint32(start), end: uint32(len(s.lines))})
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
	s.value(start, s.infoFamily, 1)
}

// done groups the lines by family, keeping their order within each.
func (s *textSink) done() *jvmText {
	t := &jvmText{buf: make([]byte, len(s.lines)), off: make([]uint32, len(s.descs.families)+1)}
	for _, sp := range s.spans {
		t.off[sp.family+1] += sp.end - sp.start
	}
	for f := range len(s.descs.families) {
		t.off[f+1] += t.off[f]
	}
	s.at = append(s.at[:0], t.off[:len(s.descs.families)]...)
	for _, sp := range s.spans {
		s.at[sp.family] += uint32(copy(t.buf[s.at[sp.family]:], s.lines[sp.start:sp.end]))
	}
	t.sums = make([]uint64, len(s.descs.families))
	for f := range t.sums {
		t.sums[f] = maphash.Bytes(s.seed, t.family(f))
	}
	return t
}
