package collector

import (
	"slices"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/executor-exporter/executor_exporter/internal/cgroupid"
	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/exposition"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
)

var (
	kubernetesPodMetadata = kingpin.Flag("kubernetes.pod-metadata",
		"List this node's pods (with --kubernetes.node-name; needs list on pods) to name each JVM's namespace, pod and container.").
		Default("true").Bool()
	kubernetesPodLabels = kingpin.Flag("kubernetes.pod-labels",
		"Comma-separated pod labels to add to executor_jvm_info as label_<name> (kube-state-metrics naming), * for all.").
		Default("").String()
	kubernetesPodsRefreshInterval = kingpin.Flag("kubernetes.pods-refresh-interval",
		"Longest time between two lists of this node's pods; a JVM in a pod or container not listed yet causes a list within 5s.").
		Default("5m").Duration()
)

// podsMinInterval spaces the lists a burst of new executors causes.
const podsMinInterval = 5 * time.Second

// podsConfigFromFlags is the pod lister's configuration from the
// --kubernetes.pod* flags.
func podsConfigFromFlags() cloud.PodsConfig {
	return cloud.PodsConfig{
		Enabled:         *kubernetesPodMetadata,
		LabelAllowlist:  splitList(*kubernetesPodLabels),
		RefreshInterval: *kubernetesPodsRefreshInterval,
		MinInterval:     podsMinInterval,
	}
}

// podSource is what the jvm, oom and exits collectors ask about pods: the
// cloud refresher (Dependencies.Pods).
type podSource interface {
	Pods() cloud.PodsSnapshot
	WantPod(uid, containerID string)
}

// podIdentity is a JVM as Kubernetes (or YARN) knows it; empty fields are
// unknown.
type podIdentity struct {
	namespace, pod, container string
	uid, containerID          string
	labels                    map[string]string // allowlisted pod labels, Kubernetes names
}

// resolvePod names the workload of a JVM from its cgroup path and the last
// pod list: map lookups, never a request. A pod or container the list
// lacks is asked for, and the next list (in the background) has it.
func resolvePod(j *jvm.JVM, snap cloud.PodsSnapshot, src podSource, allowlist []string) podIdentity {
	// The environment's pod name (SPARK_EXECUTOR_POD_NAME) stands when
	// the API has nothing to say.
	out := podIdentity{pod: j.Pod}
	if j.CgroupPath == "" {
		return out
	}
	id := cgroupid.Parse(j.CgroupPath)
	if id.YARNContainer != "" {
		out.container = id.YARNContainer
		return out
	}
	if id.PodUID == "" {
		return out
	}
	out.uid, out.containerID = id.PodUID, id.QualifiedContainerID()
	p, ok := snap.Index.Pod(id.PodUID)
	c, cok := cloud.Container{}, false
	if ok {
		c, cok = p.Containers[id.ContainerID]
	}
	if src != nil && (!ok || !cok && id.ContainerID != "") {
		src.WantPod(id.PodUID, id.ContainerID)
	}
	if !ok {
		return out
	}
	out.namespace, out.pod, out.labels = p.Namespace, p.Name, p.Labels
	if cok {
		out.container, out.containerID = c.Name, c.ID
	}
	if len(allowlist) > 0 && !slices.Contains(allowlist, "*") {
		// Every allowlisted name on every JVM, empty when the pod lacks
		// it, so the info series of one exporter share their label names.
		labels := make(map[string]string, len(allowlist))
		for _, name := range allowlist {
			labels[name] = p.Labels[name]
		}
		out.labels = labels
	}
	return out
}

// infoLabels are executor_jvm_info's labels after the identity; the pod
// labels (label_<name>) follow them.
var infoLabels = []string{"main_class", "jvm_version", "gc", "vm_args_xmx", "pod", "namespace", "container", "uid", "container_id", "counters"}

const jvmInfoHelp = "A JVM on this machine; descriptive labels from hsperfdata and the command line, and the Kubernetes namespace, pod, container and allowlisted pod labels (or the YARN container) from its cgroup and the API server; counters is hsperfdata, or why the JVM publishes no counters."

// sendInfo adds executor_jvm_info, with the pod's labels the allowlist
// takes after the fixed ones.
func (c *jvmCollector) sendInfo(b exposition.Sink, j *jvm.JVM, p podIdentity) {
	s := &j.Stats
	values := []string{labelValue(j.MainClass), labelValue(s.VMVersion), labelValue(s.GCName),
		labelValue(j.Xmx), labelValue(p.pod), labelValue(p.namespace), labelValue(p.container), labelValue(p.uid), labelValue(p.containerID),
		j.Counters}
	var names []string
	if len(p.labels) > 0 {
		var podValues []string
		names, podValues = cloud.NodeLabelPairs(p.labels)
		values = append(values, podValues...)
	}
	b.Add(c.info.WithLabels(names...), 1, values...) // dropped if a pod label cannot be a label; NodeLabelPairs prevents it
}

// podOfCgroup names, as label values, the namespace, pod and container of
// a cgroup path from src's last pod list (nil src: none), asking for no
// new list: a kill's or exit's series keep them after the JVM is gone.
func podOfCgroup(path string, src podSource) (namespace, pod, container string) {
	p := resolvePod(&jvm.JVM{Sample: jvm.Sample{CgroupPath: path}}, podsOf(src), nil, nil)
	return labelValue(p.namespace), labelValue(p.pod), labelValue(p.container)
}

// podsOf is src's last pod list; none for nil src.
func podsOf(src podSource) cloud.PodsSnapshot {
	if src == nil {
		return cloud.PodsSnapshot{}
	}
	return src.Pods()
}
