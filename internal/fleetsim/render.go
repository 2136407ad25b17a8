package fleetsim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// templateValues are the template executor's figures the simulated ones
// are scaled from.
type templateValues struct {
	heapMax, nonheap, nodeMemory float64
	age                          float64 // seconds the template executor had run
}

func readTemplateValues(t *Template) templateValues {
	v := templateValues{heapMax: 1, nonheap: 1, nodeMemory: 1, age: 1}
	var rss, committed, start, stamp float64
	for _, s := range t.JVM {
		switch {
		case s.Name == "executor_jvm_memory_max_bytes" && label(s, "area") == "heap":
			v.heapMax = s.Value
		case s.Name == "executor_jvm_memory_committed_bytes" && label(s, "area") == "heap":
			committed = s.Value
		case s.Name == "executor_process_resident_memory_bytes":
			rss += s.Value
		case s.Name == "executor_jvm_start_time_seconds":
			start = s.Value
		case s.Name == "executor_jvm_native_memory_timestamp_seconds":
			stamp = s.Value
		}
	}
	for _, s := range t.Node {
		if s.Name == "executor_node_memory_total_bytes" {
			v.nodeMemory = s.Value
		}
	}
	v.nonheap = max(rss-committed, 1)
	v.age = max(stamp-start, 1)
	return v
}

// Samples calls emit for every series node n exposes at t: the machine's,
// and for each executor running then, the template executor's series with
// its identity and figures; a kill and an exit counter for each executor
// that ended within the retention.
func (f *Fleet) Samples(n *Node, t time.Time, emit func(Sample)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var running, ended []*jvm
	for s := range n.slots {
		h := f.history(n, s, t.Add(time.Nanosecond))
		for i := range h {
			j := &h[i]
			switch {
			case t.Before(j.end):
				running = append(running, j)
			case t.Sub(j.end) < f.cfg.Retention:
				ended = append(ended, j)
			}
		}
	}
	var rss float64
	for _, j := range running {
		rss += f.jvmSamples(n, j, t, emit)
	}
	for _, j := range ended {
		f.endSamples(n, j, t, emit)
	}
	f.nodeSamples(n, t, len(running), rss, emit)
}

// figures are one executor's memory at one moment.
type figures struct {
	frac, saw, live            float64
	heapMax, used, committed   float64
	overhead, nonheap, leak    float64
	scale, nonheapScale, limit float64
}

// memory is what executor j holds at t: a heap whose young generation
// fills and empties every two minutes over old-generation data that grows
// with the executor's age (to the heap's end for one that exhausts it),
// and non-heap memory at about half of Spark's overhead budget, with a
// region that grows past it for one a native OOM kill will end.
func (f *Fleet) memory(n *Node, j *jvm, t time.Time) figures {
	var m figures
	age := t.Sub(j.start).Seconds()
	m.frac = min(max(age/j.end.Sub(j.start).Seconds(), 0), 1)
	phase := f.rand(uint64(n.Index), uint64(j.pid), uint64(j.seq), saltPhase)
	period := max(120*f.cfg.MeanLifetime.Seconds()/3600, 4*f.cfg.Interval.Seconds())
	m.saw = math.Mod(age/period+phase, 1)
	m.live = 0.25 + 0.2*m.frac
	if j.reason == reasonHeapExhausted || j.cause == "heap" {
		m.live = 0.3 + 0.68*m.frac*m.frac
	}
	m.heapMax = n.Type.Heap
	m.used = m.heapMax * min(0.99, m.live+0.3*m.saw*(1-m.live))
	m.committed = m.heapMax * min(1, max(0.6, m.used/m.heapMax+0.1))
	m.overhead = max(384<<20, 0.1*m.heapMax)
	m.limit = m.heapMax + m.overhead
	m.nonheap = (0.45 + 0.15*m.frac + 0.2*j.leak*m.frac) * m.overhead
	if j.cause == "native" {
		m.leak = 0.7 * m.frac * m.frac * m.overhead
	}
	m.scale = m.heapMax / f.base.heapMax
	m.nonheapScale = m.nonheap / f.base.nonheap
	return m
}

func heapPool(pool string) bool {
	return strings.Contains(pool, "Eden") || strings.Contains(pool, "Survivor") ||
		strings.Contains(pool, "Old") || strings.Contains(pool, "Tenured")
}

// jvmSamples emits executor j's series and returns its resident memory.
func (f *Fleet) jvmSamples(n *Node, j *jvm, t time.Time, emit func(Sample)) float64 {
	m := f.memory(n, j, t)
	age := t.Sub(j.start).Seconds()
	jvmLeak, pyLeak, shmLeak := m.leak, 0.0, 0.0
	switch j.region {
	case "python":
		jvmLeak, pyLeak = 0, m.leak
	case "shmem":
		jvmLeak, shmLeak = 0, m.leak
	}
	rssJVM := m.committed + m.nonheap + jvmLeak
	rss := rssJVM + pyLeak
	cache := 0.02 * m.heapMax
	ws := rss + shmLeak + 0.2*cache
	gcLoad := 1.0
	if j.reason == reasonHeapExhausted || j.cause == "heap" {
		gcLoad += 40 * math.Pow(m.frac, 4)
	}
	for _, s := range f.tmpl.JVM {
		v := s.Value
		switch s.Name {
		case "executor_jvm_info":
		case "executor_jvm_memory_used_bytes", "executor_jvm_memory_committed_bytes", "executor_jvm_memory_max_bytes":
			switch {
			case label(s, "area") != "heap":
				v *= m.nonheapScale
			case s.Name == "executor_jvm_memory_used_bytes":
				v = m.used
			case s.Name == "executor_jvm_memory_committed_bytes":
				v = m.committed
			default:
				v = m.heapMax
			}
		case "executor_jvm_memory_peak_bytes":
			if label(s, "kind") == "heap_live" {
				v = m.heapMax * m.live
			} else {
				v *= m.nonheapScale
			}
		case "executor_jvm_memory_pool_used_bytes", "executor_jvm_memory_pool_committed_bytes", "executor_jvm_memory_pool_max_bytes":
			pool := label(s, "pool")
			switch {
			case !heapPool(pool):
				v *= m.nonheapScale
			case s.Name != "executor_jvm_memory_pool_used_bytes":
				v *= m.scale
			case strings.Contains(pool, "Eden"):
				v = m.used - m.heapMax*m.live
			case strings.Contains(pool, "Old") || strings.Contains(pool, "Tenured"):
				v = m.heapMax * m.live
			default:
				v *= m.scale
			}
		case "executor_jvm_native_memory_bytes":
			if r := label(s, "region"); r == "heap" {
				v = m.committed
			} else {
				v *= m.nonheapScale
				if r == j.region {
					v += m.leak
				}
			}
		case "executor_jvm_native_memory_timestamp_seconds":
			v = unix(t)
		case "executor_jvm_start_time_seconds":
			v = unix(j.start)
		case "executor_process_resident_memory_bytes":
			switch label(s, "kind") {
			case "jvm":
				v = rssJVM
			case "python":
				v = pyLeak
			}
		case "executor_process_resident_memory_peak_bytes":
			v = rss
		case "executor_container_memory_limit_bytes":
			v = m.limit
		case "executor_container_memory_usage_bytes":
			v = ws + 0.8*cache
		case "executor_container_memory_working_set_bytes":
			v = ws
		case "executor_container_memory_peak_bytes":
			v = ws + cache
		case "executor_container_memory_bytes":
			switch label(s, "kind") {
			case "anon":
				v = rss
			case "file":
				v = cache + shmLeak
			case "shmem":
				v = shmLeak
			}
		case "executor_container_oom_kills_total":
			v = 0
		default:
			if strings.HasSuffix(s.Name, "_total") {
				v = v / f.base.age * age
				if strings.HasPrefix(s.Name, "executor_jvm_gc_") {
					v *= gcLoad
				}
			}
		}
		emit(Sample{Name: s.Name, Labels: f.jvmLabels(n, j, s.Labels, "", false), Value: v})
	}
	return rss
}

// jvmLabels gives a template series executor j's identity (and, for an
// exit or kill counter, its reason and the region that grew: a live
// series' region, executor_jvm_native_memory_bytes', is the template's).
func (f *Fleet) jvmLabels(n *Node, j *jvm, tmpl []Label, reason string, end bool) []Label {
	out := make([]Label, len(tmpl))
	for i, l := range tmpl {
		v := l.Value
		switch l.Name {
		case "pid":
			v = j.pidLabel
		case "role":
			v = "executor"
		case "app_id":
			v = j.app
		case "executor_id":
			v = j.executor
		case "namespace":
			v = "spark-jobs"
		case "pod":
			v = j.pod
		case "container":
			v = "spark-kubernetes-executor"
		case "uid":
			v = j.uid
		case "container_id":
			v = j.containerID
		case "vm_args_xmx":
			v = n.xmx
		case "reason":
			v = reason
		case "cause":
			v = j.cause
		case "region":
			if end {
				v = j.region
			}
		}
		out[i] = Label{l.Name, v}
	}
	return out
}

// endSamples emits the exit counter of an executor that ended, and its
// kill counter if the kernel killed it: 0 for the first interval, then 1.
func (f *Fleet) endSamples(n *Node, j *jvm, t time.Time, emit func(Sample)) {
	v := 1.0
	if t.Sub(j.end) < f.cfg.Interval {
		v = 0
	}
	emit(Sample{Name: exitFamily, Labels: f.jvmLabels(n, j, f.tmpl.Exit.Labels, j.reason, true), Value: v})
	if j.reason == reasonOOMKilled {
		emit(Sample{Name: killFamily, Labels: f.jvmLabels(n, j, f.tmpl.Kill.Labels, "", true), Value: v})
	}
}

// nodeSamples emits the machine's series: what it is, its memory (what
// the executors hold and a share for the system), its kills so far.
func (f *Fleet) nodeSamples(n *Node, t time.Time, jvms int, rss float64, emit func(Sample)) {
	since := t.Sub(f.cfg.Origin).Seconds() + f.cfg.MeanLifetime.Seconds()
	kills := 0
	for s := range n.slots {
		for _, j := range f.history(n, s, t) {
			if j.reason == reasonOOMKilled && !t.Before(j.end) {
				kills++
			}
		}
	}
	memScale := n.Type.Memory / f.base.nodeMemory
	available := max(n.Type.Memory-rss-0.08*n.Type.Memory, 0.01*n.Type.Memory)
	until, pending := f.Pending(n, t)
	for _, s := range f.tmpl.Node {
		v := s.Value
		labels := s.Labels
		switch s.Name {
		case "executor_instance_info":
			labels = f.instanceLabels(n, labels)
		case "executor_instance_interruption_pending":
			if label(s, "event") == "spot_interruption" {
				v = b2f(pending)
			}
		case "executor_instance_interruption_timestamp_seconds":
			if !pending {
				continue
			}
			v = unix(until)
		case "executor_metadata_last_refresh_timestamp_seconds":
			v = unix(t.Truncate(time.Minute))
		case "executor_node_memory_total_bytes":
			v = n.Type.Memory
		case "executor_node_memory_available_bytes":
			v = available
		case "executor_node_memory_free_bytes":
			v = 0.3 * available
		case "executor_node_memory_cached_bytes":
			v = 0.6 * available
		case "executor_node_memory_anon_bytes":
			v = rss
		case "executor_node_oom_kills_total":
			v += float64(kills)
		case "executor_jvm_processes":
			v = float64(jvms)
		default:
			switch {
			case strings.HasSuffix(s.Name, "_total"):
				v += v / f.base.age * since / 100
			case strings.HasPrefix(s.Name, "executor_node_memory_") && strings.HasSuffix(s.Name, "_bytes"):
				v *= memScale
			}
		}
		emit(Sample{Name: s.Name, Labels: labels, Value: v})
	}
}

func (f *Fleet) instanceLabels(n *Node, tmpl []Label) []Label {
	out := make([]Label, len(tmpl))
	for i, l := range tmpl {
		v := l.Value
		switch l.Name {
		case "instance_type":
			v = n.Type.Name
		case "lifecycle":
			v = n.Lifecycle
		case "zone":
			v = n.Zone
		case "region":
			v = "eu-west-1"
		case "instance_id":
			v = fmt.Sprintf("i-%017x", uint64(n.Index)*0x9e3779b97f4a7+f.cfg.Seed)
		case "node":
			v = n.Name
		case "node_pool":
			v = "executors-" + n.Lifecycle
		}
		out[i] = Label{l.Name, v}
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
