package collector

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/exits"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
)

var exitsCounterFlags = addEventCounterFlags("exits", "exit counter", "exit")

func init() {
	registerCollector("exits", true, func(logger log.Logger, deps *Dependencies) (Collector, error) {
		t, err := deps.JVMTracker()
		if err != nil {
			return nil, err
		}
		pods, err := deps.Pods()
		if err != nil {
			return nil, err
		}
		return newExitsCollector(ExitsConfig{
			Retention:     *exitsCounterFlags.retention,
			MaxSeries:     *exitsCounterFlags.maxSeries,
			NewSeriesHold: *exitsCounterFlags.newSeriesHold,
			Pods:          pods,
		}, t, deps.witness(), logger)
	})
}

// ExitsConfig configures the exits collector.
type ExitsConfig struct {
	Retention     time.Duration // a counter is dropped this long after its last exit
	MaxSeries     int           // most counters kept; the oldest goes first
	NewSeriesHold time.Duration // a new counter reads 0 at least this long (and one scrape)
	// Pods, when set, names the JVM's namespace, pod and container.
	Pods podSource
}

// exitWitness gathers what is seen of a JVM's end for the judge and hands
// each decision to the exits collector (docs/design.md#the-exits-path).
type exitWitness struct {
	mu      sync.Mutex
	judge   *exits.Judge[jvm.Sample]
	yarn    yarnContainers  // nil off YARN
	notices func() []string // pending interrupting notices; nil without the cloud collector
	sink    func([]exits.Decided[jvm.Sample])
}

// newExitWitnessOf returns a witness that asks src (nil: none) about the
// YARN containers JVMs die in.
func newExitWitnessOf(src yarnContainers) *exitWitness {
	cfg := exits.DefaultConfig
	if src != nil {
		cfg.YARNStatus = yarnStatus(src)
	}
	return &exitWitness{judge: exits.NewJudge[jvm.Sample](cfg), yarn: src}
}

// witness returns the dependencies' exit witness, built on first use
// (the YARN source's errors are the yarn collector's to report).
func (d *Dependencies) witness() *exitWitness {
	if d.exits == nil {
		var src yarnContainers
		if s, _ := d.YARN(); s != nil {
			src = s
		}
		d.exits = newExitWitnessOf(src)
	}
	return d.exits
}

// Killed records a kernel OOM kill attributed to a tracked JVM.
// region is what grew most for a native kill (oom.Verdict.Region).
func (w *exitWitness) Killed(pid int, at time.Time, cause, region string) {
	w.mu.Lock()
	w.judge.Killed(exits.Kill{PID: pid, Received: at, Cause: cause, Region: region})
	w.mu.Unlock()
	w.Decide(at)
}

// WatchNotices sets where pending interruption notices are read from.
func (w *exitWitness) WatchNotices(f func() []string) {
	w.mu.Lock()
	w.notices = f
	w.mu.Unlock()
}

// Gone takes the tracker's report of the JVMs found gone (every scan) and
// decides what it can; what must wait for a late kill or notice is decided
// when the judge's delay is over, not at the next scan or scrape.
func (w *exitWitness) Gone(now time.Time, gone []jvm.Exit) {
	w.mu.Lock()
	for _, e := range gone {
		d := exits.Death{End: e.End}
		d.YARN = yarnEvidence(w.yarn, e.Last, d)
		w.judge.Died(d, e.Last)
	}
	w.mu.Unlock()
	w.Decide(now)
	if len(gone) > 0 {
		time.AfterFunc(exits.DefaultConfig.Delay+10*time.Millisecond, func() { w.Decide(time.Now()) })
	}
}

// Decide hands over the deaths that can be decided at now.
func (w *exitWitness) Decide(now time.Time) {
	w.mu.Lock()
	if w.notices != nil {
		w.judge.Notices(now, w.notices())
	}
	var decided []exits.Decided[jvm.Sample]
	if w.judge.Pending() > 0 {
		decided = w.judge.Decide(now)
	}
	sink := w.sink
	w.mu.Unlock()
	if len(decided) > 0 && sink != nil {
		sink(decided)
	}
}

func (w *exitWitness) setSink(f func([]exits.Decided[jvm.Sample])) {
	w.mu.Lock()
	w.sink = f
	w.mu.Unlock()
}

type exitsCollector struct {
	cfg     ExitsConfig
	witness *exitWitness
	logger  log.Logger
	now     func() time.Time

	exitsDesc, dropped *prometheus.Desc

	mu     sync.Mutex
	exits  eventCounters     // identityLabels, then reason, namespace, pod, container, region
	recent []statuspage.Exit // oldest first
}

// newExitsCollector counts the JVMs the tracker finds gone, by identity
// and the reason the judge gives (docs/exits.md).
func newExitsCollector(cfg ExitsConfig, tracker *jvm.Tracker, witness *exitWitness, logger log.Logger) (Collector, error) {
	counts, err := newEventCounters("exits", cfg.Retention, cfg.MaxSeries, cfg.NewSeriesHold)
	if err != nil {
		return nil, err
	}
	c := &exitsCollector{
		cfg:     cfg,
		witness: witness,
		logger:  logger,
		now:     time.Now,
		exitsDesc: newDesc("jvm", "exits_total",
			"Tracked JVMs that ended since the exporter started, by identity and judged reason (oom_killed, heap_exhausted, interrupted, killed, exited, unknown; docs/exits.md). A new series reads 0 for one scrape before its first exit counts, so increase() sees it.",
			append(append([]string{}, identityLabels...), "reason", "namespace", "pod", "container", "region")...),
		dropped: newDesc("jvm", "exits_series_dropped_total",
			"Exit counters dropped before their retention because --exits.max-series was reached."),
		exits: counts,
	}
	witness.setSink(c.record)
	tracker.OnScan(func(now time.Time, _ jvm.View, gone []jvm.Exit) { witness.Gone(now, gone) })
	return c, nil
}

func (c *exitsCollector) Update(ch chan<- prometheus.Metric) error {
	now := c.now()
	c.witness.Decide(now) // a death whose delay ran out since the last scan
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exits.collect(ch, c.exitsDesc, c.dropped, now)
	return nil
}

// record counts decided deaths and logs each.
func (c *exitsCollector) record(decided []exits.Decided[jvm.Sample]) {
	now := c.now()
	c.mu.Lock()
	for _, d := range decided {
		s := d.Payload
		// Named at the exit: the JVM's info series goes with it.
		ns, pod, container := podOfCgroup(s.CgroupPath, c.cfg.Pods)
		if container == "" {
			container = labelValue(s.YARNContainer) // no cgroup of its own: the NodeManager's container, as on executor_jvm_info
		}
		c.exits.add(append(jvmIdentity(s.Identity), d.Verdict.Reason, ns, pod, container, d.Verdict.Region), now)
		c.recent = appendRecent(c.recent, statuspage.Exit{Time: d.At, Identity: statusIdentity(s.PID, s.Role, s.AppID, s.ExecutorID),
			Reason: d.Verdict.Reason, Detail: explanation(d.Verdict), Region: d.Verdict.Region}, maxRecent)
	}
	c.mu.Unlock()
	for _, d := range decided {
		c.logExit(d)
	}
}

// explanation is the evidence and, for the reasons that carry one (the
// YARN kills), what to change.
func explanation(v exits.Verdict) string {
	if v.Advice == "" {
		return v.Evidence
	}
	return v.Evidence + "; " + v.Advice
}

// logExit writes the one line about a JVM's end.
func (c *exitsCollector) logExit(d exits.Decided[jvm.Sample]) {
	s, v := d.Payload, d.Verdict
	lvl := level.Warn
	if v.Reason == exits.ReasonExited {
		lvl = level.Info
	}
	lvl(c.logger).Log(
		"msg", fmt.Sprintf("JVM ended: %s, reason %s: %s", jvmWho(s.PID, s.Role, s.AppID, s.ExecutorID), v.Reason, explanation(v)),
		"pid", s.PID, "role", s.Role, "app_id", s.AppID, "executor_id", s.ExecutorID, "reason", v.Reason, "region", v.Region,
		"hsperfdata_file", d.Death.File.String(),
		"last_alive", d.Death.LastAlive.UTC().Format(time.RFC3339Nano),
		"noticed_after_seconds", fmt.Sprintf("%.1f", d.Death.Noticed.Sub(d.Death.LastAlive).Seconds()),
		"heap_used_mib", mibOf(d.Death.Heap.Used), "heap_max_mib", mibOf(d.Death.Heap.Max),
		"rss_jvm_mib", mibOf(s.RSSJVM), "rss_python_mib", mibOf(s.RSSPython), "rss_other_mib", mibOf(s.RSSOther),
		"cgroup", s.CgroupPath, "cgroup_limit_mib", mibOf(s.CgroupLimit), "cgroup_usage_mib", mibOf(s.CgroupUsage),
	)
}

// reportStatus adds the recent exits, newest first, to the status page.
func (c *exitsCollector) reportStatus(s *statuspage.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.ExitsCounted = true
	s.Exits = append(s.Exits, newestFirst(c.recent)...)
}
