package procmem

import (
	"bytes"
	"errors"
	"fmt"
)

// procStat is what the process table needs of /proc/<pid>/stat.
type procStat struct {
	PPID       int
	Comm       string
	RSSPages   uint64 // field 24; a negative value (never seen) reads as 0
	StartTicks uint64 // field 22, clock ticks since boot
	Flags      uint64 // field 9, the kernel's PF_* flags
}

// Positions in the fields after "(comm) ", counted from 0: state is field 3
// of proc(5), so field N is at N-3.
const (
	statPPID      = 4 - 3
	statFlags     = 9 - 3
	statStartTime = 22 - 3
	statRSS       = 24 - 3
)

// parseStat parses a /proc/<pid>/stat line. The command name may hold
// spaces and parentheses, so it ends at the last ')'. It allocates only the
// command name.
//
// procfs parses this file too (Proc.Stat, used by NewProcessTable); this is a
// fast path beside it for ProcessWatch, which reads the stat of every JVM
// and tree member every scan: procfs's fmt.Fscan-based parse costs more than
// the kernel's production of the file (BenchmarkParseStat). It is held to
// procfs's answers by TestParseStatAgreesWithProcfs, on every live process.
func parseStat(b []byte) (procStat, error) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return procStat{}, errors.New("stat: no (comm)")
	}
	var s procStat
	rest := b[closing+1:]
	field, seen := 0, 0
	for i := 0; i < len(rest) && seen < 4; field++ {
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		start := i
		for i < len(rest) && rest[i] != ' ' && rest[i] != '\n' {
			i++
		}
		tok := rest[start:i]
		if len(tok) == 0 {
			break
		}
		// field 0 is the first token after the comm (state)
		switch field {
		case statPPID:
			v, err := parseStatInt(tok)
			if err != nil || v < 0 || v > 1<<31-1 {
				return procStat{}, fmt.Errorf("stat: ppid %q", truncate(string(tok), 32))
			}
			s.PPID = int(v)
			seen++
		case statFlags:
			v, err := parseStatInt(tok)
			if err != nil || v < 0 {
				return procStat{}, fmt.Errorf("stat: flags %q", truncate(string(tok), 32))
			}
			s.Flags = uint64(v)
			seen++
		case statStartTime:
			v, err := parseStatInt(tok)
			if err != nil || v < 0 {
				return procStat{}, fmt.Errorf("stat: starttime %q", truncate(string(tok), 32))
			}
			s.StartTicks = uint64(v)
			seen++
		case statRSS:
			v, err := parseStatInt(tok)
			if err != nil {
				return procStat{}, fmt.Errorf("stat: rss %q", truncate(string(tok), 32))
			}
			if v > 0 {
				s.RSSPages = uint64(v)
			}
			seen++
		}
		if i < len(rest) && rest[i] == '\n' {
			break
		}
	}
	if seen < 4 {
		return procStat{}, fmt.Errorf("stat: %d fields after the command name, want at least %d", field, statRSS+1)
	}
	s.Comm = string(b[open+1 : closing])
	return s, nil
}

// parseStatInt parses a decimal integer with an optional minus sign,
// without allocating.
func parseStatInt(b []byte) (int64, error) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, errors.New("not an integer")
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("not an integer")
		}
		v = v*10 + int64(c-'0')
	}
	if v < 0 { // 19 digits can overflow int64
		return 0, errors.New("out of range")
	}
	if neg {
		v = -v
	}
	return v, nil
}

// parseStatmResident returns the resident pages of a /proc/<pid>/statm
// line ("size resident shared text lib data dt"): what stat's field 24
// gives, from the process's memory counters alone. The kernel makes stat
// by summing every thread's faults and times, statm without visiting a
// thread, so for a JVM of a hundred threads statm is the cheaper read of
// the same number.
func parseStatmResident(b []byte) (uint64, error) {
	var field []byte
	for range 2 {
		b = bytes.TrimLeft(b, " ")
		end := bytes.IndexAny(b, " \n")
		if end < 0 {
			end = len(b)
		}
		field, b = b[:end], b[end:]
	}
	v, err := parseStatInt(field)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("statm: resident %q", truncate(string(field), 32))
	}
	return uint64(v), nil
}
