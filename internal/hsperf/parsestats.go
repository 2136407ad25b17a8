package hsperf

import (
	"fmt"
	"unsafe"
)

// ParseStats is Parse followed by Stats, for a file read again and again:
// it keeps no entries and copies no names, and the strings of a JVM read
// before are taken from prev (which may be nil) when they have not changed.
// It also returns sun.os.hrt.ticks, 0 when the file has none. With a plan
// (which may be nil) kept from the last read of the same file, it reads
// only the values of the entries parsed then, and parses those added since;
// it updates plan. b may be reused once ParseStats returns; nothing of prev
// is modified.
func ParseStats(b []byte, prev *Stats, plan *Plan) (Stats, int64, error) {
	var s Snapshot
	order, off, num, err := prologue(b, &s)
	if err != nil {
		plan.forget()
		return Stats{}, 0, err
	}
	b = b[:s.Used]
	// Names and string values are views of b, not copies: they live no
	// longer than this call, as counters matches names and detachStrings
	// replaces every string that Stats keeps. prologue guarantees b is not
	// empty.
	text := unsafe.String(unsafe.SliceData(b), len(b))
	var c counters
	first, next, ok := plan.resume(b, text, order, off, num, s.Used, &c)
	if ok {
		off = next
	} else {
		plan.learn(b, off)
	}
	i := first
	for ; i < int(num); i++ {
		if inProgress(b, off, order) {
			break // as Parse: the JVM is still writing it
		}
		var e Entry
		n, err := parseEntry(b, text, off, order, &e)
		if err != nil {
			plan.forget()
			return Stats{}, 0, fmt.Errorf("entry %d at offset %d: %w", i, off, err)
		}
		t := targetOf(e.Name)
		c.set(t, e.Type, e.Long, e.String)
		plan.record(b, off, order, t, &e)
		off += n
	}
	plan.commit(b, i, off, num, s.Used)
	c.finish()
	st, err := c.stats()
	if err != nil {
		return Stats{}, 0, err
	}
	detachStrings(&st, prev)
	return st, c.ticks, nil
}
