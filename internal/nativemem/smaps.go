package nativemem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrMalformed is wrapped by ParseSmaps for a file that is not smaps.
var ErrMalformed = errors.New("nativemem: malformed smaps")

// Mapping is one entry of /proc/<pid>/smaps, reduced to what the
// classification needs.
type Mapping struct {
	Start, End uint64
	Read       bool
	Write      bool
	Exec       bool
	Shared     bool
	Offset     uint64
	Inode      uint64
	Dev        uint64 // major<<32 | minor
	Path       string // "" for anonymous memory; "[heap]", "[stack]", ... for the kernel's names
	Rss        uint64 // bytes
	// NoReserve is VmFlags "nr": mapped with MAP_NORESERVE. The JVM
	// reserves address space that way and commits without it; glibc's
	// malloc arenas keep it on the part they make usable.
	NoReserve bool
}

// Size is the mapping's length in bytes.
func (m *Mapping) Size() uint64 { return m.End - m.Start }

// Anonymous reports memory with no file behind it (the kernel's names
// such as [heap] and [stack] included).
func (m *Mapping) Anonymous() bool { return m.Inode == 0 && (m.Path == "" || m.Path[0] == '[') }

// MaxMappings bounds what ParseSmaps accepts: a process with more mappings
// than the kernel's default vm.max_map_count (65530) is not one to break
// down on every change.
const MaxMappings = 70000

// ParseSmaps parses the contents of /proc/<pid>/smaps into ms, reusing
// its storage. Lines other than a mapping's header, Rss and VmFlags are
// skipped; a header that does not parse fails the whole file, since every
// figure after it would be attributed to the wrong mapping.
func ParseSmaps(data []byte, ms []Mapping) ([]Mapping, error) {
	return ReadSmaps(bytes.NewReader(data), nil, ms)
}

// maxLine bounds one line: a header with a path of PATH_MAX (4096) bytes,
// each of which the kernel may print as a four-byte octal escape (\012).
const maxLine = 20 << 10

// ReadSmaps is ParseSmaps reading from r, a line at a time through
// scratch (grown to 20 KiB if smaller), so that reading a process with
// thousands of mappings holds its mappings, not its file.
func ReadSmaps(r io.Reader, scratch []byte, ms []Mapping) ([]Mapping, error) {
	ms = ms[:0]
	paths := map[string]string{} // one string per distinct path
	sc := bufio.NewScanner(r)
	if cap(scratch) < maxLine {
		scratch = make([]byte, maxLine)
	}
	sc.Buffer(scratch[:cap(scratch)], maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		switch {
		case bytes.HasPrefix(line, []byte("Rss:")):
			if len(ms) == 0 {
				return nil, fmt.Errorf("%w: Rss before any mapping", ErrMalformed)
			}
			kb, err := parseKB(line[len("Rss:"):])
			if err != nil {
				return nil, err
			}
			ms[len(ms)-1].Rss = kb << 10
		case bytes.HasPrefix(line, []byte("VmFlags:")):
			if len(ms) == 0 {
				return nil, fmt.Errorf("%w: VmFlags before any mapping", ErrMalformed)
			}
			ms[len(ms)-1].NoReserve = hasFlag(line[len("VmFlags:"):], "nr")
		case isHeader(line):
			if len(ms) == MaxMappings {
				return nil, fmt.Errorf("%w: more than %d mappings", ErrMalformed, MaxMappings)
			}
			m, err := parseHeader(line, paths)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrMalformed, maxLine)
		}
		return nil, err
	}
	return ms, nil
}

// isHeader tells a mapping's header ("7f..-7f.. rw-p ...") from a field
// ("Rss:    4 kB"): a field's name ends with a colon before any space.
func isHeader(line []byte) bool {
	for _, c := range line {
		switch {
		case c == '-':
			return true
		case c == ':' || c == ' ':
			return false
		}
	}
	return false
}

// parseHeader parses "start-end perms offset major:minor inode [path]".
func parseHeader(line []byte, paths map[string]string) (Mapping, error) {
	var m Mapping
	bad := func(what string) (Mapping, error) {
		return Mapping{}, fmt.Errorf("%w: %s in %q", ErrMalformed, what, truncate(line))
	}
	fields, rest := splitFields(line, 5)
	if len(fields) < 5 {
		return bad("short header")
	}
	dash := bytes.IndexByte(fields[0], '-')
	if dash < 0 {
		return bad("address range")
	}
	var err1, err2, err3, err4 error
	m.Start, err1 = strconv.ParseUint(string(fields[0][:dash]), 16, 64)
	m.End, err2 = strconv.ParseUint(string(fields[0][dash+1:]), 16, 64)
	m.Offset, err3 = strconv.ParseUint(string(fields[2]), 16, 64)
	m.Inode, err4 = strconv.ParseUint(string(fields[4]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || m.End < m.Start {
		return bad("number")
	}
	perms := fields[1]
	if len(perms) != 4 {
		return bad("permissions")
	}
	m.Read, m.Write, m.Exec, m.Shared = perms[0] == 'r', perms[1] == 'w', perms[2] == 'x', perms[3] == 's'
	colon := bytes.IndexByte(fields[3], ':')
	if colon < 0 {
		return bad("device")
	}
	major, err1 := strconv.ParseUint(string(fields[3][:colon]), 16, 32)
	minor, err2 := strconv.ParseUint(string(fields[3][colon+1:]), 16, 32)
	if err1 != nil || err2 != nil {
		return bad("device")
	}
	m.Dev = major<<32 | minor
	if p := bytes.TrimSpace(rest); len(p) > 0 {
		s, ok := paths[string(p)]
		if !ok {
			s = string(p)
			paths[s] = s
		}
		m.Path = s
	}
	return m, nil
}

// splitFields cuts n space-separated fields off line and returns them with
// what follows (the path, which may itself hold spaces).
func splitFields(line []byte, n int) ([][]byte, []byte) {
	var out [][]byte
	for len(out) < n {
		line = bytes.TrimLeft(line, " ")
		if len(line) == 0 {
			break
		}
		end := bytes.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		out = append(out, line[:end])
		line = line[end:]
	}
	return out, line
}

func parseKB(b []byte) (uint64, error) {
	b = bytes.TrimSpace(b)
	b = bytes.TrimSuffix(b, []byte("kB"))
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || v > 1<<44 {
		return 0, fmt.Errorf("%w: size %q", ErrMalformed, truncate(b))
	}
	return v, nil
}

func hasFlag(flags []byte, flag string) bool {
	for _, f := range bytes.Fields(flags) {
		if string(f) == flag {
			return true
		}
	}
	return false
}

func truncate(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
