package collector

import (
	"maps"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/exits"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// appNames names Spark applications from their ids: *yarn.Source, which
// asks the ResourceManager in the background.
type appNames interface {
	AppName(appID string) (string, bool)
}

// yarnAppNameLabel is the pod label Spark on Kubernetes puts its
// application's name in; a YARN executor's info series carries the
// ResourceManager's name under it, so right-sizing joins runs alike.
const yarnAppNameLabel = "spark-app-name"

// withYARN completes a JVM's identity from YARN: its container and its
// application's name, when the cgroup path and ResourceManager give them.
func withYARN(p podIdentity, j *jvm.JVM, apps appNames) podIdentity {
	if j.YARNContainer == "" {
		return p
	}
	if p.container == "" {
		p.container = j.YARNContainer
	}
	if apps == nil || j.AppID == "" {
		return p
	}
	if name, ok := apps.AppName(j.AppID); ok && name != "" {
		p.labels = maps.Clone(p.labels) // the pod list's map is shared
		if p.labels == nil {
			p.labels = map[string]string{}
		}
		p.labels[yarnAppNameLabel] = name
	}
	return p
}

// yarnHurryFor is how long the NodeManager is polled often after a scan
// found a YARN container near its allocation: past the reading after, and
// past the few seconds the NodeManager lists a container it killed.
const yarnHurryFor = 30 * time.Second

// paceYARN is the one place that sets how often the YARN source polls the
// NodeManager, from each scan of the tracker
// (docs/design.md#the-jvm-tracker, "YARN's word").
func paceYARN(src interface{ Hurry(until time.Time) }) func(time.Time, jvm.View, []jvm.Exit) {
	return func(now time.Time, view jvm.View, gone []jvm.Exit) {
		var until time.Time
		for i := range view.JVMs {
			if view.JVMs[i].NearAllocation {
				until = now.Add(yarnHurryFor)
				break
			}
		}
		for _, e := range gone {
			if wait := now.Add(exits.DefaultConfig.YARNWait); e.Last.YARNContainer != "" && wait.After(until) {
				until = wait
			}
		}
		if !until.IsZero() {
			src.Hurry(until)
		}
	}
}
