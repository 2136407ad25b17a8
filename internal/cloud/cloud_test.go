package cloud

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCloudCleanValue(t *testing.T) {
	long := strings.Repeat("x", 5000)
	// 127 ASCII bytes then a 3-byte rune: the cut must not split it.
	straddle := strings.Repeat("a", 127) + "€"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "m5.xlarge", "m5.xlarge"},
		{"trimmed", "  m5.xlarge\n", "m5.xlarge"},
		{"invalid utf-8 replaced", "m5\xff\xfe.large", "m5\uFFFD.large"},
		{"capped", long, long[:MaxLabelValueBytes]},
		{"cut on a rune boundary", straddle, strings.Repeat("a", 127)},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CleanValue(tc.in)
			if got != tc.want {
				t.Errorf("CleanValue(%.40q) = %.40q, want %.40q", tc.in, got, tc.want)
			}
			if !utf8.ValidString(got) || len(got) > MaxLabelValueBytes {
				t.Errorf("CleanValue(%.40q) = %.40q: invalid or too long", tc.in, got)
			}
		})
	}
}

func TestCloudNormalizeLifecycle(t *testing.T) {
	for in, want := range map[string]string{
		"spot":           LifecycleSpot,     // AWS instance-life-cycle, Karpenter
		"SPOT":           LifecycleSpot,     // EKS capacityType, GCP provisioning-model
		"Spot":           LifecycleSpot,     // Azure priority
		"Low":            LifecycleSpot,     // Azure low-priority scale sets
		"preemptible":    LifecycleSpot,     // GKE provisioning
		"true":           LifecycleSpot,     // gke-spot, gke-preemptible
		"on-demand":      LifecycleOnDemand, // AWS, Karpenter
		"ON_DEMAND":      LifecycleOnDemand, // EKS
		"Regular":        LifecycleOnDemand, // Azure
		"STANDARD":       LifecycleOnDemand, // GCP
		"scheduled":      LifecycleOnDemand, // AWS scheduled instances
		"CAPACITY_BLOCK": LifecycleOnDemand, // EKS capacity blocks
		"reserved":       LifecycleOnDemand, // Karpenter reserved capacity
		"":               LifecycleUnknown,  // Azure: empty means unknown
		"flex-start":     LifecycleUnknown,
	} {
		if got := NormalizeLifecycle(in); got != want {
			t.Errorf("NormalizeLifecycle(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCloudLastSegmentAndRegionFromZone(t *testing.T) {
	for _, tc := range []struct{ in, last, region string }{
		{"projects/123456789012/zones/europe-west1-b", "europe-west1-b", "europe-west1"},
		{"projects/1/machineTypes/n2-standard-8", "n2-standard-8", ""},
		{"eu-west-1a", "eu-west-1a", "eu-west-1"},
		{"us-east-1", "us-east-1", ""},
		{"", "", ""},
	} {
		last := lastSegment(tc.in)
		if last != tc.last {
			t.Errorf("lastSegment(%q) = %q, want %q", tc.in, last, tc.last)
		}
		if strings.Contains(tc.in, "machineTypes") {
			continue
		}
		if got := regionFromZone(last); got != tc.region {
			t.Errorf("regionFromZone(%q) = %q, want %q", last, got, tc.region)
		}
	}
}
