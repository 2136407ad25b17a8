package collector

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/exposition"
)

// Handler serves every collector's series and g's (the build info, the
// exporter's own metrics), as promhttp does, each request from one
// snapshot of the JVM tracker's view (docs/design.md#data-flow).
func (ec *ExecutorCollector) Handler(g prometheus.Gatherer, opts promhttp.HandlerOpts) http.Handler {
	fallback := promhttp.HandlerForTransactional(ec.Gatherer(g), opts)
	jc, _ := ec.Collectors["jvm"].(*jvmCollector)
	if jc == nil {
		return fallback
	}
	return exposition.Handler(jc.table, textSource{ec: ec, jc: jc, g: g}, fallback, opts)
}

// textSource is what Handler serves in the text formats.
type textSource struct {
	ec *ExecutorCollector
	jc *jvmCollector
	g  prometheus.Gatherer
}

func (s textSource) Snapshot(openMetrics bool) ([]*dto.MetricFamily, []*exposition.Text, error) {
	set := s.jc.snapshot()
	mfs, err := s.ec.gatherWith(set, false, s.g)
	if err != nil {
		return nil, nil, err
	}
	return mfs, s.jc.texts(set, openMetrics), nil
}

// Gatherer gathers every collector and g from one snapshot of the
// tracker's view, for formats other than text (protobuf).
func (ec *ExecutorCollector) Gatherer(g prometheus.Gatherer) prometheus.TransactionalGatherer {
	jc, _ := ec.Collectors["jvm"].(*jvmCollector)
	return prometheus.ToTransactionalGatherer(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		var set *jvmSet
		if jc != nil {
			set = jc.snapshot()
		}
		return ec.gatherWith(set, true, g)
	}))
}

// gatherWith gathers every collector, the jvm collector from set (nil:
// there is none), with its per-JVM series or without, and g.
func (ec *ExecutorCollector) gatherWith(set *jvmSet, perJVM bool, g prometheus.Gatherer) ([]*dto.MetricFamily, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(fromSnapshot{ec: ec, set: set, perJVM: perJVM}); err != nil {
		return nil, err
	}
	return prometheus.Gatherers{reg, g}.Gather()
}
