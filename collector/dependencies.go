package collector

import (
	"fmt"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/yarn"
)

// Dependencies are what several collectors share, each built on first use
// whatever the factories' order, and stopped after the collectors.
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

// JVMTracker returns the one JVM tracker, started. Factories run one at a
// time, so this needs no lock.
func (d *Dependencies) JVMTracker() (*jvm.Tracker, error) {
	if !d.trackerBuilt {
		d.trackerBuilt = true
		cfg := d.trackerConfig
		src, _ := d.YARN() // its errors are the yarn collector's to report
		if src != nil && cfg.YARN == nil {
			cfg.YARN = src
		}
		d.tracker, d.trackerErr = jvm.NewTracker(cfg, log.With(d.logger, "component", "jvm_tracker"))
		if d.trackerErr != nil {
			d.trackerErr = fmt.Errorf("cannot track JVMs: %w", d.trackerErr)
		} else {
			if src != nil {
				d.tracker.OnScan(paceYARN(src))
			}
			d.tracker.Start()
		}
	}
	return d.tracker, d.trackerErr
}

// cloudRefresher returns the one cloud refresher, started: the cloud
// collector's cache and the pod list that names JVMs.
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

// Pods returns the list of this node's pods that names JVMs; nil when pods
// are not listed (no --kubernetes.node-name or API server,
// --no-kubernetes.pod-metadata, or --no-collector.cloud).
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

// YARN returns the one YARN source, started; nil when this is no YARN
// node or with --no-collector.yarn.
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
