package exposition

import (
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Sink receives the series of one subject after another: const metrics
// for a registry (Metrics), or lines of text (Cache.Text).
type Sink interface {
	// Start begins a subject: the values of the table's identity labels.
	Start(identity ...string)
	// Add adds a series of the subject to f, extra being the values of
	// f's labels after the identity.
	Add(f *Family, v float64, extra ...string)
}

// Metrics returns a Sink sending each series to ch as a const metric.
func Metrics(ch chan<- prometheus.Metric) Sink { return &metricSink{ch: ch} }

type metricSink struct {
	ch       chan<- prometheus.Metric
	identity []string
	values   []string
}

func (s *metricSink) Start(identity ...string) { s.identity = append(s.identity[:0], identity...) }

func (s *metricSink) Add(f *Family, v float64, extra ...string) {
	if f.invalid {
		return
	}
	vt := prometheus.GaugeValue
	if f.counter {
		vt = prometheus.CounterValue
	}
	s.values = append(append(s.values[:0], s.identity...), extra...)
	if m, err := prometheus.NewConstMetric(f.desc, vt, v, s.values...); err == nil {
		s.ch <- m
	}
}

// Text is one subject's series in one format, grouped by family: family
// f's lines are families[f.index], in the order they were added. A scrape
// writes each family's header, then every subject's lines of it, so a
// subject costs a scrape a copy of bytes, not an encoding. A Text is
// never changed once made.
type Text struct {
	families [][]byte
}

// Cache keeps one subject's Text per format, rendered on first use; its
// owner makes a new Cache when the subject's values change. Two scrapes
// rendering at once render twice and keep one.
type Cache struct {
	text [2]atomic.Pointer[Text] // text, OpenMetrics
}

// Text returns the series emit adds, in the text format or OpenMetrics.
func (c *Cache) Text(t *Table, openMetrics bool, emit func(Sink)) *Text {
	slot := &c.text[0]
	if openMetrics {
		slot = &c.text[1]
	}
	if text := slot.Load(); text != nil {
		return text
	}
	s := &textSink{table: t, openMetrics: openMetrics, families: make([][]byte, len(t.families))}
	emit(s)
	text := &Text{families: s.families}
	if !slot.CompareAndSwap(nil, text) {
		return slot.Load()
	}
	return text
}

// textSink renders series as lines, appended to their family's.
type textSink struct {
	table       *Table
	openMetrics bool
	// identity is the subject's identity labels, each rendered as
	// name="value", in the table's order; dropped when a value is not
	// UTF-8, as a registry drops the series.
	identity [][]byte
	dropped  bool
	families [][]byte
}

func (s *textSink) Start(identity ...string) {
	s.identity = s.identity[:0]
	s.dropped = len(identity) != len(s.table.identity)
	for i, v := range identity {
		s.dropped = s.dropped || !utf8.ValidString(v)
		s.identity = append(s.identity, appendLabel(nil, s.table.identity[i], v))
	}
}

func (s *textSink) Add(f *Family, v float64, extra ...string) {
	if s.dropped || f.invalid || len(s.identity)+len(extra) != len(f.labels) {
		return
	}
	for _, e := range extra {
		if !utf8.ValidString(e) {
			return
		}
	}
	b := append(s.families[f.index], f.name...)
	for k, i := range f.order {
		if k == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		if i < len(s.identity) {
			b = append(b, s.identity[i]...)
		} else {
			b = appendLabel(b, f.labels[i], extra[i-len(s.identity)])
		}
	}
	if len(f.order) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, v, s.openMetrics)
	s.families[f.index] = append(b, '\n')
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
}
