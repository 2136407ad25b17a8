// Package exposition writes series that many subjects (the JVMs of a
// machine) share the families of, in the Prometheus text format and
// OpenMetrics, without a registry: each subject's lines are rendered once
// and kept while its values stand, and a scrape copies them between the
// registry's families. A caller describes a subject's series once, to a
// Sink; the same description gives const metrics for any registry
// (Metrics) and the rendered text (Cache). The text is held to what
// client_golang and expfmt write of the same series by this package's
// tests and by the collector's.
package exposition

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Table holds the families of every subject's series, in name order once
// sealed. It is made by one constructor (Family, then Seal) and only read
// after.
type Table struct {
	identity []string // the labels every series has, in Start's order
	families []*Family
	sealed   bool
}

// NewTable makes a table whose series all carry the identity labels.
func NewTable(identity ...string) *Table {
	return &Table{identity: slices.Clone(identity)}
}

// Family is one metric family of the table. Its type follows its name:
// counters end in _total, everything else is a gauge.
type Family struct {
	name, help string
	counter    bool
	desc       *prometheus.Desc
	labels     []string // the identity, then the family's own
	order      []int    // labels' indexes in name order, as expfmt writes them
	// invalid: label names that are not legacy ones, or one twice
	// (WithLabels); both sinks drop the family's series, for the text
	// written here does not quote names as UTF-8 names need.
	invalid bool
	index   int // in the sealed table
	// header is its HELP and TYPE lines, in the text format and in
	// OpenMetrics (whose counters are named without _total).
	header   [2][]byte
	variants *variants // WithLabels' families, shared by the base and them
}

// Family adds a family whose series carry the identity labels, then
// extra.
func (t *Table) Family(fqName, help string, extra ...string) *Family {
	if t.sealed || slices.ContainsFunc(t.families, func(f *Family) bool { return f.name == fqName }) {
		panic("exposition: family " + fqName + " added twice or after Seal")
	}
	f := newFamily(fqName, help, append(slices.Clone(t.identity), extra...))
	f.variants = &variants{}
	t.families = append(t.families, f)
	return f
}

func newFamily(name, help string, labels []string) *Family {
	f := &Family{name: name, help: help, counter: strings.HasSuffix(name, "_total"), labels: labels,
		desc: prometheus.NewDesc(name, help, labels, nil)}
	f.order = make([]int, len(labels))
	for i := range f.order {
		f.order[i] = i
	}
	slices.SortFunc(f.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	f.invalid = f.desc.Err() != nil || slices.ContainsFunc(labels, func(l string) bool { return !model.LegacyValidation.IsValidLabelName(l) })
	return f
}

// Seal puts the families in name order, as a registry gathers them, and
// renders their headers.
func (t *Table) Seal() {
	slices.SortFunc(t.families, func(a, b *Family) int { return strings.Compare(a.name, b.name) })
	for i, f := range t.families {
		f.index = i
		for om := range f.header {
			f.header[om] = header(f, om == 1)
		}
	}
	t.sealed = true
}

// header is a family's HELP and TYPE lines as expfmt writes them: the
// family with one sample, less the sample's line.
func header(f *Family, openMetrics bool) []byte {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: new(0.0)}}
	typ := dto.MetricType_GAUGE
	if f.counter {
		m, typ = &dto.Metric{Counter: &dto.Counter{Value: new(0.0)}}, dto.MetricType_COUNTER
	}
	mf := &dto.MetricFamily{Name: &f.name, Help: &f.help, Type: typ.Enum(), Metric: []*dto.Metric{m}}
	var buf bytes.Buffer
	var err error
	if openMetrics {
		_, err = expfmt.MetricFamilyToOpenMetrics(&buf, mf)
	} else {
		_, err = expfmt.MetricFamilyToText(&buf, mf)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil || bytes.Count(b, []byte("\n")) != 2 {
		panic("exposition: family " + f.name + " cannot be rendered")
	}
	return b[:bytes.LastIndexByte(b, '\n')+1]
}

// variants keeps a family's WithLabels families, one per set of further
// label names: few with a fixed list, as many as the subjects have when
// the names are theirs (pod labels).
type variants struct {
	mu sync.Mutex
	of map[string]*Family
}

// maxVariants bounds a family's variants; past it they are made anew.
const maxVariants = 256

// WithLabels is f, a family of the table, with the further labels names
// after its own, its series' values given in the same order. Names that
// are not legacy label names, or repeat one, drop the series, from both
// sinks.
func (f *Family) WithLabels(names ...string) *Family {
	if len(names) == 0 {
		return f
	}
	key := strings.Join(names, ",")
	v := f.variants
	v.mu.Lock()
	defer v.mu.Unlock()
	if g, ok := v.of[key]; ok {
		return g
	}
	if v.of == nil || len(v.of) >= maxVariants {
		v.of = map[string]*Family{}
	}
	g := newFamily(f.name, f.help, append(slices.Clone(f.labels), names...))
	g.index, g.header, g.variants = f.index, f.header, v
	v.of[key] = g
	return g
}
