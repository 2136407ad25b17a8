package nativemem

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkBreakdown is what a breakdown costs past the kernel's writing
// of smaps: parsing and classifying a real G1 executor's 200-thread smaps
// (go test -run '^$' -bench Breakdown -benchmem ./internal/nativemem/).
func BenchmarkBreakdown(b *testing.B) {
	data, err := os.ReadFile("testdata/g1-200threads.smaps")
	if err != nil {
		b.Fatal(err)
	}
	l := Layout{HeapReserved: 512 << 20, ClassSpaceReserved: 1 << 30}
	var r SmapsReader
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		ms, err := r.Read(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		_ = Classify(ms, l)
	}
}
