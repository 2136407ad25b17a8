package statuspage

import (
	"io"
	"syscall"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// BenchmarkRender100JVMs renders the page of a node with 100 executors and
// 20 kills, the whole cost of a request for / besides assembling the
// snapshot. docs/status-page.md has the figure.
func BenchmarkRender100JVMs(b *testing.B) {
	s := manyJVMs(100)
	b.ReportAllocs()
	defer testenv.CPUPerOp(b, syscall.RUSAGE_SELF)()
	for b.Loop() {
		if err := Render(io.Discard, &s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSON100JVMs(b *testing.B) {
	s := manyJVMs(100)
	b.ReportAllocs()
	defer testenv.CPUPerOp(b, syscall.RUSAGE_SELF)()
	for b.Loop() {
		if err := WriteJSON(io.Discard, &s); err != nil {
			b.Fatal(err)
		}
	}
}
