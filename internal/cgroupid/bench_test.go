package cgroupid

import "testing"

// Parse runs once per JVM per scrape.
func BenchmarkParse(b *testing.B) {
	const path = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f5c7d3e_8a1b_4c2d_9e6f_0123456789ab.slice/cri-containerd-3b4f8e2a6c1d9b7e5f0a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a6c8e0b1d.scope"
	b.ReportAllocs()
	for b.Loop() {
		if Parse(path).PodUID == "" {
			b.Fatal("no pod")
		}
	}
}
