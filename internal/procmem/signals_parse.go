package procmem

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// MemoryEvents is cgroup v2's memory.events: how often the cgroup (and its
// descendants, without the memory_localevents mount option) met each of
// its boundaries.
type MemoryEvents struct {
	// Low: reclaimed below memory.low although protected.
	Low uint64
	// High: throttled and reclaimed directly above memory.high.
	High uint64
	// Max: usage was about to pass memory.max; reclaim ran first.
	Max uint64
	// OOM: the charge failed after reclaim and the OOM killer was asked.
	OOM uint64
	// OOMKill: processes the OOM killer killed (Linux 4.13+).
	OOMKill uint64
	// Whether the file had the key: kernels add keys over time.
	HasLow, HasHigh, HasMax, HasOOM, HasOOMKill bool
}

// parseMemoryEvents reads memory.events in one pass, split by
// nextLine; the first line of a key counts. A key with a
// bad value is an error, an absent one is not.
func parseMemoryEvents(data []byte) (MemoryEvents, error) {
	var e MemoryEvents
	for len(data) > 0 {
		line, rest, err := nextLine(data)
		if err != nil {
			return MemoryEvents{}, err
		}
		data = rest
		name, val, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			continue
		}
		var v *uint64
		var has *bool
		switch string(name) {
		case "low":
			v, has = &e.Low, &e.HasLow
		case "high":
			v, has = &e.High, &e.HasHigh
		case "max":
			v, has = &e.Max, &e.HasMax
		case "oom":
			v, has = &e.OOM, &e.HasOOM
		case "oom_kill":
			v, has = &e.OOMKill, &e.HasOOMKill
		default:
			continue
		}
		if *has {
			continue
		}
		n, err := parseDecimal(bytes.TrimSpace(val))
		if err != nil {
			return MemoryEvents{}, fmt.Errorf("%s: not an unsigned integer: %q", name, truncate(string(val), 64))
		}
		*v, *has = n, true
	}
	return e, nil
}

// Pressure is a cgroup's memory.pressure (PSI, cgroup v2): how long its
// tasks stalled waiting for memory. Some: at least one task stalled;
// full: all non-idle tasks stalled at once, nothing ran. Totals are
// microseconds since the cgroup was made, Avg10 the share of the last 10 s
// stalled, in percent.
type Pressure struct {
	SomeTotal, FullTotal uint64
	SomeAvg10, FullAvg10 float64
	HasSome, HasFull     bool
}

var errPressureLine = errors.New("want avg10=, avg60=, avg300= and total=")

// parsePressure reads a PSI file ("some avg10=0.00 avg60=0.00 avg300=0.00
// total=0", then the same for "full"). A some or full line without a
// readable avg10 and total is an error; other lines are left alone, as
// later kernels may add some.
func parsePressure(data []byte) (Pressure, error) {
	var p Pressure
	for len(data) > 0 {
		line, rest, err := nextLine(data)
		if err != nil {
			return Pressure{}, err
		}
		data = rest
		kind, fields, _ := bytes.Cut(line, []byte{' '})
		var total *uint64
		var avg10 *float64
		var has *bool
		switch string(kind) {
		case "some":
			total, avg10, has = &p.SomeTotal, &p.SomeAvg10, &p.HasSome
		case "full":
			total, avg10, has = &p.FullTotal, &p.FullAvg10, &p.HasFull
		default:
			continue
		}
		if *has {
			continue
		}
		var gotTotal, gotAvg bool
		for _, f := range bytes.Fields(fields) {
			key, val, ok := bytes.Cut(f, []byte{'='})
			if !ok {
				return Pressure{}, fmt.Errorf("%s: %q: %w", kind, truncate(string(f), 64), errPressureLine)
			}
			switch string(key) {
			case "total":
				n, err := parseDecimal(val)
				if err != nil {
					return Pressure{}, fmt.Errorf("%s total: not an unsigned integer: %q", kind, truncate(string(val), 64))
				}
				*total, gotTotal = n, true
			case "avg10":
				a, err := strconv.ParseFloat(string(val), 64)
				// The kernel writes a percentage with two decimals.
				if err != nil || !(a >= 0 && a <= 100) {
					return Pressure{}, fmt.Errorf("%s avg10: not a percentage: %q", kind, truncate(string(val), 64))
				}
				*avg10, gotAvg = a, true
			}
		}
		if !gotTotal || !gotAvg {
			return Pressure{}, fmt.Errorf("%s: %w", kind, errPressureLine)
		}
		*has = true
	}
	return p, nil
}
