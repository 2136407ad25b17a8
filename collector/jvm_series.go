package collector

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// The per-JVM series (up to 50 for each JVM) are most of a scrape: with
// 100 JVMs, 5,000 of its 5,200 series. They do not go through the
// registry on the exporter's own handler. Each JVM's are rendered as
// exposition text once per reading and format (jvm_render.go) and kept
// while the reading is the same; the handler writes them between the
// registry's families (ExecutorCollector.TextHandler). Any other registry
// (Update) and protobuf (ExecutorCollector.Gatherer) get them as const
// metrics, made per gather.

// jvmFamily is one per-JVM metric family.
type jvmFamily struct {
	name, help string
	typ        dto.MetricType
	// header is its HELP and TYPE lines, in the text format and in
	// OpenMetrics (whose counters are named without _total).
	header [2][]byte
}

// descMeta is what the renderer needs of a Desc that client_golang keeps
// private.
type descMeta struct {
	family  int
	extra   string // the label after the identity, "" for none
	extraAt int    // where it sorts among the identity labels
}

// descTable holds the per-JVM Descs of one collector, their metadata and
// their families in name order; made by the collector's constructor
// (desc, then sort), only read after. A family's type follows its name:
// counters end in _total, everything else is a gauge.
type descTable struct {
	meta     map[*prometheus.Desc]descMeta
	families []jvmFamily
	byName   map[string]int
}

func newDescTable() *descTable {
	return &descTable{meta: map[*prometheus.Desc]descMeta{}, byName: map[string]int{}}
}

// desc makes a per-JVM Desc with the identity labels and extra.
func (t *descTable) desc(subsystem, name, help string, extra ...string) *prometheus.Desc {
	fq := prometheus.BuildFQName(namespace, subsystem, name)
	d := prometheus.NewDesc(fq, help, append(slices.Clone(identityLabels), extra...), nil)
	meta := descMeta{family: t.family(fq, help)}
	if len(extra) == 1 {
		meta.extra = extra[0]
		sorted := slices.Sorted(slices.Values(identityLabels))
		meta.extraAt, _ = slices.BinarySearch(sorted, extra[0])
	}
	t.meta[d] = meta
	return d
}

func (t *descTable) family(name, help string) int {
	if i, ok := t.byName[name]; ok {
		return i
	}
	typ := dto.MetricType_GAUGE
	if strings.HasSuffix(name, "_total") {
		typ = dto.MetricType_COUNTER
	}
	t.families = append(t.families, jvmFamily{name: name, help: help, typ: typ})
	t.byName[name] = len(t.families) - 1
	return len(t.families) - 1
}

// sort puts the families in name order, as a registry gathers them, and
// renders their headers.
func (t *descTable) sort() {
	order := slices.Clone(t.families)
	slices.SortFunc(order, func(a, b jvmFamily) int { return strings.Compare(a.name, b.name) })
	for i := range order {
		f := &order[i]
		for _, om := range []bool{false, true} {
			f.header[b2i(om)] = familyHeader(f.name, f.help, f.typ, om)
		}
		t.byName[f.name] = i
	}
	for d, m := range t.meta {
		m.family = t.byName[t.families[m.family].name]
		t.meta[d] = m
	}
	t.families = order
}

// familyHeader is a family's HELP and TYPE lines as expfmt writes them:
// the family with one sample, less the sample's line.
func familyHeader(name, help string, typ dto.MetricType, openMetrics bool) []byte {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: new(0.0)}}
	if typ == dto.MetricType_COUNTER {
		m = &dto.Metric{Counter: &dto.Counter{Value: new(0.0)}}
	}
	mf := &dto.MetricFamily{Name: &name, Help: &help, Type: typ.Enum(), Metric: []*dto.Metric{m}}
	var buf bytes.Buffer
	var err error
	if openMetrics {
		_, err = expfmt.MetricFamilyToOpenMetrics(&buf, mf)
	} else {
		_, err = expfmt.MetricFamilyToText(&buf, mf)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil || bytes.Count(b, []byte("\n")) != 2 {
		panic("collector: per-JVM family " + name + " cannot be rendered")
	}
	return b[:bytes.LastIndexByte(b, '\n')+1]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// seriesSink receives the series of one JVM after another: the renderer
// (textSink) or a registry's channel (metricSink).
type seriesSink interface {
	startJVM(id jvm.Identity, pid string)
	add(d *prometheus.Desc, vt prometheus.ValueType, v float64, extra ...string)
	// info adds executor_jvm_info with these label names (d's, which
	// vary with the pod labels) and values.
	info(d *prometheus.Desc, names, values []string)
}

// metricSink sends each series to a registry as a const metric.
type metricSink struct {
	ch       chan<- prometheus.Metric
	identity [4]string // in identityLabels' order
	values   []string
}

func (s *metricSink) startJVM(id jvm.Identity, pid string) {
	s.identity = [4]string{pid, labelValue(id.Role), labelValue(id.AppID), labelValue(id.ExecutorID)}
}

func (s *metricSink) add(d *prometheus.Desc, vt prometheus.ValueType, v float64, extra ...string) {
	s.values = append(append(s.values[:0], s.identity[:]...), extra...)
	if m, err := prometheus.NewConstMetric(d, vt, v, s.values...); err == nil {
		s.ch <- m
	}
}

func (s *metricSink) info(d *prometheus.Desc, _, values []string) {
	if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 1, values...); err == nil {
		s.ch <- m
	}
}

// jvmSet is one view of the tracker as a scrape serves it: how many JVMs
// it has, and its per-JVM series: each JVM of it, then each that ended
// within the retention (its final peaks only). err is the tracker's,
// when it has no view.
type jvmSet struct {
	err       error
	processes int
	dropped   int
	jvms      []*jvmEntry
}

// jvmEntry is one JVM of a view and its series, rendered per format on
// first use and kept, with the entry, for as long as its reading is the
// same (a JVM far from its limit is read every 30 s, a scrape comes every
// 15).
type jvmEntry struct {
	of    jvmBuildKey
	j     jvm.JVM     // the reading, for a live JVM
	ended *jvm.Sample // the last sample, for one that ended
	pod   podIdentity
	text  [2]atomic.Pointer[jvmText] // text, OpenMetrics
}

// jvmBuildKey is what a JVM's series depend on: the reading, its
// breakdown by region, and the pod list.
type jvmBuildKey struct {
	start, read, native time.Time
	pods                *cloud.PodIndex
}

// emit sends e's series to sink.
func (c *jvmCollector) emit(sink seriesSink, e *jvmEntry) {
	if s := e.ended; s != nil {
		sink.startJVM(s.Identity, strconv.Itoa(s.PID))
		c.sendPeaks(sink, &s.Peaks)
		return
	}
	c.updateJVM(sink, &e.j, e.pod)
}

// send sends the set's series to a registry.
func (c *jvmCollector) send(set *jvmSet, ch chan<- prometheus.Metric) {
	sink := &metricSink{ch: ch}
	for _, e := range set.jvms {
		c.emit(sink, e)
	}
}

// Gatherer gathers every collector and g — the build info, the exporter's
// own metrics — from one snapshot of the tracker's view, with the per-JVM
// series as const metrics. It is for formats other than text (protobuf),
// through promhttp.HandlerForTransactional.
func (ec *ExecutorCollector) Gatherer(g prometheus.Gatherer) prometheus.TransactionalGatherer {
	jc, _ := ec.Collectors["jvm"].(*jvmCollector)
	return servedGatherer{g: g, ec: ec, jc: jc}
}

type servedGatherer struct {
	g  prometheus.Gatherer
	ec *ExecutorCollector
	jc *jvmCollector
}

func (p servedGatherer) Gather() ([]*dto.MetricFamily, func(), error) {
	var set *jvmSet
	if p.jc != nil {
		set = p.jc.snapshot()
	}
	mfs, err := p.ec.gatherWith(set, true, p.g)
	return mfs, func() {}, err
}
