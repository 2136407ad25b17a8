package hsperf

import (
	"fmt"
	"unsafe"
)

// ParseStats is Parse followed by Stats, for a file read again and again:
// it keeps no entries and copies no names, and the strings of a JVM read
// before are taken from prev (which may be nil) when they have not changed.
// It also returns sun.os.hrt.ticks, 0 when the file has none. b may be
// reused once ParseStats returns; nothing of prev is modified.
func ParseStats(b []byte, prev *Stats) (Stats, int64, error) {
	var s Snapshot
	order, off, num, err := prologue(b, &s)
	if err != nil {
		return Stats{}, 0, err
	}
	b = b[:s.Used]
	// Names and string values are views of b, not copies: they live no
	// longer than this call, as counters matches names and detachStrings
	// replaces every string that Stats keeps. prologue guarantees b is not
	// empty.
	text := unsafe.String(unsafe.SliceData(b), len(b))
	var c counters
	for i := 0; i < int(num); i++ {
		if inProgress(b, off, order) {
			break // as Parse: the JVM is still writing it
		}
		var e Entry
		n, err := parseEntry(b, text, off, order, &e)
		if err != nil {
			return Stats{}, 0, fmt.Errorf("entry %d at offset %d: %w", i, off, err)
		}
		c.add(&e)
		off += n
	}
	c.finish()
	st, err := c.stats()
	if err != nil {
		return Stats{}, 0, err
	}
	detachStrings(&st, prev)
	return st, c.ticks, nil
}
