package nativemem

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
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
	var r SmapsReader
	r.ms = ms
	return r.Read(bytes.NewReader(data))
}

// maxLine bounds one line: a header with a path of PATH_MAX (4096) bytes,
// each of which the kernel may print as a four-byte octal escape (\012).
const maxLine = 20 << 10

// maxPaths bounds the paths a SmapsReader remembers between reads.
const maxPaths = 4096

// SmapsReader parses smaps a line at a time, keeping its buffers and the
// strings of the paths it met between reads, so that a breakdown costs
// the reading of the file, not the garbage of it. The mappings a Read
// returns are valid until the next Read. Not safe for concurrent use.
type SmapsReader struct {
	ms      []Mapping
	scratch []byte
	paths   map[string]string
}

// Read parses the smaps read from r.
func (sr *SmapsReader) Read(r io.Reader) ([]Mapping, error) {
	ms := sr.ms[:0]
	if sr.paths == nil || len(sr.paths) > maxPaths {
		sr.paths = map[string]string{}
	}
	if cap(sr.scratch) < maxLine {
		sr.scratch = make([]byte, maxLine)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(sr.scratch[:cap(sr.scratch)], maxLine)
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
			m, err := parseHeader(line, sr.paths)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
	}
	sr.ms = ms
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
		switch c {
		case '-':
			return true
		case ':', ' ':
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
	var fields [5][]byte
	rest := line
	for i := range fields {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		if end == 0 {
			return bad("short header")
		}
		fields[i], rest = rest[:end], rest[end:]
	}
	lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
	var okStart, okEnd, okOff, okInode bool
	m.Start, okStart = parseUint(lo, 16)
	m.End, okEnd = parseUint(hi, 16)
	m.Offset, okOff = parseUint(fields[2], 16)
	m.Inode, okInode = parseUint(fields[4], 10)
	if !ok || !okStart || !okEnd || !okOff || !okInode || m.End < m.Start {
		return bad("number")
	}
	perms := fields[1]
	if len(perms) != 4 {
		return bad("permissions")
	}
	m.Read, m.Write, m.Exec, m.Shared = perms[0] == 'r', perms[1] == 'w', perms[2] == 'x', perms[3] == 's'
	major, minor, ok := bytes.Cut(fields[3], []byte(":"))
	maj, okMaj := parseUint(major, 16)
	mnr, okMin := parseUint(minor, 16)
	if !ok || !okMaj || !okMin || maj > 1<<32-1 || mnr > 1<<32-1 {
		return bad("device")
	}
	m.Dev = maj<<32 | mnr
	if p := bytes.TrimSpace(rest); len(p) > 0 {
		s, ok := paths[string(p)] // no allocation: the compiler looks up without converting
		if !ok {
			s = string(p)
			paths[s] = s
		}
		m.Path = s
	}
	return m, nil
}

// parseUint parses an unsigned number in base 10 or 16; ok is false for
// an empty, malformed or overflowing one.
func parseUint(b []byte, base int) (uint64, bool) {
	v, err := strconv.ParseUint(string(b), base, 64)
	return v, err == nil
}

func parseKB(b []byte) (uint64, error) {
	b = bytes.TrimSpace(b)
	b = bytes.TrimSuffix(b, []byte("kB"))
	v, ok := parseUint(bytes.TrimSpace(b), 10)
	if !ok || v > 1<<44 {
		return 0, fmt.Errorf("%w: size %q", ErrMalformed, truncate(b))
	}
	return v, nil
}

func hasFlag(flags []byte, flag string) bool {
	for len(flags) > 0 {
		flags = bytes.TrimLeft(flags, " \t")
		f := flags
		if i := bytes.IndexAny(flags, " \t"); i >= 0 {
			f, flags = flags[:i], flags[i:]
		} else {
			flags = nil
		}
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

// Fingerprint hashes the mappings' ranges, permissions and files, not
// their resident sizes: /proc/<pid>/maps has the same header lines as
// smaps, so a maps read, a twentieth of a smaps read, tells whether the
// mappings a breakdown saw are still the same.
func Fingerprint(ms []Mapping) uint64 {
	h := fnv.New64a()
	var b [8]byte
	word := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	for i := range ms {
		m := &ms[i]
		var perms uint64
		for bit, on := range [...]bool{m.Read, m.Write, m.Exec, m.Shared} {
			if on {
				perms |= 1 << bit
			}
		}
		word(m.Start)
		word(m.End)
		word(perms)
		word(m.Offset)
		word(m.Dev)
		word(m.Inode)
		h.Write([]byte(m.Path))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
