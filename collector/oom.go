package collector

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/oom"
	"github.com/executor-exporter/executor_exporter/internal/statuspage"
)

var (
	oomKmsgPath = kingpin.Flag("oom.kmsg-path",
		"The kernel log to follow for OOM kills: /dev/kmsg, or a file or FIFO of kmsg records, one per line.").
		Default("/dev/kmsg").String()
	oomCounterFlags = addEventCounterFlags("oom", "kill counter", "kill")
)

func init() {
	registerCollector("oom", true, func(logger log.Logger, deps *Dependencies) (Collector, error) {
		var source jvm.SampleSource
		if t, err := deps.JVMTracker(); err != nil {
			// Kills are still counted, as the kernel names them; none is
			// attributed to an executor.
			level.Error(logger).Log("msg", "OOM kills will not be attributed to JVMs", "err", err)
		} else {
			source = t
		}
		pods, err := deps.Pods()
		if err != nil {
			return nil, err
		}
		return NewOOMCollector(OOMConfig{
			KmsgPath:      *oomKmsgPath,
			Retention:     *oomCounterFlags.retention,
			MaxSeries:     *oomCounterFlags.maxSeries,
			NewSeriesHold: *oomCounterFlags.newSeriesHold,
			Attributed:    deps.witness().Killed,
			Pods:          pods,
		}, source, logger)
	})
}

// OOMConfig configures the oom collector.
type OOMConfig struct {
	KmsgPath      string
	Retention     time.Duration // a counter is dropped this long after its last kill
	MaxSeries     int           // most counters kept; the oldest goes first
	NewSeriesHold time.Duration // a new counter reads 0 at least this long (and one scrape)
	// Follow tunes the reader; zero values take its defaults.
	Follow oom.FollowConfig
	// Pods, when set, names the victim's namespace, pod and container.
	Pods podSource
	// Attributed, when set, is told of each kill of a tracked JVM (the
	// exits collector's judge, which counts it as that JVM's end).
	Attributed func(pid int, at time.Time, cause, region string)
}

var oomKillLabels = append(append([]string{}, identityLabels...), "constraint", "cause", "task", "namespace", "pod", "container", "region")

type oomCollector struct {
	cfg    OOMConfig
	source jvm.SampleSource
	logger log.Logger
	now    func() time.Time

	kills, records, malformed, dropped *prometheus.Desc

	follower  *oom.Follower
	assembler oom.Assembler // used by the follower's goroutine only

	mu             sync.Mutex
	killCounts     eventCounters // by victim, in oomKillLabels order
	recordsTotal   float64
	malformedTotal float64
	loggedErr      string            // the follower error last logged, so each is logged once
	recent         []statuspage.Kill // the last maxRecent kills, oldest first
}

// NewOOMCollector follows the kernel log for OOM kills from now on and
// counts each by victim, asking source (nil: none, no kill is attributed)
// what the victim looked like last (docs/design.md#the-oom-path).
func NewOOMCollector(cfg OOMConfig, source jvm.SampleSource, logger log.Logger) (Collector, error) {
	if cfg.KmsgPath == "" {
		return nil, errors.New("no kernel log path")
	}
	counts, err := newEventCounters("oom", cfg.Retention, cfg.MaxSeries, cfg.NewSeriesHold)
	if err != nil {
		return nil, err
	}
	c := &oomCollector{
		cfg:    cfg,
		source: source,
		logger: logger,
		now:    time.Now,
		kills: newDesc("oom", "kills_total",
			"Processes killed by the kernel OOM killer since the exporter started, by victim (identity labels the executor's for a process killed in its cgroup, empty when neither a tracked JVM nor in the cgroup of one), constraint and judged cause (heap, native, node, unknown). A new victim's series reads 0 for one scrape before its first kill counts, so increase() sees it.",
			oomKillLabels...),
		records: newDesc("oom", "kmsg_records_total",
			"Kernel log records read since the exporter started; flat while the kernel logs means the reader is stuck."),
		malformed: newDesc("oom", "kmsg_malformed_records_total",
			"Kernel log records that looked like OOM-killer lines but could not be read."),
		dropped: newDesc("oom", "series_dropped_total",
			"Kill counters dropped before their retention because --oom.max-series was reached."),
		killCounts: counts,
	}
	fc := cfg.Follow
	fc.Path = cfg.KmsgPath
	c.follower = oom.Follow(fc, c.handleRecord, c.handleFollowError)
	return c, nil
}

// Stop ends following the kernel log.
func (c *oomCollector) Stop() { c.follower.Stop() }

func (c *oomCollector) Update(ch chan<- prometheus.Metric) error {
	now := c.now()
	err := c.follower.Err()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killCounts.collect(ch, c.kills, c.dropped, now)
	ch <- prometheus.MustNewConstMetric(c.records, prometheus.CounterValue, c.recordsTotal)
	ch <- prometheus.MustNewConstMetric(c.malformed, prometheus.CounterValue, c.malformedTotal)
	if err == nil {
		c.loggedErr = "" // a later failure is news again
		return nil
	}
	return fmt.Errorf("kernel log %s unreadable, OOM kills are not attributed (node and container counters still count them): %w", c.cfg.KmsgPath, err)
}

// handleFollowError logs each distinct reader error once: a /dev/kmsg the
// exporter may not read fails the same way at every retry.
func (c *oomCollector) handleFollowError(err error) {
	c.mu.Lock()
	first := err.Error() != c.loggedErr
	c.loggedErr = err.Error()
	c.mu.Unlock()
	if first {
		level.Error(c.logger).Log("msg", "cannot read the kernel log; OOM kills will be counted by vmstat and cgroups but not attributed (needs root or CAP_SYSLOG for /dev/kmsg)",
			"path", c.cfg.KmsgPath, "err", err)
	}
}

func (c *oomCollector) handleRecord(record []byte) {
	line, ok, err := oom.Parse(record)
	c.mu.Lock()
	c.recordsTotal++
	if err != nil {
		c.malformedTotal++
	}
	c.mu.Unlock()
	switch {
	case err != nil:
		level.Warn(c.logger).Log("msg", "unreadable OOM line in the kernel log", "err", err)
	case ok:
		if kill, done := c.assembler.Add(line); done {
			c.recordKill(kill)
		}
	}
}

// recordKill counts one kill against its victim and logs it.
func (c *oomCollector) recordKill(k oom.Kill) {
	a := oom.Attribute(k, c.lookupVictim, c.lookupOwner)
	if a.Reused {
		level.Debug(c.logger).Log("msg", "OOM victim's pid matches a JVM in another cgroup; not attributed",
			"pid", k.PID, "task_memcg", k.TaskMemcg)
	}

	identity := []string{"", "", "", ""}
	memcg := k.TaskMemcg
	if a.Found {
		// A child's kill carries its executor's identity, pid included:
		// task names the child.
		v := a.Victim
		identity = jvmIdentity(jvm.Identity{PID: v.PID, Role: v.Role, AppID: v.AppID, ExecutorID: v.ExecutorID})
		if v.CgroupPath != "" {
			memcg = v.CgroupPath
		}
	}
	// Named at the kill, from the cgroup the kernel or the last sample
	// gives: the pod is usually still listed then, and the JVM's info
	// series, the usual join, is gone soon after.
	ns, pod, container := podOfCgroup(memcg, c.cfg.Pods)
	labels := append(identity, k.Constraint, a.Verdict.Cause, labelValue(k.Task), ns, pod, container, a.Verdict.Region)
	now := c.now()

	c.mu.Lock()
	c.killCounts.add(labels, now)
	c.recent = appendRecent(c.recent, statusKill(a, now, ns, pod), maxRecent)
	c.mu.Unlock()

	c.logKill(a, now)
	// A child's kill is no end of its JVM, which lives on.
	if a.Found && !a.Child && c.cfg.Attributed != nil {
		c.cfg.Attributed(k.PID, now, a.Verdict.Cause, a.Verdict.Region)
	}
}

// lookupVictim is what the JVM tracker last read of pid.
func (c *oomCollector) lookupVictim(pid int) (oom.Victim, bool) {
	if c.source != nil {
		if s, ok := c.source.LastSample(pid); ok {
			return victimOf(s), true
		}
	}
	return oom.Victim{}, false
}

// lookupOwner hands the attribution the JVM whose memory cgroup is the
// kernel's task_memcg of a victim that was no tracked JVM, when exactly one
// is in it. Executors sharing a cgroup (a standalone worker's) cannot be
// told apart from the cgroup: their children's kills stay unattributed.
func (c *oomCollector) lookupOwner(memcg string) (oom.Victim, bool) {
	if c.source == nil {
		return oom.Victim{}, false
	}
	var owner *jvm.Sample
	live := c.source.LiveSamples()
	for i := range live {
		if oom.SameMemcg(live[i].CgroupPath, memcg) {
			if owner != nil {
				return oom.Victim{}, false
			}
			owner = &live[i]
		}
	}
	if owner == nil {
		return oom.Victim{}, false
	}
	return victimOf(*owner), true
}

// victimOf is the part of a JVM's sample that judging a kill needs.
func victimOf(s jvm.Sample) oom.Victim {
	v := oom.Victim{
		PID: s.PID, Role: s.Role, AppID: s.AppID, ExecutorID: s.ExecutorID, SampledAt: s.Time,
		HeapUsed: s.HeapUsed, HeapCommitted: s.HeapCommitted, HeapMax: s.HeapMax, NonHeapCommitted: s.NonHeapCommitted,
		RSSJVM: s.RSSJVM, RSSPython: s.RSSPython, RSSOther: s.RSSOther,
		CgroupPath: s.CgroupPath, CgroupLimit: s.CgroupLimit, CgroupUsage: s.CgroupUsage,
		Growth:       s.Native.Growth(),
		PeakHeapLive: s.Peaks.HeapLive, PeakNonHeap: s.Peaks.NonHeap, PeakPython: s.Peaks.Python,
	}
	if s.Native != nil {
		v.Breakdown, v.HasBreakdown = s.Native.Last, true
	}
	return v
}

// logKill writes the one line an on-call engineer reads about a kill.
func (c *oomCollector) logKill(a oom.Attribution, now time.Time) {
	k, s, v := a.Kill, a.Victim, a.Verdict
	who := fmt.Sprintf("process %d (%s)", k.PID, k.Task)
	switch {
	case a.Child && s.Role == jvm.RoleExecutor:
		who += " of " + jvmWho(s.PID, s.Role, s.AppID, s.ExecutorID)
	case a.Child:
		who += fmt.Sprintf(" in the cgroup of JVM pid %d", s.PID)
	case a.Found:
		who = jvmWho(k.PID, s.Role, s.AppID, s.ExecutorID)
	}
	kv := []interface{}{
		"msg", fmt.Sprintf("OOM kill: %s, cause %s: %s", who, v.Cause, v.Explanation()),
		"pid", k.PID, "task", k.Task, "constraint", k.Constraint, "cause", v.Cause, "region", v.Region,
		"oom_memcg", k.OOMMemcg, "task_memcg", k.TaskMemcg,
		"killed_anon_rss_mib", mibOf(k.AnonRSSKiB << 10),
	}
	if a.Found {
		if a.Child {
			kv = append(kv, "jvm_pid", s.PID)
		}
		kv = append(kv,
			"role", s.Role, "app_id", s.AppID, "executor_id", s.ExecutorID,
			"sample_age_seconds", fmt.Sprintf("%.1f", now.Sub(s.SampledAt).Seconds()),
			"heap_used_mib", mibOf(s.HeapUsed), "heap_committed_mib", mibOf(s.HeapCommitted), "heap_max_mib", mibOf(s.HeapMax),
			"nonheap_committed_mib", mibOf(s.NonHeapCommitted),
			"rss_jvm_mib", mibOf(s.RSSJVM), "rss_python_mib", mibOf(s.RSSPython), "rss_other_mib", mibOf(s.RSSOther),
			"cgroup", s.CgroupPath, "cgroup_limit_mib", mibOf(s.CgroupLimit), "cgroup_usage_mib", mibOf(s.CgroupUsage),
		)
	}
	level.Warn(c.logger).Log(kv...)
}

func mibOf(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// jvmWho names a JVM in a log line.
func jvmWho(pid int, role, appID, executorID string) string {
	switch role {
	case jvm.RoleExecutor:
		return fmt.Sprintf("Spark executor %s of %s (pid %d)", executorID, appID, pid)
	case jvm.RoleDriver:
		return fmt.Sprintf("Spark driver of %s (pid %d)", appID, pid)
	}
	return fmt.Sprintf("JVM pid %d", pid)
}
