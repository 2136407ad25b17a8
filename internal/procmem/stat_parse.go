package procmem

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

// procStat is what the process table needs of /proc/<pid>/stat.
type procStat struct {
	PPID       int
	Comm       string
	RSSPages   uint64 // field 24; a negative value (never seen) reads as 0
	VSize      uint64 // field 23, bytes of address space
	StartTicks uint64 // field 22, clock ticks since boot
	Flags      uint64 // field 9, the kernel's PF_* flags
}

// Positions in the fields after "(comm) ", counted from 0: state is field 3
// of proc(5), so field N is at N-3.
const (
	statPPID      = 4 - 3
	statFlags     = 9 - 3
	statUTime     = 14 - 3
	statSTime     = 15 - 3
	statStartTime = 22 - 3
	statVSize     = 23 - 3
	statRSS       = 24 - 3
)

// statFields walks the fields of a /proc/<pid>/stat line after the
// command name, which may hold spaces and parentheses and so ends at the
// last ')'. Fields are split on spaces and end at the first newline. It
// calls each with every field up to last (the positions above) and fails
// when the line has fewer; it returns the command name, within b.
func statFields(b []byte, last int, each func(field int, tok []byte) error) ([]byte, error) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return nil, errors.New("stat: no (comm)")
	}
	rest := b[closing+1:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	for field := 0; field <= last; field++ {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			return nil, fmt.Errorf("stat: %d fields after the command name, want at least %d", field, last+1)
		}
		var tok []byte
		tok, rest = cutField(rest)
		if err := each(field, tok); err != nil {
			return nil, err
		}
	}
	return b[open+1 : closing], nil
}

// parseStat parses a /proc/<pid>/stat line for the process table. It
// allocates only the command name.
//
// procfs parses this file too (Proc.Stat, used by NewProcessTable); this is a
// fast path beside it for ProcessWatch, which reads the stat of every JVM
// and tree member every scan: procfs's fmt.Fscan-based parse costs more than
// the kernel's production of the file (BenchmarkParseStat). It is held to
// procfs's answers by TestParseStatAgreesWithProcfs, on every live process.
func parseStat(b []byte) (procStat, error) {
	var s procStat
	comm, err := statFields(b, statRSS, func(field int, tok []byte) error {
		switch field {
		case statPPID:
			v, err := parseStatInt(tok)
			if err != nil || v < 0 || v > 1<<31-1 {
				return fmt.Errorf("stat: ppid %q", truncate(string(tok), 32))
			}
			s.PPID = int(v)
		case statFlags:
			v, err := parseStatInt(tok)
			if err != nil || v < 0 {
				return fmt.Errorf("stat: flags %q", truncate(string(tok), 32))
			}
			s.Flags = uint64(v)
		case statStartTime:
			v, err := parseStatInt(tok)
			if err != nil || v < 0 {
				return fmt.Errorf("stat: starttime %q", truncate(string(tok), 32))
			}
			s.StartTicks = uint64(v)
		case statVSize:
			v, err := parseStatInt(tok)
			if err != nil || v < 0 {
				return fmt.Errorf("stat: vsize %q", truncate(string(tok), 32))
			}
			s.VSize = uint64(v)
		case statRSS:
			v, err := parseStatInt(tok)
			if err != nil {
				return fmt.Errorf("stat: rss %q", truncate(string(tok), 32))
			}
			if v > 0 {
				s.RSSPages = uint64(v)
			}
		}
		return nil
	})
	if err != nil {
		return procStat{}, err
	}
	s.Comm = string(comm)
	return s, nil
}

// parseStatInt parses a decimal integer with an optional minus sign (no
// plus: the kernel writes none), without allocating.
func parseStatInt(b []byte) (int64, error) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	v, err := parseDecimal(b)
	switch {
	case err != nil:
		return 0, errors.New("not an integer")
	case neg && v <= 1<<63:
		return int64(-v), nil // -(1<<63) wraps to itself, MinInt64
	case !neg && v <= math.MaxInt64:
		return int64(v), nil
	}
	return 0, errors.New("out of range")
}

// parseStatusHWM returns the VmHWM line of /proc/<pid>/status in bytes
// ("VmHWM:\t  123456 kB"). A kernel thread's status has none.
func parseStatusHWM(b []byte) (uint64, error) {
	const key = "VmHWM:"
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if !bytes.HasPrefix(line, []byte(key)) {
			continue
		}
		fields := bytes.Fields(line[len(key):])
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return 0, fmt.Errorf("status: VmHWM %q", truncate(string(line), 64))
		}
		v, err := parseDecimal(fields[0])
		if err != nil || v > math.MaxUint64/1024 {
			return 0, fmt.Errorf("status: VmHWM %q", truncate(string(line), 64))
		}
		return v * 1024, nil
	}
	return 0, errors.New("status: no VmHWM")
}

// cutField splits b before its first space.
func cutField(b []byte) (field, rest []byte) {
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		return b[:i], b[i:]
	}
	return b, nil
}
