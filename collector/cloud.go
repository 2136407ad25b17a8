package collector

import (
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
)

var (
	cloudProvider = kingpin.Flag("cloud.provider", "Cloud provider: auto (detect from DMI), "+strings.Join(cloud.Providers[1:], ", ")+" (none disables metadata lookups).").
			Default(cloud.ProviderAuto).Enum(cloud.Providers...)
	cloudAWSMetadataURL = kingpin.Flag("cloud.aws.metadata-url", "AWS instance metadata service (IMDS) base URL.").
				Default("http://169.254.169.254").String()
	cloudGCPMetadataURL = kingpin.Flag("cloud.gcp.metadata-url", "GCP metadata server base URL.").
				Default("http://metadata.google.internal").String()
	cloudAzureMetadataURL = kingpin.Flag("cloud.azure.metadata-url", "Azure instance metadata service (IMDS) base URL.").
				Default("http://169.254.169.254").String()
	cloudTimeout = kingpin.Flag("cloud.timeout", "Timeout of each metadata or Kubernetes API request.").
			Default("2s").Duration()
	cloudRefreshInterval = kingpin.Flag("cloud.refresh-interval", "How often instance metadata and node labels are fetched again; scrapes only read the cache.").
				Default("1h").Duration()
	cloudPollInterval = kingpin.Flag("cloud.interruption-poll-interval", "How often spot interruption / preemption notices are polled (AWS recommends 5s); 0 disables.").
				Default("5s").Duration()
	cloudKubernetesNodeName = kingpin.Flag("kubernetes.node-name", "Kubernetes node this exporter runs on; enables node-label lookup (set it from spec.nodeName with the downward API).").
				Envar("NODE_NAME").PlaceHolder("NAME").String()
	cloudKubernetesNodeLabels = kingpin.Flag("kubernetes.node-labels", "Comma-separated node labels to export as executor_node_labels, * for all.").
					Default("").String()
	cloudKubernetesAPIURL = kingpin.Flag("kubernetes.api-url", "Kubernetes API server URL; empty means in-cluster (KUBERNETES_SERVICE_HOST/PORT, service-account token and CA).").
				Default("").String()
)

func init() {
	registerCollector("cloud", true, func(logger log.Logger, deps *Dependencies) (Collector, error) {
		r, err := deps.cloudRefresher()
		if err != nil {
			return nil, err
		}
		// An executor that ends while a notice is pending was interrupted.
		deps.witness().WatchNotices(pendingInterruptions(r))
		return NewCloudCollector(r), nil
	})
}

// interruptingEvents are the notices after which the cloud takes the
// machine: a rebalance recommendation is only advice, and a maintenance
// reboot ends the exporter too, so it never sees the JVMs go.
var interruptingEvents = []string{cloud.EventSpotInterruption, cloud.EventPreemption, cloud.EventTermination}

// pendingInterruptions lists the interrupting notices r holds as pending.
func pendingInterruptions(r *cloud.Refresher) func() []string {
	return func() []string {
		var events []string
		for _, n := range r.Snapshot().Notices {
			if n.Pending && slices.Contains(interruptingEvents, n.Event) {
				events = append(events, n.Event)
			}
		}
		return events
	}
}

// cloudConfigFromFlags is the refresher's configuration from the --cloud.*,
// --kubernetes.* and --path.sysfs flags.
func cloudConfigFromFlags() cloud.Config {
	return cloud.Config{
		Provider:         *cloudProvider,
		SysFS:            FlagPaths().SysFS,
		AWSMetadataURL:   *cloudAWSMetadataURL,
		GCPMetadataURL:   *cloudGCPMetadataURL,
		AzureMetadataURL: *cloudAzureMetadataURL,
		Timeout:          *cloudTimeout,
		RefreshInterval:  *cloudRefreshInterval,
		PollInterval:     *cloudPollInterval,
		Kubernetes: cloud.KubernetesConfig{
			NodeName:       *cloudKubernetesNodeName,
			APIURL:         *cloudKubernetesAPIURL,
			TokenFile:      cloud.DefaultKubernetesTokenFile,
			CAFile:         cloud.DefaultKubernetesCAFile,
			LabelAllowlist: splitList(*cloudKubernetesNodeLabels),
			Pods:           podsConfigFromFlags(),
		},
	}
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// cloudCollector exports what the Refresher has cached. Update never
// touches the network: metadata services can hang for the full timeout,
// and a scrape must not.
type cloudCollector struct {
	refresher *cloud.Refresher

	info, pending, pendingTime, refreshSuccess, lastRefresh *prometheus.Desc
	podListSuccess                                          *prometheus.Desc
}

// NewCloudCollector returns a collector that reads r's cache; whoever
// built r starts and stops it (other collectors read its pod list).
func NewCloudCollector(r *cloud.Refresher) Collector {
	return &cloudCollector{
		refresher: r,
		info: newDesc("instance", "info",
			"What machine this is: cloud provider, instance type, lifecycle (on-demand, spot, unknown), placement and Kubernetes node; source says where the facts came from.",
			"provider", "platform", "instance_type", "lifecycle", "region", "zone", "instance_id", "node", "node_pool", "source"),
		pending: newDesc("instance", "interruption_pending",
			"1 while the cloud announces that it will interrupt this instance (spot interruption, rebalance recommendation, preemption, scheduled event), 0 otherwise.",
			"event"),
		pendingTime: newDesc("instance", "interruption_timestamp_seconds",
			"When the announced interruption will happen, as a Unix time, if the cloud said.", "event"),
		refreshSuccess: newDesc("metadata", "refresh_success",
			"Whether the last refresh of instance metadata and node labels got an answer from every source asked."),
		lastRefresh: newDesc("metadata", "last_refresh_timestamp_seconds",
			"When instance metadata and node labels were last refreshed successfully, as a Unix time."),
		podListSuccess: newDesc("kubernetes", "pod_list_success",
			"Whether the last list of this node's pods (namespace, pod and container of each JVM) succeeded; absent when pods are not listed."),
	}
}

func (c *cloudCollector) Update(ch chan<- prometheus.Metric) error {
	snap := c.refresher.Snapshot()
	if !snap.Refreshed {
		// Start-up detection is still running in the background.
		return ErrNoData
	}
	i := snap.Instance
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1,
		i.Provider, i.Platform, i.InstanceType, i.Lifecycle, i.Region, i.Zone, i.InstanceID, i.Node, i.NodePool, i.Source)

	ch <- prometheus.MustNewConstMetric(c.refreshSuccess, prometheus.GaugeValue, boolToFloat(snap.RefreshSuccess))
	if pods := c.refresher.Pods(); !pods.LastAttempt.IsZero() {
		ch <- prometheus.MustNewConstMetric(c.podListSuccess, prometheus.GaugeValue, boolToFloat(pods.Success))
	}
	if !snap.LastSuccess.IsZero() {
		ch <- prometheus.MustNewConstMetric(c.lastRefresh, prometheus.GaugeValue, unixSeconds(snap.LastSuccess))
	}
	for _, n := range snap.Notices {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, boolToFloat(n.Pending), n.Event)
		if n.Pending && !n.Time.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.pendingTime, prometheus.GaugeValue, unixSeconds(n.Time), n.Event)
		}
	}
	if len(snap.NodeLabels) > 0 {
		// The label names vary with the allowlist, so the Desc is built
		// per scrape, as kube-state-metrics does for kube_node_labels.
		names, values := cloud.NodeLabelPairs(snap.NodeLabels)
		desc := prometheus.NewDesc(prometheus.BuildFQName(namespace, "node", "labels"),
			"Allowlisted Kubernetes labels of this node (--kubernetes.node-labels), named as kube-state-metrics names them.",
			names, nil)
		m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, 1, values...)
		if err != nil {
			return err
		}
		ch <- m
	}
	return nil
}

func boolToFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
