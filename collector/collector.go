// Package collector turns what internal/* reads into Prometheus metrics.
// It follows node_exporter: one file per collector, each registered with
// registerCollector and switchable with --collector.<name> /
// --no-collector.<name>, all run in parallel on every scrape.
package collector

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
)

// namespace prefixes every metric the exporter defines.
const namespace = "executor"

// Collector is what every collector implements: send the current metrics to
// ch. A returned error marks the collector failed for this scrape
// (executor_scrape_collector_success 0) without failing the scrape.
type Collector interface {
	Update(ch chan<- prometheus.Metric) error
}

// Stopper is implemented by collectors that run background goroutines
// (refreshers, pollers, log readers); Stop ends them.
type Stopper interface {
	Stop()
}

// ErrNoData tells the framework that a collector had nothing to report
// this time; it is no failure.
var ErrNoData = errors.New("collector returned no data")

// Factory builds a collector from its own flags and deps, what is built
// once per exporter.
type Factory func(logger log.Logger, deps *Dependencies) (Collector, error)

var (
	factoriesMu       sync.Mutex
	factories         = map[string]Factory{}
	collectorEnabled  = map[string]*bool{}
	scrapeDurationDsc = newDesc("scrape", "collector_duration_seconds", "executor_exporter: Duration of a collector scrape.", "collector")
	scrapeSuccessDesc = newDesc("scrape", "collector_success", "executor_exporter: Whether a collector succeeded.", "collector")
)

// newDesc describes a metric the exporter defines.
func newDesc(subsystem, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, nil)
}

// registerCollector adds a collector and its --collector.<name> flag.
func registerCollector(name string, enabledByDefault bool, factory Factory) {
	def := "disabled"
	if enabledByDefault {
		def = "enabled"
	}
	flag := kingpin.Flag("collector."+name, fmt.Sprintf("Enable the %s collector (default: %s).", name, def)).
		Default(fmt.Sprintf("%v", enabledByDefault)).
		Bool()

	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	factories[name] = factory
	collectorEnabled[name] = flag
}

// Names lists every registered collector, sorted.
func Names() []string {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	return slices.Sorted(maps.Keys(factories))
}

// ExecutorCollector runs the enabled collectors in parallel and reports each
// one's duration and success; it owns them and their dependencies.
type ExecutorCollector struct {
	Collectors map[string]Collector
	deps       *Dependencies
	logger     log.Logger
}

// NewExecutorCollector builds the collectors enabled by flags, and deps
// for those that share them. On error, whatever was built is stopped.
func NewExecutorCollector(logger log.Logger, deps *Dependencies) (*ExecutorCollector, error) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	ec := &ExecutorCollector{Collectors: map[string]Collector{}, deps: deps, logger: logger}
	// Sorted: a deterministic build order, and so deterministic logs.
	for _, name := range slices.Sorted(maps.Keys(collectorEnabled)) {
		if !*collectorEnabled[name] {
			continue
		}
		c, err := factories[name](log.With(logger, "collector", name), deps)
		if err != nil {
			ec.Stop()
			return nil, fmt.Errorf("collector %s: %w", name, err)
		}
		ec.Collectors[name] = c
	}
	return ec, nil
}

// NewExecutorCollectorFrom wraps already-built collectors, for tests.
func NewExecutorCollectorFrom(logger log.Logger, collectors map[string]Collector) *ExecutorCollector {
	return &ExecutorCollector{Collectors: collectors, logger: logger}
}

// Describe implements prometheus.Collector.
func (ec *ExecutorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- scrapeDurationDsc
	ch <- scrapeSuccessDesc
}

// Collect implements prometheus.Collector.
func (ec *ExecutorCollector) Collect(ch chan<- prometheus.Metric) { ec.collect(ch, nil, true) }

// fromSnapshot is ec with the jvm collector serving set; its per-JVM
// series only with perJVM, for the handler writes them itself (Handler).
type fromSnapshot struct {
	ec     *ExecutorCollector
	set    *jvmSet
	perJVM bool
}

func (s fromSnapshot) Describe(ch chan<- *prometheus.Desc) { s.ec.Describe(ch) }
func (s fromSnapshot) Collect(ch chan<- prometheus.Metric) { s.ec.collect(ch, s.set, s.perJVM) }

// collect runs every collector's Update in parallel, the jvm collector's
// from set (nil: the view it finds).
func (ec *ExecutorCollector) collect(ch chan<- prometheus.Metric, set *jvmSet, perJVM bool) {
	var wg sync.WaitGroup
	for name, c := range ec.Collectors {
		wg.Go(func() {
			update := c.Update
			if jc, ok := c.(*jvmCollector); ok && set != nil {
				update = func(ch chan<- prometheus.Metric) error { return jc.update(ch, set, !perJVM) }
			}
			ec.execute(name, update, ch)
		})
	}
	wg.Wait()
}

// Stop ends the collectors' background work, then the dependencies'.
func (ec *ExecutorCollector) Stop() {
	for _, c := range ec.Collectors {
		if s, ok := c.(Stopper); ok {
			s.Stop()
		}
	}
	if ec.deps != nil {
		ec.deps.Stop()
	}
}

func (ec *ExecutorCollector) execute(name string, update func(chan<- prometheus.Metric) error, ch chan<- prometheus.Metric) {
	begin := time.Now()
	err := update(ch)
	duration := time.Since(begin)

	success := 1.0
	switch {
	case err == nil:
		level.Debug(ec.logger).Log("msg", "collector succeeded", "name", name, "duration_seconds", duration.Seconds())
	case errors.Is(err, ErrNoData):
		level.Debug(ec.logger).Log("msg", "collector returned no data", "name", name, "duration_seconds", duration.Seconds(), "err", err)
	default:
		level.Error(ec.logger).Log("msg", "collector failed", "name", name, "duration_seconds", duration.Seconds(), "err", err)
		success = 0
	}
	ch <- prometheus.MustNewConstMetric(scrapeDurationDsc, prometheus.GaugeValue, duration.Seconds(), name)
	ch <- prometheus.MustNewConstMetric(scrapeSuccessDesc, prometheus.GaugeValue, success, name)
}
