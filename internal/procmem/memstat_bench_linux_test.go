package procmem

import (
	"os"
	"syscall"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// BenchmarkParseMemoryStat is the parse of each scan's memory.stat: the
// whole breakdown, against the working set's key alone as it was read
// before (parseKeyedUint).
func BenchmarkParseMemoryStat(b *testing.B) {
	for _, fx := range []struct {
		name, file string
		v2         bool
	}{
		{"v1-real", "testdata/cgroupv1/sys/fs/cgroup/memory/capture-executor/memory.stat", false},
		{"v2-6.8", "testdata/cgroupv2/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2.slice/cri-containerd-def.scope/memory.stat", true},
		{"v2-5.15", "testdata/cgroupv2/sys/fs/cgroup/system.slice/spark-worker.service/app-1-exec-2/memory.stat", true},
	} {
		data, err := os.ReadFile(fx.file)
		if err != nil {
			b.Fatal(err)
		}
		key := "total_inactive_file"
		if fx.v2 {
			key = "inactive_file"
		}
		b.Run(fx.name+"/inactive-only", func(b *testing.B) {
			b.ReportAllocs()
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for b.Loop() {
				if _, found, err := parseKeyedUint(data, key); !found || err != nil {
					b.Fatal(found, err)
				}
			}
			reportCPU()
		})
		b.Run(fx.name+"/breakdown", func(b *testing.B) {
			b.ReportAllocs()
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for b.Loop() {
				if s, err := parseMemoryStat(data, fx.v2); !s.hasAnon || err != nil {
					b.Fatal(s, err)
				}
			}
			reportCPU()
		})
	}
}
