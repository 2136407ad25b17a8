package nativemem

import "github.com/executor-exporter/executor_exporter/internal/hsperf"

// LayoutOf takes the JVM's reservations from its hsperfdata counters.
func LayoutOf(st *hsperf.Stats) Layout {
	l := Layout{HeapReserved: st.HeapMax}
	var meta, class uint64
	for i := range st.Pools {
		switch p := &st.Pools[i]; p.Name {
		case "Metaspace":
			meta = p.Committed
		case "Compressed Class Space":
			class = p.Committed
			l.ClassSpaceReserved = p.Max
		}
	}
	// Metaspace's committed figure includes the class space's.
	l.MetaspaceCommitted = meta - min(meta, class)
	return l
}
