package procmem

import (
	"bytes"
	"fmt"
)

// UserHZ is the clock tick /proc/<pid>/stat counts times in. procfs
// assumes 100 (USER_HZ on every architecture Linux has today) rather than
// asking sysconf(_SC_CLK_TCK); the process_* metrics must agree with
// client_golang's, so this does too.
const UserHZ = 100

// SelfStat is what client_golang's process collector takes from
// /proc/<pid>/stat, with procfs's types widened to 64 bits.
type SelfStat struct {
	UTime      uint64 // field 14, ticks
	STime      uint64 // field 15, ticks
	StartTicks uint64 // field 22, ticks since boot
	VSize      uint64 // field 23, bytes
	RSSPages   int64  // field 24; signed because procfs's RSS is an int
}

// CPUSeconds is procfs's ProcStat.CPUTime.
func (s SelfStat) CPUSeconds() float64 {
	return float64(s.UTime+s.STime) / UserHZ
}

// ParseSelfStat parses a /proc/<pid>/stat line for the process_* metrics
// without allocating: the fields parseStat walks (statFields), with those
// client_golang's collector reads. procfs's Proc.Stat reads the same
// fields with fmt.Fscan.
func ParseSelfStat(b []byte) (SelfStat, error) {
	var s SelfStat
	_, err := statFields(b, statRSS, func(field int, tok []byte) error {
		var err error
		switch field {
		case statUTime:
			s.UTime, err = parseStatUint("utime", tok)
		case statSTime:
			s.STime, err = parseStatUint("stime", tok)
		case statStartTime:
			s.StartTicks, err = parseStatUint("starttime", tok)
		case statVSize:
			s.VSize, err = parseStatUint("vsize", tok)
		case statRSS:
			if s.RSSPages, err = parseStatInt(tok); err != nil {
				err = fmt.Errorf("stat: rss %q", truncate(string(tok), 32))
			}
		}
		return err
	})
	if err != nil {
		return SelfStat{}, err
	}
	return s, nil
}

func parseStatUint(name string, tok []byte) (uint64, error) {
	v, err := parseDecimal(tok)
	if err != nil {
		return 0, fmt.Errorf("stat: %s %q", name, truncate(string(tok), 32))
	}
	return v, nil
}

// ParseNetstatOctets finds IpExt's InOctets and OutOctets in
// /proc/<pid>/net/netstat, the totals of the process's network namespace
// behind client_golang's process_network_{receive,transmit}_bytes_total.
// The file is pairs of lines, names then values, each line led by its
// section ("IpExt: InNoRoutes ... InOctets ..." then "IpExt: 0 ... 123
// ..."). A counter or section the kernel lacks reads as 0, as procfs has
// it. Unlike procfs's parse into a map of every counter, only these two
// values are parsed, so a bad value elsewhere is no error; a broken pair
// (a section's name line without its value line, differing sections or
// counts) is one anywhere, since it puts values under the wrong names.
func ParseNetstatOctets(b []byte) (in, out uint64, err error) {
	for len(b) > 0 {
		var names, values []byte
		names, b = nextNetstatLine(b)
		if len(b) == 0 {
			return 0, 0, fmt.Errorf("netstat: %q without a line of values", truncate(string(netstatSection(names)), 32))
		}
		values, b = nextNetstatLine(b)
		section := netstatSection(names)
		if !bytes.Equal(section, netstatSection(values)) {
			return 0, 0, fmt.Errorf("netstat: names of %q followed by values of %q",
				truncate(string(section), 32), truncate(string(netstatSection(values)), 32))
		}
		if n, v := bytes.Count(names, []byte{' '}), bytes.Count(values, []byte{' '}); n != v {
			return 0, 0, fmt.Errorf("netstat: %q has %d names and %d values", truncate(string(section), 32), n, v)
		}
		if string(section) != "IpExt:" {
			continue
		}
		// Both lines now begin with the space before their next field, and
		// hold as many: the i-th name is over the i-th value.
		names, values = names[len(section):], values[len(section):]
		for len(names) > 0 {
			var name, value []byte
			name, names = cutField(names[1:])
			value, values = cutField(values[1:])
			var dst *uint64
			switch string(name) {
			case "InOctets":
				dst = &in
			case "OutOctets":
				dst = &out
			default:
				continue
			}
			if *dst, err = parseDecimal(value); err != nil {
				return 0, 0, fmt.Errorf("netstat: IpExt %s %q", name, truncate(string(value), 32))
			}
		}
	}
	return in, out, nil
}

func nextNetstatLine(b []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(b, []byte{'\n'})
	return line, rest
}

// netstatSection is a line's leading "Name:", up to its first space.
func netstatSection(line []byte) []byte {
	s, _ := cutField(line)
	return s
}

// cutField splits b before its first space.
func cutField(b []byte) (field, rest []byte) {
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		return b[:i], b[i:]
	}
	return b, nil
}
