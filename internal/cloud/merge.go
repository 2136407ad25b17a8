package cloud

// mergeInstance lays the sources over each other: DMI, then the Node's
// labels, then the metadata service, which speaks for the machine itself
// and so wins where both answer. Node, node pool and platform come from
// Kubernetes, or else from the metadata service where it names a managed
// Hadoop cluster's node (Dataproc).
func mergeInstance(dmi Instance, imds, node *Instance, baseSource string) Instance {
	out := dmi
	var sources []string
	overlay := func(from Instance) {
		for _, f := range []struct {
			dst *string
			src string
		}{
			{&out.Provider, from.Provider}, {&out.InstanceType, from.InstanceType},
			{&out.Region, from.Region}, {&out.Zone, from.Zone}, {&out.InstanceID, from.InstanceID},
		} {
			if f.src != "" {
				*f.dst = f.src
			}
		}
		if from.Lifecycle != "" && from.Lifecycle != LifecycleUnknown {
			out.Lifecycle = from.Lifecycle
		}
	}
	if imds != nil {
		sources = append(sources, SourceIMDS)
	}
	if node != nil {
		overlay(*node)
		out.Node, out.NodePool, out.Platform = node.Node, node.NodePool, node.Platform
		sources = append(sources, SourceKubernetes)
	}
	if imds != nil {
		overlay(*imds)
		if node == nil && imds.NodePool != "" {
			out.NodePool, out.Platform = imds.NodePool, imds.Platform
		}
	}
	if out.Platform == "" && out.Provider != ProviderNone && out.Provider != "" {
		out.Platform = "vm"
	}
	out.Source = baseSource
	if len(sources) > 0 {
		out.Source = sources[0]
		if len(sources) == 2 {
			out.Source = sources[0] + "+" + sources[1]
		}
	}
	return out
}
