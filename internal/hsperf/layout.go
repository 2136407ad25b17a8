package hsperf

import (
	"strconv"
	"strings"
)

// layout says how a collector lays its heap out in the counters and what
// the JVM's MemoryPoolMXBeans call each space.
type layout struct {
	gcName string
	// pools maps "generation/space" names (sun.gc.generation.N.name and
	// sun.gc.generation.N.space.M.name) to pool names.
	pools map[string]string
	// generationsShareHeap: every generation reports the whole heap as its
	// maximum, so the heap maximum is the largest, not the sum.
	generationsShareHeap bool
	// unboundedYoung: young pools have no maximum of their own (G1).
	unboundedYoung bool
	// padded: capacities carry G1's padding (see unpad).
	padded bool
	young  map[string]bool
}

var (
	layoutG1 = layout{
		gcName: "G1",
		pools: map[string]string{
			"young/eden": "G1 Eden Space",
			"young/s0":   "G1 Survivor Space",
			"young/s1":   "G1 Survivor Space",
			"old/space":  "G1 Old Gen",
		},
		generationsShareHeap: true,
		unboundedYoung:       true,
		padded:               true,
		young:                map[string]bool{"G1 Eden Space": true, "G1 Survivor Space": true},
	}
	layoutParallel = layout{
		gcName: "Parallel",
		pools: map[string]string{
			"new/eden": "PS Eden Space",
			"new/s0":   "PS Survivor Space",
			"new/s1":   "PS Survivor Space",
			"old/old":  "PS Old Gen",
		},
	}
	layoutSerial = layout{
		gcName: "Serial",
		pools: map[string]string{
			"new/eden": "Eden Space",
			"new/s0":   "Survivor Space",
			"new/s1":   "Survivor Space",
			"old/old":  "Tenured Gen",
		},
	}
	// CMS (JDK 8 to 13) and ParNew, in case an old JVM shares the host.
	layoutCMS = layout{
		gcName: "CMS",
		pools: map[string]string{
			"new/eden": "Par Eden Space",
			"new/s0":   "Par Survivor Space",
			"new/s1":   "Par Survivor Space",
			"old/cms":  "CMS Old Gen",
		},
	}
	layoutZ = layout{
		gcName: "ZGC",
		pools:  map[string]string{"old/space": "ZHeap"},
	}
	// Generational ZGC (JDK 21+; not on this JDK 17 machine): layout from
	// zServiceability.cpp, names from its MXBeans. Both generations report
	// the whole heap as their maximum.
	layoutGenerationalZ = layout{
		gcName: "Generational ZGC",
		pools: map[string]string{
			"young/space": "ZGC Young Generation",
			"old/space":   "ZGC Old Generation",
		},
		generationsShareHeap: true,
	}
	layoutShenandoah = layout{
		gcName: "Shenandoah",
		pools:  map[string]string{"Heap/Heap": "Shenandoah"},
	}
)

// detectLayout names the collector from sun.gc.policy.name, which G1,
// Parallel and Serial write, and otherwise from the collector names, which
// ZGC and Shenandoah use as their only signature.
func detectLayout(c *counters) layout {
	switch c.policyName {
	case "GarbageFirst":
		return layoutG1
	case "ParScav:MSC":
		return layoutParallel
	case "Copy:MSC":
		return layoutSerial
	case "ParNew:CMS", "Copy:CMS":
		return layoutCMS
	}
	for i := range c.collectors {
		switch name := c.collectors[i].name; {
		case strings.HasPrefix(name, "Shenandoah"):
			return layoutShenandoah
		case strings.HasPrefix(name, "ZGC "): // "ZGC minor collection pauses", JDK 21+
			return layoutGenerationalZ
		case strings.HasPrefix(name, "Z "), name == "stop-the-world": // JDK 15+, JDK 11-14
			return layoutZ
		}
	}
	// Unknown: keep the counters' own names, sum the generations.
	return layout{gcName: c.policyName}
}

// poolName names generation g's space sp, falling back to the counters'
// own names ("old space") for layouts this package does not know.
func (l layout) poolName(genName string, g int, spaceName string, sp int) string {
	if n, ok := l.pools[genName+"/"+spaceName]; ok {
		return n
	}
	if genName == "" {
		genName = "generation " + strconv.Itoa(g)
	}
	if spaceName == "" {
		spaceName = "space " + strconv.Itoa(sp)
	}
	return genName + " " + spaceName
}

func (l layout) isYoung(pool string) bool { return l.young[pool] }

// unpad undoes G1's padding: G1 adds MinObjAlignmentInBytes (8 by default)
// to every capacity it publishes so that jstat never divides by zero.
// G1's real capacities are whole regions (1 MiB or more), so rounding down
// to 4 KiB removes the pad whatever the object alignment.
func (l layout) unpad(v uint64) uint64 {
	if !l.padded {
		return v
	}
	return v &^ (4096 - 1)
}

// maxMetaspaceSize returns the -XX:MaxMetaspaceSize given on the command
// line (the last one wins, as in HotSpot), or 0 when it is unbounded.
func maxMetaspaceSize(vmArgs, vmFlags string) uint64 {
	var size uint64
	for _, args := range []string{vmFlags, vmArgs} {
		// Most JVMs do not set it: looking for it is much cheaper than
		// splitting a Spark executor's kilobyte of arguments.
		if !strings.Contains(args, "-XX:MaxMetaspaceSize=") {
			continue
		}
		for f := range strings.FieldsSeq(args) {
			if v, ok := strings.CutPrefix(f, "-XX:MaxMetaspaceSize="); ok {
				if n, ok := parseJVMSize(v); ok {
					size = n
				}
			}
		}
	}
	return size
}

// parseJVMSize parses a HotSpot size flag value: digits with an optional
// k, m, g or t suffix (either case).
func parseJVMSize(v string) (uint64, bool) {
	shift := 0
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			shift = 10
		case 'm', 'M':
			shift = 20
		case 'g', 'G':
			shift = 30
		case 't', 'T':
			shift = 40
		}
		if shift > 0 {
			v = v[:n-1]
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > (^uint64(0))>>shift {
		return 0, false
	}
	return n << shift, true
}
