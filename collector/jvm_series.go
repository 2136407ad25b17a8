package collector

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// The per-JVM series (up to 50 for each JVM) are built once per tracker
// view, not once per scrape: every scrape until the next view serves them.
// They are built straight into client_model's form with label pairs kept
// from build to build (a JVM's identity labels for its whole life, pool
// and collector names for good), and served to the exporter's handler as
// they are (ExecutorCollector's TextHandler and Gatherer), without the
// registry's per-series checks, sorting and copies: with 100 JVMs those
// cost more than the rest of the scrape (BenchmarkSeries).

// descMeta is what the builder needs of a Desc that client_golang keeps
// private.
type descMeta struct {
	name, help string
	extra      string // the label after the identity, "" for none
	extraAt    int    // where it sorts among the identity labels
}

// descTable holds the per-JVM Descs of one collector and their metadata;
// made by its constructor, only read after.
type descTable map[*prometheus.Desc]descMeta

func newDescMeta(name, help string, extra []string) descMeta {
	m := descMeta{name: name, help: help}
	if len(extra) == 1 {
		m.extra = extra[0]
		sorted := slices.Clone(identityLabels)
		slices.Sort(sorted)
		m.extraAt, _ = slices.BinarySearch(sorted, extra[0])
	}
	return m
}

// labelPairs keeps label pairs from one build to the next. Used by one
// build at a time (the collector's build lock).
type labelPairs struct {
	identities map[jvm.Identity][]*dto.LabelPair
	used       map[jvm.Identity]bool // in this build
	extras     map[[2]string]*dto.LabelPair
	names      map[*prometheus.Desc]string // of Descs not made by descTable.desc
	// infos keeps each JVM's executor_jvm_info series while its labels
	// stay the same: its value is always 1, so the series itself is reused.
	infos    map[infoKey]*dto.Metric
	infoUsed map[infoKey]bool
}

// infoKey is an info series' Desc and its label values, each prefixed by
// its length.
type infoKey struct {
	desc   *prometheus.Desc
	values string
}

func (p *labelPairs) start() {
	if p.identities == nil {
		p.identities, p.used, p.extras = map[jvm.Identity][]*dto.LabelPair{}, map[jvm.Identity]bool{}, map[[2]string]*dto.LabelPair{}
		p.names = map[*prometheus.Desc]string{}
		p.infos, p.infoUsed = map[infoKey]*dto.Metric{}, map[infoKey]bool{}
	}
	clear(p.used)
	clear(p.infoUsed)
}

// prune forgets the identities and info series of JVMs that were not in
// this build.
func (p *labelPairs) prune() {
	for id := range p.identities {
		if !p.used[id] {
			delete(p.identities, id)
		}
	}
	for key := range p.infos {
		if !p.infoUsed[key] {
			delete(p.infos, key)
		}
	}
}

// maxExtraPairs bounds the kept pool, collector, state and kind pairs;
// pool and collector names come from hsperfdata files.
const maxExtraPairs = 4096

// identity returns the JVM's identity labels in name order.
func (p *labelPairs) identity(id jvm.Identity, pid string) []*dto.LabelPair {
	p.used[id] = true
	if pairs, ok := p.identities[id]; ok {
		return pairs
	}
	values := map[string]string{"pid": pid, "role": labelValue(id.Role), "app_id": labelValue(id.AppID), "executor_id": labelValue(id.ExecutorID)}
	names := slices.Clone(identityLabels)
	slices.Sort(names)
	pairs := make([]*dto.LabelPair, len(names))
	for i, n := range names {
		pairs[i] = &dto.LabelPair{Name: &names[i], Value: new(values[n])}
	}
	p.identities[id] = pairs
	return pairs
}

func (p *labelPairs) extra(name, value string) *dto.LabelPair {
	if lp, ok := p.extras[[2]string{name, value}]; ok {
		return lp
	}
	if len(p.extras) >= maxExtraPairs {
		clear(p.extras)
	}
	key := &[2]string{name, value} // on the heap only when new
	lp := &dto.LabelPair{Name: &key[0], Value: &key[1]}
	p.extras[*key] = lp
	return lp
}

// seriesSet is the per-JVM series of one view, in client_model's form.
type seriesSet struct {
	families []*dto.MetricFamily // by name; series in the order built
	// The same series with their Descs, for a registry.
	metrics []*dto.Metric
	descs   []*prometheus.Desc
}

// send sends the series to a registry.
func (s *seriesSet) send(ch chan<- prometheus.Metric) {
	for i, m := range s.metrics {
		ch <- prebuiltMetric{desc: s.descs[i], m: m}
	}
}

// seriesBuilder builds one seriesSet.
type seriesBuilder struct {
	pairs    *labelPairs
	descs    descTable
	byName   map[string]*dto.MetricFamily
	set      *seriesSet
	identity []*dto.LabelPair // of the JVM being built
	slab     []series         // allocated 64 at a time
	// jvm records the series of the JVM being built, for the next build
	// to reuse while its reading is the same; nil when not recording.
	jvm *jvmBuilt
}

// jvmBuilt is one JVM's series in a build: the next build appends them
// as they are while the JVM's reading is the same (a JVM far from its
// limit is read every 30 s, a scrape comes every 15).
type jvmBuilt struct {
	of     jvmBuildKey
	id     jvm.Identity
	info   infoKey
	series []builtSeries
}

// jvmBuildKey is what a JVM's series depend on: the reading, its
// breakdown by region, and the pod list.
type jvmBuildKey struct {
	start, read, native time.Time
	pods                *cloud.PodIndex
}

type builtSeries struct {
	desc       *prometheus.Desc
	name, help string
	typ        dto.MetricType
	m          *dto.Metric
}

// reuse appends a JVM's series of the last build.
func (b *seriesBuilder) reuse(j *jvmBuilt) {
	b.pairs.used[j.id] = true
	if j.info.desc != nil {
		b.pairs.infoUsed[j.info] = true
	}
	for _, s := range j.series {
		b.append(s.desc, s.name, s.help, s.typ, s.m)
	}
}

// newSeriesBuilder starts a set sized like prev (the last build), so that
// its slices do not grow their way there.
func newSeriesBuilder(pairs *labelPairs, prev *seriesSet, descs descTable) *seriesBuilder {
	set := &seriesSet{}
	b := &seriesBuilder{pairs: pairs, descs: descs, byName: map[string]*dto.MetricFamily{}, set: set}
	if prev != nil {
		set.metrics = make([]*dto.Metric, 0, len(prev.metrics))
		set.descs = make([]*prometheus.Desc, 0, len(prev.descs))
		set.families = make([]*dto.MetricFamily, 0, len(prev.families))
		for _, f := range prev.families {
			nf := &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type, Metric: make([]*dto.Metric, 0, len(f.Metric))}
			b.byName[f.GetName()] = nf
			set.families = append(set.families, nf)
		}
	}
	return b
}

// series is one sample's allocation: the metric, its value and its labels.
type series struct {
	m      dto.Metric
	g      dto.Gauge
	c      dto.Counter
	v      float64
	labels [5]*dto.LabelPair
}

// add adds one series of a Desc made by descTable.desc, for the JVM set by
// startJVM.
func (b *seriesBuilder) add(d *prometheus.Desc, vt prometheus.ValueType, v float64, extra ...string) {
	meta, ok := b.descs[d]
	if !ok {
		panic("collector: series of a Desc not made by descTable.desc")
	}
	if len(b.slab) == 0 {
		b.slab = make([]series, 64)
	}
	s := &b.slab[0]
	b.slab = b.slab[1:]
	s.v = v
	labels := s.labels[:0]
	if meta.extra == "" {
		labels = append(labels, b.identity...)
	} else {
		labels = append(labels, b.identity[:meta.extraAt]...)
		labels = append(labels, b.pairs.extra(meta.extra, extra[0]))
		labels = append(labels, b.identity[meta.extraAt:]...)
	}
	s.m.Label = labels
	typ := dto.MetricType_GAUGE
	if vt == prometheus.CounterValue {
		typ = dto.MetricType_COUNTER
		s.c.Value = &s.v
		s.m.Counter = &s.c
	} else {
		s.g.Value = &s.v
		s.m.Gauge = &s.g
	}
	b.append(d, meta.name, meta.help, typ, &s.m)
}

// info adds executor_jvm_info with these label values (d's label names,
// which vary with the pod labels): the series of the last build when the
// values are the same, else one made by client_golang.
func (b *seriesBuilder) info(d *prometheus.Desc, values []string) {
	var key []byte
	for _, v := range values {
		key = strconv.AppendInt(key, int64(len(v)), 10)
		key = append(key, ':')
		key = append(key, v...)
	}
	k := infoKey{desc: d, values: string(key)}
	b.pairs.infoUsed[k] = true
	if b.jvm != nil {
		b.jvm.info = k
	}
	if m, ok := b.pairs.infos[k]; ok {
		b.append(d, b.descName(d), jvmInfoHelp, dto.MetricType_GAUGE, m)
		return
	}
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 1, values...)
	if err != nil {
		return
	}
	out := &dto.Metric{}
	if err := m.Write(out); err != nil {
		return
	}
	b.pairs.infos[k] = out
	b.append(d, b.descName(d), jvmInfoHelp, dto.MetricType_GAUGE, out)
}

// descName is the metric name of a Desc not made by descTable.desc.
func (b *seriesBuilder) descName(d *prometheus.Desc) string {
	name, ok := b.pairs.names[d]
	if !ok {
		name = descName(d)
		if len(b.pairs.names) >= maxInfoDescs {
			clear(b.pairs.names)
		}
		b.pairs.names[d] = name
	}
	return name
}

func (b *seriesBuilder) append(d *prometheus.Desc, name, help string, typ dto.MetricType, m *dto.Metric) {
	f := b.byName[name]
	if f == nil {
		f = &dto.MetricFamily{Name: new(name), Help: new(help), Type: typ.Enum()}
		b.byName[name] = f
		b.set.families = append(b.set.families, f)
	}
	f.Metric = append(f.Metric, m)
	b.set.metrics = append(b.set.metrics, m)
	b.set.descs = append(b.set.descs, d)
	if b.jvm != nil {
		b.jvm.series = append(b.jvm.series, builtSeries{desc: d, name: name, help: help, typ: typ, m: m})
	}
}

func (b *seriesBuilder) done() *seriesSet {
	// Families of the last build that this one has no series of go.
	b.set.families = slices.DeleteFunc(b.set.families, func(f *dto.MetricFamily) bool { return len(f.Metric) == 0 })
	slices.SortFunc(b.set.families, func(x, y *dto.MetricFamily) int { return strings.Compare(x.GetName(), y.GetName()) })
	return b.set
}

// descName is the metric name of a Desc, from its String form
// (Desc{fqName: "name", ...}); client_golang keeps the field private.
func descName(d *prometheus.Desc) string {
	s := d.String()
	const prefix = `Desc{fqName: "`
	if !strings.HasPrefix(s, prefix) {
		return ""
	}
	s = s[len(prefix):]
	if i := strings.IndexByte(s, '"'); i >= 0 {
		return s[:i]
	}
	return ""
}

// prebuiltMetric serves a built series through a registry.
type prebuiltMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

func (p prebuiltMetric) Desc() *prometheus.Desc { return p.desc }

func (p prebuiltMetric) Write(out *dto.Metric) error {
	out.Label, out.Gauge, out.Counter = p.m.Label, p.m.Gauge, p.m.Counter
	return nil
}

// Gatherer serves g — a gatherer whose registry has ec.ServedApart()
// registered — and adds the per-JVM series that the jvm collector's
// update of this gather built, as they were built, merged in name order,
// without the registry's per-series checks and sorting: with 100 JVMs
// those cost more than the rest of a scrape (BenchmarkSeries). It is for
// the HTTP handler (promhttp.HandlerForTransactional).
func (ec *ExecutorCollector) Gatherer(g prometheus.Gatherer) prometheus.TransactionalGatherer {
	jc, _ := ec.Collectors["jvm"].(*jvmCollector)
	return prebuiltGatherer{g: g, jc: jc}
}

type prebuiltGatherer struct {
	g  prometheus.Gatherer
	jc *jvmCollector
}

func (p prebuiltGatherer) Gather() ([]*dto.MetricFamily, func(), error) {
	mfs, err := p.g.Gather()
	if p.jc == nil {
		return mfs, func() {}, err
	}
	set := p.jc.served.Load()
	if set == nil || len(set.families) == 0 {
		return mfs, func() {}, err
	}
	return mergeFamilies(mfs, set.families), func() {}, err
}

// mergeFamilies merges two lists of families sorted by name; a name in
// both becomes one family with the series of both.
func mergeFamilies(a, b []*dto.MetricFamily) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch c := strings.Compare(a[0].GetName(), b[0].GetName()); {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			out = append(out, &dto.MetricFamily{Name: a[0].Name, Help: a[0].Help, Type: a[0].Type,
				Metric: append(slices.Clip(a[0].Metric), b[0].Metric...)})
			a, b = a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}
