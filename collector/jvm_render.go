package collector

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// jvmText is one JVM's series in one exposition format, grouped by
// family: family f's lines are fams[f], in the order the collector sends
// them. A scrape writes each family's header, then every JVM's lines of
// it, so a JVM costs a scrape a copy of bytes, not an encoding. The lines
// are expfmt's bytes: TestTextHandlerServesWhatPromhttpServes holds them
// to promhttp's. A jvmText is never changed once made.
type jvmText struct {
	fams [][]byte
}

func (t *jvmText) family(f int) []byte { return t.fams[f] }

// texts returns the series of every JVM of set in one format.
func (c *jvmCollector) texts(set *jvmSet, openMetrics bool) []*jvmText {
	out := make([]*jvmText, len(set.jvms))
	for i, e := range set.jvms {
		out[i] = c.text(e, openMetrics)
	}
	return out
}

// text returns e's series in one format, rendered on the first call and
// kept with the entry, which lives as long as the JVM's reading is the
// same. Two scrapes rendering the same entry at once render it twice and
// keep one.
func (c *jvmCollector) text(e *jvmEntry, openMetrics bool) *jvmText {
	slot := &e.text[b2i(openMetrics)]
	if t := slot.Load(); t != nil {
		return t
	}
	sink := &textSink{descs: c.descs, infoFamily: c.infoFamily, openMetrics: openMetrics,
		fams: make([][]byte, len(c.descs.families))}
	c.emit(sink, e)
	t := &jvmText{fams: sink.fams}
	if !slot.CompareAndSwap(nil, t) {
		return slot.Load()
	}
	return t
}

// textSink renders one JVM's series as lines, appended to their family's.
type textSink struct {
	descs       *descTable
	infoFamily  int
	openMetrics bool
	// identity is the JVM's identity labels, rendered and in name order
	// (app_id, executor_id, pid, role); a series' extra label goes
	// between two of them.
	identity [4][]byte
	fams     [][]byte
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
	b := s.fams[meta.family]
	b = append(b, s.descs.families[meta.family].name...)
	b = append(b, '{')
	for i := range s.identity {
		if meta.extra != "" && i == meta.extraAt {
			b = appendLabel(b, meta.extra, extra[0])
			b = append(b, ',')
		}
		b = append(b, s.identity[i]...)
		b = append(b, ',')
	}
	if meta.extra != "" && meta.extraAt == len(s.identity) {
		b = appendLabel(b, meta.extra, extra[0])
		b = append(b, ',')
	}
	b[len(b)-1] = '}'
	s.fams[meta.family] = s.value(b, v)
}

func (s *textSink) value(b []byte, v float64) []byte {
	b = append(b, ' ')
	b = appendFloat(b, v, s.openMetrics)
	return append(b, '\n')
}

// info renders executor_jvm_info with its labels in name order. Labels
// a registry would refuse (a name that cannot be one, twice the same
// name, a value that is not UTF-8) drop the series, as NewConstMetric's
// error does on the registry's path.
func (s *textSink) info(_ *prometheus.Desc, names, values []string) {
	if len(names) != len(values) {
		return
	}
	order := make([]int, 0, len(names))
	for i := range names {
		if !model.LegacyValidation.IsValidLabelName(names[i]) || !utf8.ValidString(values[i]) {
			return
		}
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for k := 1; k < len(order); k++ {
		if names[order[k]] == names[order[k-1]] {
			return
		}
	}
	b := s.fams[s.infoFamily]
	b = append(b, s.descs.families[s.infoFamily].name...)
	b = append(b, '{')
	for k, i := range order {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendLabel(b, names[i], values[i])
	}
	b = append(b, '}')
	s.fams[s.infoFamily] = s.value(b, 1)
}
