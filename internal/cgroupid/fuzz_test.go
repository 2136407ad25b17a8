package cgroupid

import (
	"strings"
	"testing"
)

// Whatever the path, Parse returns ids that are parts of it (the UID up to
// systemd's "_" for "-") in the forms the kubelet, the runtimes and YARN
// write, and a container only inside a pod.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"/kubepods/burstable/pod0f5c7d3e-8a1b-4c2d-9e6f-0123456789ab/3b4f8e2a6c1d9b7e5f0a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a6c8e0b1d",
		"/kubepods.slice/kubepods-pod11111111_2222_4333_8444_555555555555.slice/crio-ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff.scope/container",
		"/system.slice/containerd.service/kubepods-burstable-pod0f5c7d3e_8a1b_4c2d_9e6f_0123456789ab.slice:cri-containerd:3b4f8e2a6c1d9b7e5f0a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a6c8e0b1d",
		"/hadoop-yarn/container_e17_1700000000000_0042_02_000117",
		"/kubepods/pod5c8d2f0e9b7a4c6d1e3f5a7b9c0d2e4f",
		"", "/", "//", "-pod.slice", "kubepods-pod.slice:a:b", "container__1_2_3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		id := Parse(path)
		if id.PodUID != "" {
			if !isPodUID(id.PodUID) {
				t.Fatalf("%q: pod UID %q", path, id.PodUID)
			}
			if !strings.Contains(path, id.PodUID) && !strings.Contains(path, strings.ReplaceAll(id.PodUID, "-", "_")) {
				t.Fatalf("%q: pod UID %q is not in the path", path, id.PodUID)
			}
			switch id.QoS {
			case QoSGuaranteed, QoSBurstable, QoSBestEffort:
			default:
				t.Fatalf("%q: QoS %q", path, id.QoS)
			}
			if id.YARNContainer != "" {
				t.Fatalf("%q: both a pod and a YARN container", path)
			}
		} else if id.ContainerID != "" || id.QoS != "" || id.Runtime != "" {
			t.Fatalf("%q: a container without a pod: %+v", path, id)
		}
		if id.ContainerID != "" && (!isContainerID(id.ContainerID) || !strings.Contains(path, id.ContainerID)) {
			t.Fatalf("%q: container ID %q", path, id.ContainerID)
		}
		if id.Runtime != "" && id.ContainerID == "" {
			t.Fatalf("%q: a runtime without a container", path)
		}
		if id.YARNContainer != "" && (!IsYARNContainer(id.YARNContainer) || !strings.Contains(path, id.YARNContainer)) {
			t.Fatalf("%q: YARN container %q", path, id.YARNContainer)
		}
	})
}
