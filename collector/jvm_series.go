package collector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/exposition"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// jvmSet is one view of the tracker as a scrape serves it
// (docs/design.md#data-flow): each live JVM, then each that ended within
// the retention (its final peaks only); err is the tracker's, when it has
// no view.
type jvmSet struct {
	err       error
	processes int
	dropped   int
	jvms      []*jvmEntry
}

// jvmEntry is one JVM of a view, its series rendered per format on first
// use and kept while its reading is the same (a JVM far from its limit is
// read every 30 s, a scrape comes every 15).
type jvmEntry struct {
	of    jvmBuildKey
	j     jvm.JVM     // the reading, for a live JVM
	ended *jvm.Sample // the last sample, for one that ended
	pod   podIdentity
	text  exposition.Cache
}

// jvmBuildKey is what a JVM's series depend on.
type jvmBuildKey struct {
	start, read, native time.Time
	pods                *cloud.PodIndex
}

// series returns the per-JVM series of view and pod list, made once; a
// JVM whose reading has not changed keeps its entry and rendered text.
func (c *jvmCollector) series(view jvm.View) *jvmSet {
	pods := podsOf(c.pods)
	key := builtKey{view: view.Time, pods: pods.Index}
	c.buildMu.Lock()
	defer c.buildMu.Unlock()
	if c.built != nil && c.builtOf == key {
		return c.built
	}
	set := &jvmSet{processes: len(view.JVMs), dropped: view.Dropped, jvms: make([]*jvmEntry, 0, len(view.JVMs)+len(view.Ended))}
	// The last set's live JVMs, like the view's, are in pid order: one
	// walk pairs each JVM with its last entry.
	var prev []*jvmEntry
	if c.built != nil {
		prev = c.built.jvms[:c.built.processes]
	}
	for i := range view.JVMs {
		j := &view.JVMs[i]
		of := jvmBuildKey{start: j.ProcessStart, read: j.Time, pods: pods.Index}
		if j.Native != nil {
			of.native = j.Native.Checked
		}
		for len(prev) > 0 && prev[0].j.PID < j.PID {
			prev = prev[1:]
		}
		if len(prev) > 0 && prev[0].j.PID == j.PID && prev[0].of == of && !of.start.IsZero() {
			set.jvms = append(set.jvms, prev[0])
			continue
		}
		set.jvms = append(set.jvms, &jvmEntry{of: of, j: *j, pod: withYARN(resolvePod(j, pods, c.pods, c.podLabels), j, c.apps)})
	}
	// An ended JVM keeps only its final peaks: there are few.
	for i := range view.Ended {
		set.jvms = append(set.jvms, &jvmEntry{ended: &view.Ended[i]})
	}
	c.built, c.builtOf = set, key
	return set
}

func (c *jvmCollector) emit(sink exposition.Sink, e *jvmEntry) {
	if s := e.ended; s != nil {
		sink.Start(jvmIdentity(s.Identity)...)
		c.sendPeaks(sink, &s.Peaks)
		return
	}
	c.emitJVM(sink, &e.j, e.pod)
}

// send sends the set's series to a registry.
func (c *jvmCollector) send(set *jvmSet, ch chan<- prometheus.Metric) {
	sink := exposition.Metrics(ch)
	for _, e := range set.jvms {
		c.emit(sink, e)
	}
}

// texts returns the series of every JVM of set in one format.
func (c *jvmCollector) texts(set *jvmSet, openMetrics bool) []*exposition.Text {
	out := make([]*exposition.Text, len(set.jvms))
	for i, e := range set.jvms {
		out[i] = e.text.Text(c.table, openMetrics, func(sink exposition.Sink) { c.emit(sink, e) })
	}
	return out
}
