package collector

import (
	"maps"

	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

// appNames names Spark applications from their ids: *yarn.Source, which
// asks the ResourceManager in the background.
type appNames interface {
	AppName(appID string) (string, bool)
}

// yarnAppNameLabel is the pod label Spark on Kubernetes puts its
// application's name in; a YARN executor's info series carries the
// ResourceManager's name under the same label (label_spark_app_name), so
// that right-sizing joins the runs of one application on YARN as on
// Kubernetes.
const yarnAppNameLabel = "spark-app-name"

// withYARN completes a JVM's identity from YARN: its container, when its
// cgroup path did not name one, and its application's name, when the
// ResourceManager gave one.
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
		labels := maps.Clone(p.labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[yarnAppNameLabel] = name
		p.labels = labels
	}
	return p
}
