package collector

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

var (
	jvmSampleInterval = kingpin.Flag("jvm.sample-interval",
		"How often JVMs are sampled in the background, so the last sample before an OOM kill is recent between scrapes. 0 samples only on scrapes.").
		Default("5s").Duration()
	jvmRetention = kingpin.Flag("jvm.retention",
		"How long the last sample of a JVM that is gone is kept, to attribute OOM kills reported later.").
		Default("10m").Duration()
	jvmMaxSampleAge = kingpin.Flag("jvm.max-sample-age",
		"A scrape serves the last background sample when it is younger than this, instead of reading every JVM again; 0 reads on every scrape.").
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
// builds them once, on first use, hands them to the factories and stops
// them after the collectors.
type Dependencies struct {
	logger        log.Logger
	trackerConfig jvm.Config

	tracker      *jvm.Tracker
	trackerErr   error
	trackerBuilt bool

	exits *exitWitness // what the oom and cloud collectors see of JVMs' ends; see witness()

	// pods lists this node's pods for the jvm collector; the cloud
	// collector (built first: factories run in name order) sets it, and
	// stops it. nil without the Kubernetes API.
	pods podSource
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
		ProcFS:       paths.ProcFS,
		SysFS:        paths.SysFS,
		Interval:     *jvmSampleInterval,
		Retention:    *jvmRetention,
		MaxProcesses: *jvmMaxProcesses,
		MaxAge:       *jvmMaxSampleAge,
		Native:       nativeConfigFromFlags(),
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
		d.tracker, d.trackerErr = jvm.NewTracker(d.trackerConfig, log.With(d.logger, "component", "jvm_tracker"))
		if d.trackerErr != nil {
			d.trackerErr = fmt.Errorf("cannot track JVMs: %w", d.trackerErr)
		} else {
			d.tracker.Start()
		}
	}
	return d.tracker, d.trackerErr
}

// Stop ends the background work of what was built.
func (d *Dependencies) Stop() {
	if d.tracker != nil {
		d.tracker.Stop()
	}
}
