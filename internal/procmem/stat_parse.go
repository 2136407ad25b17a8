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
	statStartTime = 22 - 3
	statVSize     = 23 - 3
	statRSS       = 24 - 3
)

// statFieldNames names the fields parseStat takes, in its errors.
var statFieldNames = [statRSS + 1]string{
	statPPID: "ppid", statFlags: "flags", statStartTime: "starttime", statVSize: "vsize", statRSS: "rss",
}

// parseStat parses a /proc/<pid>/stat line for the process table. It
// allocates only the command name, which may hold spaces and parentheses
// and so ends at the last ')'; the fields after it are split on spaces and
// end at the first newline.
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
	rest := b[closing+1:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	var v [statRSS + 1]int64
	for field := range v {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			return procStat{}, fmt.Errorf("stat: %d fields after the command name, want at least %d", field, statRSS+1)
		}
		var tok []byte
		tok, rest, _ = bytes.Cut(rest, []byte{' '})
		name := statFieldNames[field]
		if name == "" {
			continue
		}
		n, err := parseStatInt(tok)
		// RSS alone may read negative (never seen): it counts as 0.
		if err != nil || (n < 0 && field != statRSS) || (field == statPPID && n > 1<<31-1) {
			return procStat{}, fmt.Errorf("stat: %s %q", name, truncate(string(tok), 32))
		}
		v[field] = n
	}
	return procStat{
		PPID:       int(v[statPPID]),
		Comm:       string(b[open+1 : closing]),
		RSSPages:   uint64(max(v[statRSS], 0)),
		VSize:      uint64(v[statVSize]),
		StartTicks: uint64(v[statStartTime]),
		Flags:      uint64(v[statFlags]),
	}, nil
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
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
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
