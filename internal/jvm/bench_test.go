package jvm

import "testing"

// BenchmarkFindCandidates is the discovery pass over this machine's /proc.
func BenchmarkFindCandidates(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := FindCandidates("/proc"); err != nil {
			b.Fatal(err)
		}
	}
}
