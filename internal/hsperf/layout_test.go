package hsperf

import (
	"reflect"
	"testing"
)

func TestMaxMetaspaceSize(t *testing.T) {
	tests := []struct {
		args, flags string
		want        uint64
	}{
		{"-Xmx64m", "", 0},
		{"-XX:MaxMetaspaceSize=128m", "", 128 * mib},
		{"-XX:MaxMetaspaceSize=1g -XX:MaxMetaspaceSize=256M", "", 256 * mib},
		{"-XX:MaxMetaspaceSize=1048576", "", mib},
		{"-XX:MaxMetaspaceSize=12x", "", 0},
		{"-XX:MaxMetaspaceSize=99999999999t", "", 0},
		{"-XX:MaxMetaspaceSize=64k", "-XX:MaxMetaspaceSize=1g", 64 << 10},
	}
	for _, tt := range tests {
		if got := maxMetaspaceSize(tt.args, tt.flags); got != tt.want {
			t.Errorf("maxMetaspaceSize(%q, %q) = %d, want %d", tt.args, tt.flags, got, tt.want)
		}
	}
}

// Layouts that JDK 17 cannot produce, built from the counters HotSpot
// writes for them (zServiceability.cpp in JDK 21 for generational ZGC).
func TestStatsSyntheticLayouts(t *testing.T) {
	long := func(name string, v int64) testEntry { return testEntry{name: name, typ: TypeLong, long: v} }
	str := func(name, v string) testEntry { return testEntry{name: name, typ: TypeByte, bytes: v} }
	common := []testEntry{long("sun.os.hrt.frequency", 1e9)}
	tests := []struct {
		name      string
		entries   []testEntry
		gcName    string
		pools     []Pool
		heapMax   uint64
		collector []GC
	}{
		{
			name: "generational ZGC",
			entries: []testEntry{
				str("sun.gc.collector.0.name", "ZGC minor collection pauses"),
				long("sun.gc.collector.0.invocations", 7),
				long("sun.gc.collector.0.time", 5e8),
				str("sun.gc.collector.2.name", "ZGC major collection pauses"),
				long("sun.gc.collector.2.invocations", 2),
				str("sun.gc.generation.0.name", "young"),
				long("sun.gc.generation.0.maxCapacity", xmx),
				str("sun.gc.generation.0.space.0.name", "space"),
				long("sun.gc.generation.0.space.0.used", 3*mib),
				long("sun.gc.generation.0.space.0.capacity", 10*mib),
				long("sun.gc.generation.0.space.0.maxCapacity", xmx),
				str("sun.gc.generation.1.name", "old"),
				long("sun.gc.generation.1.maxCapacity", xmx),
				str("sun.gc.generation.1.space.0.name", "space"),
				long("sun.gc.generation.1.space.0.used", 20*mib),
				long("sun.gc.generation.1.space.0.capacity", 20*mib),
				long("sun.gc.generation.1.space.0.maxCapacity", xmx),
			},
			gcName: "Generational ZGC",
			pools: []Pool{
				{"ZGC Young Generation", AreaHeap, 3 * mib, 10 * mib, xmx},
				{"ZGC Old Generation", AreaHeap, 20 * mib, 20 * mib, xmx},
			},
			heapMax: xmx, // not 2 * xmx
			collector: []GC{
				{"ZGC minor collection pauses", 7, 0.5, 0, 0},
				{"ZGC major collection pauses", 2, 0, 0, 0},
			},
		},
		{
			name: "unknown collector keeps the counters' names",
			entries: []testEntry{
				str("sun.gc.policy.name", "Mystery"),
				str("sun.gc.generation.0.name", "new"),
				long("sun.gc.generation.0.maxCapacity", 8*mib),
				str("sun.gc.generation.0.space.0.name", "eden"),
				long("sun.gc.generation.0.space.0.used", mib),
				long("sun.gc.generation.0.space.0.capacity", 2*mib),
				long("sun.gc.generation.0.space.0.maxCapacity", 8*mib),
				long("sun.gc.generation.1.maxCapacity", 16*mib),
				long("sun.gc.generation.1.space.0.used", mib),
				long("sun.gc.generation.1.space.0.capacity", 4*mib),
				long("sun.gc.generation.1.space.0.maxCapacity", 16*mib),
				long("sun.gc.generation.9.space.0.used", mib), // beyond the bounds: ignored
				long("sun.gc.generation.1.space.12345678901234567890.used", mib),
			},
			gcName: "Mystery",
			pools: []Pool{
				{"new eden", AreaHeap, mib, 2 * mib, 8 * mib},
				{"generation 1 space 0", AreaHeap, mib, 4 * mib, 16 * mib},
			},
			heapMax: 24 * mib,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := mustParse(t, encode(binaryLE, append(common, tt.entries...))).Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st.GCName != tt.gcName || st.HeapMax != tt.heapMax {
				t.Errorf("GCName %q HeapMax %d, want %q %d", st.GCName, st.HeapMax, tt.gcName, tt.heapMax)
			}
			if !reflect.DeepEqual(st.Pools, tt.pools) {
				t.Errorf("Pools = %+v, want %+v", st.Pools, tt.pools)
			}
			if !reflect.DeepEqual(st.GCs, tt.collector) {
				t.Errorf("GCs = %+v, want %+v", st.GCs, tt.collector)
			}
		})
	}
}
