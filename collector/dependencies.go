package collector

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/yarn"
)

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

// Dependencies are what several collectors share. NewExecutorCollector
// hands them to the factories, which build each on first use in whatever
// order they run, and stops them after the collectors.
type Dependencies struct {
	logger        log.Logger
	trackerConfig jvm.Config

	tracker      *jvm.Tracker
	trackerErr   error
	trackerBuilt bool

	refresher      *cloud.Refresher // the cloud collector's cache and this node's pod list; see cloudRefresher()
	refresherErr   error
	refresherBuilt bool
	// pods is what Pods returned, for the status page, which must build
	// nothing: nil until a factory asked, and when pods are not listed.
	pods podSource

	exits *exitWitness // what the oom and cloud collectors see of JVMs' ends; see witness()

	yarn      *yarn.Source // the NodeManager and ResourceManager; see YARN()
	yarnErr   error
	yarnBuilt bool
}

// NewDependencies returns dependencies that build the JVM tracker from cfg
// when a collector first asks for it.
func NewDependencies(logger log.Logger, trackerConfig jvm.Config) *Dependencies {
	return &Dependencies{logger: logger, trackerConfig: trackerConfig}
}

// JVMTrackerConfigFromFlags is the tracker's configuration from the
// --jvm.* and --path.* flags.
func JVMTrackerConfigFromFlags() jvm.Config {
	paths := FlagPaths()
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
		Native:         nativeConfigFromFlags(),
	}
}

func nativeConfigFromFlags() jvm.NativeConfig {
	c := jvm.DefaultNativeConfig
	c.MaxAge, c.MinInterval, c.MoveBytes = *jvmNativeMaxAge, *jvmNativeMinInterval, uint64(*jvmNativeMove)
	return c
}

// JVMTracker returns the one JVM tracker, started. The jvm collector reads
// from it and the oom collector asks it what a killed pid looked like, so
// it runs when either is enabled. Factories run one at a time, so this
// needs no lock.
func (d *Dependencies) JVMTracker() (*jvm.Tracker, error) {
	if !d.trackerBuilt {
		d.trackerBuilt = true
		cfg := d.trackerConfig
		if s, _ := d.YARN(); s != nil && cfg.YARN == nil {
			cfg.YARN = s // its errors are the yarn collector's to report
		}
		d.tracker, d.trackerErr = jvm.NewTracker(cfg, log.With(d.logger, "component", "jvm_tracker"))
		if d.trackerErr != nil {
			d.trackerErr = fmt.Errorf("cannot track JVMs: %w", d.trackerErr)
		} else {
			d.tracker.Start()
		}
	}
	return d.tracker, d.trackerErr
}

// cloudRefresher returns the one cloud refresher, started, built from the
// --cloud.* and --kubernetes.* flags. The cloud collector serves its
// cache, and its pod list names the JVMs of the jvm, oom and exits
// collectors; one refresher keeps one client and one list per node.
func (d *Dependencies) cloudRefresher() (*cloud.Refresher, error) {
	if !d.refresherBuilt {
		d.refresherBuilt = true
		d.refresher, d.refresherErr = cloud.NewRefresher(cloudConfigFromFlags(), log.With(d.logger, "collector", "cloud"))
		if d.refresherErr == nil {
			d.refresher.Start()
		}
	}
	return d.refresher, d.refresherErr
}

// Pods returns the list of this node's pods that names JVMs, or nil when
// pods are not listed: without --kubernetes.node-name or an API server,
// with --no-kubernetes.pod-metadata, or with --no-collector.cloud, which
// keeps the exporter from building the refresher that lists them.
func (d *Dependencies) Pods() (podSource, error) {
	if d.pods != nil || !collectorOn("cloud") {
		return d.pods, nil
	}
	r, err := d.cloudRefresher()
	if err != nil {
		return nil, err
	}
	if r.PodsEnabled() {
		d.pods = r
	}
	return d.pods, nil
}

// YARN returns the one YARN source, started, built from the --yarn.* flags
// and yarn-site.xml; nil when this is no YARN node or with
// --no-collector.yarn. The yarn collector serves its node facts; the
// tracker and the exits collector read its containers.
func (d *Dependencies) YARN() (*yarn.Source, error) {
	if !d.yarnBuilt && collectorOn("yarn") {
		d.yarnBuilt = true
		logger := log.With(d.logger, "collector", "yarn")
		cfg, ok, err := YARNConfigFromFlags(logger)
		switch {
		case err != nil:
			d.yarnErr = fmt.Errorf("yarn: %w", err)
		case ok:
			d.yarn = yarn.NewSource(cfg, logger)
			d.yarn.Start()
		}
	}
	return d.yarn, d.yarnErr
}

// collectorOn says whether --collector.<name> is set. It reads
// collectorEnabled without factoriesMu, which NewExecutorCollector holds
// while the factories run; only init functions write the map.
func collectorOn(name string) bool {
	enabled, ok := collectorEnabled[name]
	return ok && *enabled
}

// Stop ends the background work of what was built.
func (d *Dependencies) Stop() {
	if d.tracker != nil {
		d.tracker.Stop()
	}
	if d.refresher != nil {
		d.refresher.Stop()
	}
	if d.yarn != nil {
		d.yarn.Stop()
	}
}
