package collector

import (
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

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
)

var (
	sharedTrackerOnce sync.Once
	sharedTracker     *jvm.Tracker
	sharedTrackerErr  error
)

// sharedJVMTracker returns the one tracker of this process, built from the
// --jvm.* flags and started on first use. The jvm collector reads from it
// and the oom collector asks it what a killed pid looked like, so it runs
// even with --no-collector.jvm. It is never stopped: it lives as long as
// the exporter. It returns nil if the tracker cannot be built (procfs
// missing); the error is logged once.
func sharedJVMTracker(logger log.Logger) *jvm.Tracker {
	sharedTrackerOnce.Do(func() {
		sharedTracker, sharedTrackerErr = jvm.NewTracker(jvmTrackerConfig(FlagPaths()), log.With(logger, "component", "jvm_tracker"))
		if sharedTrackerErr != nil {
			level.Error(logger).Log("msg", "cannot track JVMs", "err", sharedTrackerErr)
			return
		}
		sharedTracker.Start()
	})
	return sharedTracker
}

// jvmTrackerConfig is the tracker's configuration from the flags.
func jvmTrackerConfig(paths Paths) jvm.Config {
	return jvm.Config{
		ProcFS:       paths.ProcFS,
		SysFS:        paths.SysFS,
		Interval:     *jvmSampleInterval,
		Retention:    *jvmRetention,
		MaxProcesses: *jvmMaxProcesses,
		MaxAge:       *jvmMaxSampleAge,
	}
}

// The tracker's flags must not be zero values when the collector package is
// used without kingpin.Parse (tests): kingpin fills defaults only on Parse.
func init() {
	if *jvmSampleInterval == 0 && *jvmRetention == 0 && *jvmMaxProcesses == 0 {
		*jvmSampleInterval, *jvmRetention, *jvmMaxProcesses = 5*time.Second, 10*time.Minute, 200
	}
}
