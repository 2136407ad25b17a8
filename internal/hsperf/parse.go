package hsperf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Errors that Parse wraps; test with errors.Is.
var (
	ErrBadMagic           = errors.New("hsperf: bad magic")
	ErrUnsupportedVersion = errors.New("hsperf: unsupported version")
	ErrTruncated          = errors.New("hsperf: truncated")
	// ErrNotAccessible: the JVM is still setting the file up (empty, zeros,
	// accessible = 0) or, from Stats, still creating its counters. Read
	// again later; it is not a broken file.
	ErrNotAccessible = errors.New("hsperf: not accessible (JVM still initialising)")
	ErrMalformed     = errors.New("hsperf: malformed entry")
)

const (
	// magic is the first four bytes of every file, always big-endian.
	magic = 0xcafec0c0

	prologueSize    = 32
	entryHeaderSize = 20

	// minEntrySize is the smallest well-formed entry: a header, a one-byte
	// name and its NUL. It bounds how many entries a file of a given size
	// can hold, so that an attacker-controlled num_entries never drives an
	// allocation.
	minEntrySize = entryHeaderSize + 2

	// maxEntries bounds num_entries whatever the file size. HotSpot writes
	// a few hundred counters (187 for JDK 17 with G1); a larger
	// PerfDataMemorySize gives room, not more counters.
	maxEntries = 1 << 16

	byteOrderBig    = 0
	byteOrderLittle = 1

	supportedMajor = 2
	supportedMinor = 0
)

// Type is an entry's data_type: a JVM basic-type signature character.
type Type byte

// The two types HotSpot writes to hsperfdata files. Entries of other types
// are kept with no value, as jstat ignores them.
const (
	TypeLong Type = 'J' // a scalar int64
	TypeByte Type = 'B' // a byte vector; as a string, up to the first NUL
)

// Unit is an entry's data_units (PerfData::Units).
type Unit uint8

// Units as numbered in perfData.hpp.
const (
	UnitNone   Unit = 1
	UnitBytes  Unit = 2
	UnitTicks  Unit = 3 // high-resolution timer ticks; see sun.os.hrt.frequency
	UnitEvents Unit = 4
	UnitString Unit = 5
	UnitHertz  Unit = 6
)

// Variability is an entry's data_variability (PerfData::Variability).
type Variability uint8

// Variabilities as numbered in perfData.hpp.
const (
	Constant  Variability = 1
	Monotonic Variability = 2
	Variable  Variability = 3
)

// Entry is one counter.
type Entry struct {
	Name        string
	Type        Type
	Unit        Unit
	Variability Variability
	Supported   bool   // flags & F_Supported: a stable, documented counter
	Long        int64  // the value when Type is TypeLong
	String      string // the value when Type is TypeByte
}

// Snapshot is one parsed hsperfdata file.
type Snapshot struct {
	MajorVersion, MinorVersion uint8
	Accessible                 bool
	// Used is how many bytes of the file the JVM has filled.
	Used uint32
	// Overflow counts bytes of counters that did not fit the file
	// (-XX:PerfDataMemorySize too small); those counters are missing.
	Overflow uint32
	// ModTimeStamp is when an entry was last added, in
	// high-resolution ticks since the JVM started.
	ModTimeStamp int64
	// Entries in file order.
	Entries []Entry
	// Pending counts entries left out because the JVM was still writing
	// them (see Parse); they will be there on the next read.
	Pending int

	indexOnce sync.Once
	index     map[string]int // built on first lookup, see lookup.go
}

// Parse decodes an hsperfdata file. It copies what it keeps: b may be reused
// once Parse returns.
func Parse(b []byte) (*Snapshot, error) {
	s := &Snapshot{}
	order, off, num, err := prologue(b, s)
	if err != nil {
		return nil, err
	}
	end := int(s.Used) // entries never lie past used
	// One copy of the used bytes as a string: every name and string value
	// is a substring of it, so entries cost no allocation of their own.
	text := string(b[:end])
	s.Entries = make([]Entry, num)
	for i := range s.Entries {
		if inProgress(b[:end], off, order) {
			s.Entries, s.Pending = s.Entries[:i], int(num)-i
			break
		}
		n, err := parseEntry(b[:end], text, off, order, &s.Entries[i])
		if err != nil {
			return nil, fmt.Errorf("entry %d at offset %d: %w", i, off, err)
		}
		off += n
	}
	return s, nil
}

// byteOrder is the order a prologue's byte-order field names, or nil.
func byteOrder(field byte) binary.ByteOrder {
	switch field {
	case byteOrderBig:
		return binary.BigEndian
	case byteOrderLittle:
		return binary.LittleEndian
	}
	return nil
}

// prologue checks b's prologue and fills in s's header fields. It returns
// the byte order, the offset of the first entry and how many there are.
func prologue(b []byte, s *Snapshot) (binary.ByteOrder, int, uint32, error) {
	// A starting JVM creates the file, sizes it, maps it and only then
	// writes the prologue: a read in between finds it empty or zeros.
	if len(b) == 0 {
		return nil, 0, 0, fmt.Errorf("%w: empty file", ErrNotAccessible)
	}
	if len(b) < prologueSize {
		return nil, 0, 0, fmt.Errorf("%w: %d bytes, prologue needs %d", ErrTruncated, len(b), prologueSize)
	}
	if allZero(b[:prologueSize]) {
		return nil, 0, 0, fmt.Errorf("%w: prologue not written yet (zeros)", ErrNotAccessible)
	}
	if m := binary.BigEndian.Uint32(b[0:4]); m != magic {
		return nil, 0, 0, fmt.Errorf("%w: %#08x", ErrBadMagic, m)
	}
	order := byteOrder(b[4])
	if order == nil {
		return nil, 0, 0, fmt.Errorf("%w: byte order %d", ErrMalformed, b[4])
	}
	s.MajorVersion, s.MinorVersion, s.Accessible = b[5], b[6], b[7] != 0
	s.Used = order.Uint32(b[8:12])
	s.Overflow = order.Uint32(b[12:16])
	s.ModTimeStamp = int64(order.Uint64(b[16:24]))
	if s.MajorVersion != supportedMajor || s.MinorVersion != supportedMinor {
		return nil, 0, 0, fmt.Errorf("%w: %d.%d, want %d.%d", ErrUnsupportedVersion,
			s.MajorVersion, s.MinorVersion, supportedMajor, supportedMinor)
	}
	if !s.Accessible {
		return nil, 0, 0, ErrNotAccessible
	}
	// The JVM maps a fixed-size file (PerfDataMemorySize, 32 KiB by default)
	// and fills it from the start; "used" says how far. A shorter buffer
	// lost counters on the way.
	if uint64(s.Used) > uint64(len(b)) {
		return nil, 0, 0, fmt.Errorf("%w: %d bytes, prologue says %d are used", ErrTruncated, len(b), s.Used)
	}
	if s.Used < prologueSize {
		return nil, 0, 0, fmt.Errorf("%w: used %d is inside the prologue", ErrMalformed, s.Used)
	}
	end := int(s.Used)
	entryOffset := order.Uint32(b[24:28])
	numEntries := order.Uint32(b[28:32])
	if entryOffset < prologueSize || uint64(entryOffset) > uint64(end) {
		return nil, 0, 0, fmt.Errorf("%w: entry_offset %d outside [%d, %d]", ErrMalformed, entryOffset, prologueSize, end)
	}
	if fit := uint32((end - int(entryOffset)) / minEntrySize); numEntries > fit {
		return nil, 0, 0, fmt.Errorf("%w: %d entries cannot fit in %d bytes", ErrMalformed, numEntries, end-int(entryOffset))
	}
	if numEntries > maxEntries {
		return nil, 0, 0, fmt.Errorf("%w: %d entries, at most %d expected", ErrMalformed, numEntries, maxEntries)
	}
	return order, int(entryOffset), numEntries, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// inProgress reports whether the entry at off is one the JVM has allocated
// but not yet filled in. HotSpot bumps num_entries and used when it
// allocates an entry (PerfMemory::alloc), then writes the name and the
// header fields in order, data_offset last (PerfData::create_entry). So a
// reader racing with a counter being created — compiler threads add theirs
// at any time — sees an entry whose data_offset is still 0, which no
// finished entry has. Such an entry, and any after it, are left out rather
// than failing the whole read.
func inProgress(b []byte, off int, order binary.ByteOrder) bool {
	return len(b)-off >= entryHeaderSize && order.Uint32(b[off+16:off+20]) == 0
}

// parseEntry decodes the entry at off into e and returns its length. b and
// text hold the same bytes.
func parseEntry(b []byte, text string, off int, order binary.ByteOrder, e *Entry) (int, error) {
	if len(b)-off < entryHeaderSize {
		return 0, fmt.Errorf("%w: %d bytes left, header needs %d", ErrTruncated, len(b)-off, entryHeaderSize)
	}
	h := b[off : off+entryHeaderSize]
	entryLength := order.Uint32(h[0:4])
	nameOffset := order.Uint32(h[4:8])
	vectorLength := order.Uint32(h[8:12])
	e.Type = Type(h[12])
	e.Supported = h[13]&1 != 0
	e.Unit = Unit(h[14])
	e.Variability = Variability(h[15])
	dataOffset := order.Uint32(h[16:20])

	// Everything an entry points at lies inside the entry itself; checking
	// that also guarantees the walk moves forward.
	if entryLength < minEntrySize || uint64(entryLength) > uint64(len(b)-off) {
		return 0, fmt.Errorf("%w: entry_length %d with %d bytes left", ErrMalformed, entryLength, len(b)-off)
	}
	entry := b[off : off+int(entryLength)]
	if nameOffset < entryHeaderSize || nameOffset >= entryLength {
		return 0, fmt.Errorf("%w: name_offset %d outside entry of %d bytes", ErrMalformed, nameOffset, entryLength)
	}
	if dataOffset < nameOffset || dataOffset > entryLength {
		return 0, fmt.Errorf("%w: data_offset %d outside entry (name at %d, length %d)", ErrMalformed, dataOffset, nameOffset, entryLength)
	}
	// The name is NUL-terminated before the data starts.
	nameEnd := bytes.IndexByte(entry[nameOffset:dataOffset], 0)
	if nameEnd <= 0 {
		return 0, fmt.Errorf("%w: name at %d empty or not NUL-terminated", ErrMalformed, nameOffset)
	}
	nameStart := off + int(nameOffset)
	e.Name = text[nameStart : nameStart+nameEnd]

	data := entry[dataOffset:]
	dataStart := off + int(dataOffset)
	switch {
	case e.Type == TypeLong && vectorLength == 0:
		if len(data) < 8 {
			return 0, fmt.Errorf("%w: %q: long needs 8 bytes, %d left", ErrMalformed, e.Name, len(data))
		}
		e.Long = int64(order.Uint64(data))
	case e.Type == TypeByte:
		if uint64(vectorLength) > uint64(len(data)) {
			return 0, fmt.Errorf("%w: %q: vector of %d bytes, %d left", ErrMalformed, e.Name, vectorLength, len(data))
		}
		n := bytes.IndexByte(data[:vectorLength], 0)
		if n < 0 {
			n = int(vectorLength)
		}
		e.String = text[dataStart : dataStart+n]
	}
	// Other types (and vectors of longs) never appear in HotSpot's files;
	// they keep their name and no value.
	return int(entryLength), nil
}
