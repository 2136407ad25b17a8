package cloud

import "testing"

func TestCloudMergeInstance(t *testing.T) {
	dmi := Instance{Provider: ProviderAWS, InstanceType: "m5.xlarge", Lifecycle: LifecycleUnknown}
	imds := &Instance{Provider: ProviderAWS, InstanceType: "m5.xlarge", Lifecycle: LifecycleUnknown,
		Region: "eu-west-1", Zone: "eu-west-1a", InstanceID: "i-1"}
	node := &Instance{Provider: ProviderAWS, Platform: "eks", InstanceType: "m5.2xlarge", Lifecycle: LifecycleSpot,
		Region: "eu-west-1", Zone: "eu-west-1b", Node: "n1", NodePool: "pool"}
	for _, tc := range []struct {
		name       string
		imds, node *Instance
		base       string
		want       Instance
	}{
		{"dmi only", nil, nil, SourceDMI,
			Instance{Provider: ProviderAWS, Platform: "vm", InstanceType: "m5.xlarge", Lifecycle: LifecycleUnknown, Source: SourceDMI}},
		{"imds only", imds, nil, SourceDMI,
			Instance{Provider: ProviderAWS, Platform: "vm", InstanceType: "m5.xlarge", Lifecycle: LifecycleUnknown,
				Region: "eu-west-1", Zone: "eu-west-1a", InstanceID: "i-1", Source: SourceIMDS}},
		{"kubernetes only", nil, node, SourceFlag,
			Instance{Provider: ProviderAWS, Platform: "eks", InstanceType: "m5.2xlarge", Lifecycle: LifecycleSpot,
				Region: "eu-west-1", Zone: "eu-west-1b", Node: "n1", NodePool: "pool", Source: SourceKubernetes}},
		// IMDS speaks for the machine where both answer; an unknown
		// lifecycle from IMDS does not hide the labels' spot.
		{"both", imds, node, SourceDMI,
			Instance{Provider: ProviderAWS, Platform: "eks", InstanceType: "m5.xlarge", Lifecycle: LifecycleSpot,
				Region: "eu-west-1", Zone: "eu-west-1a", InstanceID: "i-1", Node: "n1", NodePool: "pool", Source: "imds+kubernetes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergeInstance(dmi, tc.imds, tc.node, tc.base); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
