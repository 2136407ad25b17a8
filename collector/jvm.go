package collector

import (
	"strconv"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/exposition"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/labelvalue"
	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

func init() {
	registerCollector("jvm", true, func(logger log.Logger, deps *Dependencies) (Collector, error) {
		t, err := deps.JVMTracker()
		if err != nil {
			return nil, err
		}
		pods, err := deps.Pods()
		if err != nil {
			return nil, err
		}
		c := NewJVMCollector(t, logger).(*jvmCollector)
		c.pods, c.podLabels = pods, podsConfigFromFlags().LabelAllowlist
		if s, _ := deps.YARN(); s != nil {
			c.apps = s // its errors are the yarn collector's to report
		}
		return c, nil
	})
}

// The --jvm.* flags configure the JVM tracker the jvm, oom and exits
// collectors share (Dependencies.JVMTracker).
var (
	jvmSampleInterval = kingpin.Flag("jvm.sample-interval",
		"Longest time between two background samples of a JVM, for one far from its container's limit; JVMs nearer it are sampled more often (docs/jvm.md#sampling). 0 samples only on scrapes.").
		Default("30s").Duration()
	jvmSampleIntervalMin = kingpin.Flag("jvm.sample-interval.min",
		"Time between two samples of a JVM above 90 % of its container's limit, or whose growth would reach the limit soon.").
		Default("1s").Duration()
	jvmSampleIntervalAtRisk = kingpin.Flag("jvm.sample-interval.at-risk",
		"Longest time between two samples of a JVM above 75 % of its container's limit, growing, starting, or after a full collection.").
		Default("5s").Duration()
	jvmDiscoveryInterval = kingpin.Flag("jvm.discovery-interval",
		"How often the process table is listed for new JVMs and for JVMs that ended.").
		Default("5s").Duration()
	jvmRetention = kingpin.Flag("jvm.retention",
		"How long the last sample of a JVM that is gone is kept, to attribute OOM kills reported later.").
		Default("10m").Duration()
	jvmMaxSampleAge = kingpin.Flag("jvm.max-sample-age",
		"With --jvm.sample-interval=0, a scrape serves the last reading when it is younger than this, instead of reading every JVM again; 0 reads on every scrape.").
		Default("5s").Duration()
	jvmMaxProcesses = kingpin.Flag("jvm.max-processes",
		"Most JVMs tracked at once (a cardinality guard); more are counted in executor_jvm_processes_dropped.").
		Default("200").Int()
	jvmNativeMaxAge = kingpin.Flag("jvm.native-memory.max-age",
		"Longest a JVM's breakdown of native memory by region goes unchecked (a maps read; smaps again when anything moved). 0 turns breakdowns off.").
		Default("15m").Duration()
	jvmNativeMinInterval = kingpin.Flag("jvm.native-memory.min-interval",
		"Least time between two breakdowns of one JVM (a smaps read, milliseconds of CPU each); a fifth of it above 90 % of its container's limit.").
		Default("10s").Duration()
	jvmNativeMove = kingpin.Flag("jvm.native-memory.move-bytes",
		"A JVM's breakdown is read again when its memory outside the heap, or its container's usage, moved by this much (or by 10 % and a quarter of this).").
		Default("32MiB").Bytes()
)

// JVMTrackerConfigFromFlags is the tracker's configuration from the
// --jvm.* and --path.* flags.
func JVMTrackerConfigFromFlags() jvm.Config {
	paths := FlagPaths()
	native := jvm.DefaultNativeConfig
	native.MaxAge, native.MinInterval, native.MoveBytes = *jvmNativeMaxAge, *jvmNativeMinInterval, uint64(*jvmNativeMove)
	return jvm.Config{
		ProcFS: paths.ProcFS,
		SysFS:  paths.SysFS,
		Sampling: jvm.SamplingConfig{Slowest: *jvmSampleInterval, AtRisk: *jvmSampleIntervalAtRisk,
			Fastest: *jvmSampleIntervalMin, Discovery: *jvmDiscoveryInterval},
		Retention: *jvmRetention,
		// An ended executor's final peaks are exported as long as its end
		// is counted.
		EndedRetention: *exitsCounterFlags.retention,
		MaxProcesses:   *jvmMaxProcesses,
		MaxAge:         *jvmMaxSampleAge,
		Native:         native,
	}
}

// maxLabelBytes caps every label value taken from a JVM: command lines and
// environments belong to whoever started the process.
const maxLabelBytes = labelvalue.MaxBytes

// identityLabels are on every per-process series.
var identityLabels = []string{"pid", "role", "app_id", "executor_id"}

// jvmSource is what the jvm collector reads of the tracker.
type jvmSource interface {
	Current() (jvm.View, error)
	ErrorCounts() map[string]uint64
	Reads() uint64
	NativeReads() (reads, checks uint64)
}

type jvmCollector struct {
	tracker   jvmSource
	logger    log.Logger
	pods      podSource // names each JVM's pod; nil without the Kubernetes API
	podLabels []string
	apps      appNames // names YARN applications; nil off YARN

	table                                  *exposition.Table // the per-JVM families
	info                                   *exposition.Family
	memUsed, memCommitted, memMax          *exposition.Family
	poolUsed, poolCommitted, poolMax       *exposition.Family
	gcCollections, gcSeconds               *exposition.Family
	threads, classes, safepoint, startTime *exposition.Family
	rss                                    *exposition.Family
	containerFamilies
	native, nativeTime         *exposition.Family
	peak, residentPeak, cgPeak *exposition.Family

	processes, dropped, readErrors, nativeReads, reads *prometheus.Desc

	// The per-JVM series of the last view (jvm_series.go).
	buildMu sync.Mutex
	builtOf builtKey
	built   *jvmSet
}

// builtKey is what the per-JVM series depend on: the view and the pod list.
type builtKey struct {
	view time.Time
	pods *cloud.PodIndex
}

// NewJVMCollector reports what the tracker last read of every JVM:
// hsperfdata, the process tree's resident memory, its memory cgroup.
func NewJVMCollector(tracker *jvm.Tracker, logger log.Logger) Collector {
	return newJVMCollector(tracker, logger)
}

func newJVMCollector(tracker jvmSource, logger log.Logger) *jvmCollector {
	t := exposition.NewTable(identityLabels...)
	c := &jvmCollector{
		table:         t,
		tracker:       tracker,
		logger:        logger,
		info:          t.Family(fqName("jvm", "info"), jvmInfoHelp, infoLabels...),
		memUsed:       t.Family(fqName("jvm", "memory_used_bytes"), "Heap or non-heap memory in use.", "area"),
		memCommitted:  t.Family(fqName("jvm", "memory_committed_bytes"), "Heap or non-heap memory committed by the JVM.", "area"),
		memMax:        t.Family(fqName("jvm", "memory_max_bytes"), "Largest heap or non-heap size the JVM may grow to.", "area"),
		poolUsed:      t.Family(fqName("jvm", "memory_pool_used_bytes"), "Memory in use in a heap space or non-heap pool.", "pool"),
		poolCommitted: t.Family(fqName("jvm", "memory_pool_committed_bytes"), "Memory committed to a heap space or non-heap pool.", "pool"),
		poolMax:       t.Family(fqName("jvm", "memory_pool_max_bytes"), "Largest size of a heap space or non-heap pool.", "pool"),
		gcCollections: t.Family(fqName("jvm", "gc_collections_total"), "Collections run by a garbage collector.", "gc"),
		gcSeconds:     t.Family(fqName("jvm", "gc_collection_seconds_total"), "Time spent in a garbage collector's collections.", "gc"),
		threads:       t.Family(fqName("jvm", "threads"), "Java threads alive, all (live) or daemon.", "state"),
		classes:       t.Family(fqName("jvm", "classes_loaded"), "Classes currently loaded."),
		safepoint:     t.Family(fqName("jvm", "safepoint_seconds_total"), "Time application threads were stopped at safepoints."),
		startTime:     t.Family(fqName("jvm", "start_time_seconds"), "When the JVM was created, seconds since the epoch."),
		rss: t.Family(fqName("process", "resident_memory_bytes"),
			"Resident memory of the JVM's process tree: the JVM itself, Python children (PySpark workers), other children.", "kind"),
		containerFamilies: newContainerFamilies(t),
		cgPeak: t.Family(fqName("container", "memory_peak_bytes"),
			"Highest memory charged to the cgroup holding the JVM, kept by the kernel (v1 memory.max_usage_in_bytes, v2 memory.peak); exported for --exits.retention after the JVM ends."),
		residentPeak: t.Family(fqName("process", "resident_memory_peak_bytes"),
			"Highest resident memory of the JVM process (VmHWM, kept by the kernel); exported for --exits.retention after the JVM ends."),
		peak: t.Family(fqName("jvm", "memory_peak_bytes"),
			"Highest value seen at a reading since the JVM was first read, by kind: heap_live (heap less eden: what survived collections), nonheap (resident memory of the JVM and its non-Python children less the committed heap), python (PySpark workers' resident memory); exported for --exits.retention after the JVM ends (docs/metrics.md#peaks).", "kind"),
		native: t.Family(fqName("jvm", "native_memory_bytes"),
			"Resident memory of the JVM process by region, from /proc/<pid>/smaps and the JVM's reservations (docs/jvm.md#native-memory-by-region); read when it can have changed.", "region"),
		nativeTime: t.Family(fqName("jvm", "native_memory_timestamp_seconds"),
			"When the JVM's breakdown by region was last read or found unchanged, seconds since the epoch."),
		nativeReads: newDesc("jvm", "native_memory_reads_total",
			"Reads for the JVMs' breakdowns by region: smaps (a breakdown, milliseconds of CPU each) or maps (a check that found one unchanged).", "file"),
		reads: newDesc("jvm", "reads_total",
			"Readings of a JVM (hsperfdata, process tree, cgroup), in the background as its risk says and on scrapes when nothing samples in the background."),
		processes:  newDesc("jvm", "processes", "JVMs tracked on this machine."),
		dropped:    newDesc("jvm", "processes_dropped", "JVMs found but not tracked because of --jvm.max-processes."),
		readErrors: newDesc("jvm", "read_errors_total", "JVMs found but not read (or whose cgroup was not read), by reason.", "reason"),
	}
	t.Seal()
	return c
}

// Update sends every series, the per-JVM ones included, to ch.
func (c *jvmCollector) Update(ch chan<- prometheus.Metric) error {
	return c.update(ch, c.snapshot(), false)
}

// snapshot is the tracker's current view as a scrape serves it.
func (c *jvmCollector) snapshot() *jvmSet {
	view, err := c.tracker.Current()
	if err != nil {
		return &jvmSet{err: err}
	}
	return c.series(view)
}

// update sends set's series to ch, and the tracker's counters; apart
// leaves out the per-JVM series, which the handler serves from set.
func (c *jvmCollector) update(ch chan<- prometheus.Metric, set *jvmSet, apart bool) error {
	if set.err != nil {
		return set.err
	}
	ch <- prometheus.MustNewConstMetric(c.processes, prometheus.GaugeValue, float64(set.processes))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.GaugeValue, float64(set.dropped))
	errs := c.tracker.ErrorCounts()
	for _, reason := range []string{jvm.ReasonPermission, jvm.ReasonCorrupt, jvm.ReasonStale, jvm.ReasonUntrusted, jvm.ReasonRead, jvm.ReasonCgroup, jvm.ReasonNativeMemory} {
		// Every reason is present from the start, so increase() sees the first error.
		ch <- prometheus.MustNewConstMetric(c.readErrors, prometheus.CounterValue, float64(errs[reason]), reason)
	}
	ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(c.tracker.Reads()))
	reads, checks := c.tracker.NativeReads()
	ch <- prometheus.MustNewConstMetric(c.nativeReads, prometheus.CounterValue, float64(reads), "smaps")
	ch <- prometheus.MustNewConstMetric(c.nativeReads, prometheus.CounterValue, float64(checks), "maps")
	if !apart {
		c.send(set, ch)
	}
	return nil
}

// emitJVM adds j's series to b: the one description of a JVM's series.
func (c *jvmCollector) emitJVM(b exposition.Sink, j *jvm.JVM, pod podIdentity) {
	b.Start(jvmIdentity(j.Identity)...)
	s := &j.Stats

	c.sendInfo(b, j, pod)
	c.sendPeaks(b, &j.Peaks)
	b.Add(c.rss, float64(j.RSSJVM), "jvm")
	b.Add(c.rss, float64(j.RSSPython), "python")
	b.Add(c.rss, float64(j.RSSOther), "other")

	c.sendContainer(b, j)
	if n := j.Native; n != nil {
		for r := nativemem.Region(0); r < nativemem.NumRegions; r++ {
			b.Add(c.native, float64(n.Last.Regions[r]), r.String())
		}
		b.Add(c.nativeTime, unixSeconds(n.Checked))
	}
	if j.Counters != jvm.CountersHsperf {
		return // no hsperfdata (-XX:+PerfDisableSharedMem, -XX:-UsePerfData): what /proc and the cgroup say only
	}
	b.Add(c.memUsed, float64(s.HeapUsed), "heap")
	b.Add(c.memCommitted, float64(s.HeapCommitted), "heap")
	b.Add(c.memUsed, float64(s.NonHeapUsed), "nonheap")
	b.Add(c.memCommitted, float64(s.NonHeapCommitted), "nonheap")
	// A max of 0 is "not set" (Metaspace without -XX:MaxMetaspaceSize).
	addIf(b, s.HeapMax > 0, c.memMax, float64(s.HeapMax), "heap")
	addIf(b, s.NonHeapMax > 0, c.memMax, float64(s.NonHeapMax), "nonheap")

	// Pool and collector names come from the file: only the first of a
	// repeated name counts, or the scrape fails on a duplicate series.
	seen := map[string]bool{}
	for _, p := range s.Pools {
		if name := labelValue(p.Name); !seen[name] {
			seen[name] = true
			b.Add(c.poolUsed, float64(p.Used), name)
			b.Add(c.poolCommitted, float64(p.Committed), name)
			addIf(b, p.Max > 0, c.poolMax, float64(p.Max), name)
		}
	}
	clear(seen)
	for _, g := range s.GCs {
		if name := labelValue(g.Name); !seen[name] {
			seen[name] = true
			b.Add(c.gcCollections, float64(g.Collections), name)
			b.Add(c.gcSeconds, g.Seconds, name)
		}
	}

	b.Add(c.threads, float64(s.ThreadsLive), "live")
	b.Add(c.threads, float64(s.ThreadsDaemon), "daemon")
	b.Add(c.classes, float64(s.ClassesLoaded))
	b.Add(c.safepoint, s.SafepointSeconds)
	b.Add(c.startTime, unixSeconds(s.StartTime))
}

// jvmIdentity is the values of identityLabels for a JVM.
func jvmIdentity(id jvm.Identity) []string {
	return []string{strconv.Itoa(id.PID), labelValue(id.Role), labelValue(id.AppID), labelValue(id.ExecutorID)}
}

// sendPeaks sends the peaks known: 0 is unknown (no hsperfdata, a kernel
// without memory.peak) or none (no Python workers).
func (c *jvmCollector) sendPeaks(b exposition.Sink, p *jvm.Peaks) {
	addIf(b, p.Container > 0, c.cgPeak, float64(p.Container))
	addIf(b, p.Resident > 0, c.residentPeak, float64(p.Resident))
	addIf(b, p.HeapLive > 0, c.peak, float64(p.HeapLive), "heap_live")
	addIf(b, p.NonHeap > 0, c.peak, float64(p.NonHeap), "nonheap")
	addIf(b, p.Python > 0, c.peak, float64(p.Python), "python")
}

// addIf adds a series of f when its figure is known.
func addIf(b exposition.Sink, known bool, f *exposition.Family, v float64, labels ...string) {
	if known {
		b.Add(f, v, labels...)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// fqName is the exporter's name of a metric.
func fqName(subsystem, name string) string { return prometheus.BuildFQName(namespace, subsystem, name) }

// labelValue makes a string from a JVM safe as a label value.
func labelValue(s string) string { return labelvalue.Cap(s, maxLabelBytes) }
