package collector

import (
	"fmt"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// eventCounterFlags are the --<prefix>.* settings of an eventCounters.
type eventCounterFlags struct {
	retention     *time.Duration
	maxSeries     *int
	newSeriesHold *time.Duration
}

// addEventCounterFlags declares the flags; counter names what is counted
// ("kill counter") and event the event ("kill").
func addEventCounterFlags(prefix, counter, event string) eventCounterFlags {
	return eventCounterFlags{
		retention: kingpin.Flag(prefix+".retention",
			fmt.Sprintf("How long each %s is exported after its last %s.", counter, event)).
			Default("1h").Duration(),
		maxSeries: kingpin.Flag(prefix+".max-series",
			fmt.Sprintf("Most %ss kept at once; the oldest is dropped beyond it (a cardinality guard).", counter)).
			Default("500").Int(),
		newSeriesHold: kingpin.Flag(prefix+".new-series-hold",
			fmt.Sprintf("How long each new %s reads 0 at least, besides one scrape; set it to the scrape interval when several Prometheus servers scrape the exporter.", counter)).
			Default("0s").Duration(),
	}
}

// eventCounters are counters of events that outlive their subject (an OOM
// kill, a JVM's end), one series per label set: a new series reads 0 first
// (docs/oom.md#alerting-on-the-first-kill-of-a-new-series), and they are
// bounded (docs/oom.md#bounds). Its collector holds a lock around it.
type eventCounters struct {
	retention     time.Duration
	maxSeries     int
	newSeriesHold time.Duration

	series  map[string]*eventSeries
	dropped float64
}

type eventSeries struct {
	labels   []string
	count    float64
	born     time.Time // first event
	last     time.Time // last event
	shownAt0 bool      // a scrape has seen it at 0
}

// newEventCounters checks the bounds; what names the collector in errors.
func newEventCounters(what string, retention time.Duration, maxSeries int, newSeriesHold time.Duration) (eventCounters, error) {
	if maxSeries <= 0 {
		return eventCounters{}, fmt.Errorf("%s max series must be positive", what)
	}
	if retention <= 0 {
		return eventCounters{}, fmt.Errorf("%s retention must be positive", what)
	}
	return eventCounters{retention: retention, maxSeries: maxSeries, newSeriesHold: newSeriesHold, series: map[string]*eventSeries{}}, nil
}

func (e *eventCounters) add(labels []string, now time.Time) {
	key := strings.Join(labels, "\xff")
	if s, ok := e.series[key]; ok {
		s.count++
		s.last = now
		return
	}
	if len(e.series) >= e.maxSeries {
		e.dropOldest()
	}
	e.series[key] = &eventSeries{labels: labels, count: 1, born: now, last: now}
}

func (e *eventCounters) dropOldest() {
	var oldestKey string
	var oldest time.Time
	for key, s := range e.series {
		if oldestKey == "" || s.last.Before(oldest) {
			oldestKey, oldest = key, s.last
		}
	}
	delete(e.series, oldestKey)
	e.dropped++
}

// collect sends every retained series of desc, expiring those past their
// retention, and reports how many were dropped for the bound.
func (e *eventCounters) collect(ch chan<- prometheus.Metric, desc, droppedDesc *prometheus.Desc, now time.Time) {
	for key, s := range e.series {
		if now.Sub(s.last) > e.retention {
			delete(e.series, key)
			continue
		}
		value := s.count
		if !s.shownAt0 || now.Sub(s.born) < e.newSeriesHold {
			value = 0
		}
		s.shownAt0 = true
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, value, s.labels...)
	}
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, e.dropped)
}
