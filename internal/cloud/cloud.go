// Package cloud finds out what machine the exporter runs on: the cloud
// provider (decided locally from DMI), the instance's type, lifecycle,
// region and zone (from that provider's metadata service and, on
// Kubernetes, from the Node's labels), and whether the cloud has announced
// that it will take the machine away (spot interruption, preemption).
//
// Nothing here is asked on the scrape path: a Refresher fetches in the
// background and hands out Snapshots of its cache.
package cloud

import (
	"strings"
	"time"
	"unicode"

	"github.com/executor-exporter/executor_exporter/internal/labelvalue"
)

// Provider names, as they appear in the provider label and in
// --cloud.provider.
const (
	ProviderAuto         = "auto"
	ProviderNone         = "none"
	ProviderAWS          = "aws"
	ProviderGCP          = "gcp"
	ProviderAzure        = "azure"
	ProviderOracle       = "oracle"
	ProviderAlibaba      = "alibaba"
	ProviderDigitalOcean = "digitalocean"
	ProviderHetzner      = "hetzner"
)

// Providers lists every value --cloud.provider accepts.
var Providers = []string{
	ProviderAuto, ProviderAWS, ProviderGCP, ProviderAzure, ProviderOracle,
	ProviderAlibaba, ProviderDigitalOcean, ProviderHetzner, ProviderNone,
}

// Lifecycle values. Every source's vocabulary (AWS "spot", Azure "Spot" /
// "Regular", GCP "SPOT" / "STANDARD", EKS "ON_DEMAND", …) is folded into
// these three so one PromQL matcher works on every cloud.
const (
	LifecycleOnDemand = "on-demand"
	LifecycleSpot     = "spot"
	LifecycleUnknown  = "unknown"
)

// Event kinds of the interruption notices, the event label.
const (
	// EventSpotInterruption is AWS's two-minute spot instance-action.
	EventSpotInterruption = "spot_interruption"
	// EventRebalanceRecommendation is AWS's early warning that a spot
	// instance is at elevated risk of interruption.
	EventRebalanceRecommendation = "rebalance_recommendation"
	// EventPreemption is GCP's preempted flag and Azure's Preempt event.
	EventPreemption = "preemption"
	// EventMaintenance is an Azure scheduled Reboot, Redeploy or Freeze.
	EventMaintenance = "maintenance"
	// EventTermination is an Azure scheduled Terminate (scale-in, delete).
	EventTermination = "termination"
)

// Sources of the facts, joined with "+" in the source label.
const (
	SourceIMDS       = "imds"
	SourceKubernetes = "kubernetes"
	SourceDMI        = "dmi"
	SourceFlag       = "flag"
	SourceNone       = "none"
)

// Instance is what is known about this machine. Empty strings mean
// unknown, except Lifecycle which is always one of the Lifecycle values.
type Instance struct {
	Provider     string
	Platform     string
	InstanceType string
	Lifecycle    string
	Region       string
	Zone         string
	InstanceID   string
	Node         string
	NodePool     string
	Source       string
}

// Notice is the state of one kind of interruption notice.
type Notice struct {
	Event   string
	Pending bool
	// Time is when the interruption will happen, zero when not announced.
	Time time.Time
}

// MaxLabelValueBytes caps every value taken from a metadata service or a
// node label: they end up as label values, and a hostile or broken
// service must not be able to blow up the exporter's memory or series size.
const MaxLabelValueBytes = labelvalue.MaxBytes

// CleanValue makes s safe to use as a label value: valid UTF-8, no
// surrounding white space, at most MaxLabelValueBytes bytes, cut on a rune
// boundary.
func CleanValue(s string) string {
	// Trim again after the cut: it can end on a space inside the value.
	return strings.TrimRightFunc(labelvalue.Cap(strings.TrimSpace(s), MaxLabelValueBytes), unicode.IsSpace)
}

// clean applies CleanValue to every field.
func (i Instance) clean() Instance {
	for _, f := range []*string{&i.Provider, &i.Platform, &i.InstanceType, &i.Lifecycle,
		&i.Region, &i.Zone, &i.InstanceID, &i.Node, &i.NodePool, &i.Source} {
		*f = CleanValue(*f)
	}
	if i.Lifecycle == "" {
		i.Lifecycle = LifecycleUnknown
	}
	return i
}

// NormalizeLifecycle folds one source's word for how the machine was bought
// into on-demand, spot or unknown.
func NormalizeLifecycle(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "spot", "preemptible", "true",
		// Azure's low-priority scale sets were the forerunner of Spot and
		// are evicted the same way.
		"low":
		return LifecycleSpot
	case "on-demand", "on_demand", "ondemand", "regular", "standard", "false",
		// Paid-for capacity that the cloud will not reclaim early: AWS
		// scheduled instances, capacity blocks and Karpenter's reserved
		// capacity type.
		"scheduled", "capacity-block", "capacity_block", "reserved":
		return LifecycleOnDemand
	}
	return LifecycleUnknown
}

// lastSegment returns what follows the last "/" of a GCP resource path
// ("projects/1234/zones/europe-west1-b" → "europe-west1-b").
func lastSegment(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// regionFromZone derives a region from a zone name of the form
// <region>-<letter> (GCP "europe-west1-b") or <region><letter> (AWS
// "eu-west-1a"); it returns "" when the zone has neither form.
func regionFromZone(zone string) string {
	n := len(zone)
	if n < 3 {
		return ""
	}
	last := zone[n-1]
	if last < 'a' || last > 'z' {
		return ""
	}
	if zone[n-2] == '-' {
		return zone[:n-2]
	}
	if zone[n-2] >= '0' && zone[n-2] <= '9' {
		return zone[:n-1]
	}
	return ""
}
