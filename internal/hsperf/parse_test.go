package hsperf

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		fixture      string
		entries      int
		modTimeStamp int64
		longs        map[string]int64
		texts        map[string]string
	}{
		{
			fixture: "g1", entries: 187, modTimeStamp: 725774755,
			longs: map[string]int64{
				"sun.os.hrt.frequency":                 1000000000,
				"sun.gc.generation.1.space.0.used":     8886632,
				"sun.gc.generation.0.space.0.capacity": 22020104, // G1 pads by 8
				"sun.gc.collector.0.invocations":       14,
			},
			texts: map[string]string{
				"sun.gc.policy.name":               "GarbageFirst",
				"sun.gc.generation.0.space.2.name": "s1",
				"java.property.java.vm.version":    "17.0.15+6-Debian-1deb12u1",
			},
		},
		{
			fixture: "z", entries: 133,
			longs: map[string]int64{"sun.gc.collector.2.invocations": 96},
			texts: map[string]string{"sun.gc.collector.2.name": "Z concurrent cycle pauses"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			s := mustParse(t, readFixture(t, tt.fixture))
			if len(s.Entries) != tt.entries {
				t.Errorf("entries = %d, want %d", len(s.Entries), tt.entries)
			}
			if !s.Accessible || s.MajorVersion != 2 || s.MinorVersion != 0 {
				t.Errorf("prologue: accessible %v version %d.%d", s.Accessible, s.MajorVersion, s.MinorVersion)
			}
			if tt.modTimeStamp != 0 && s.ModTimeStamp != tt.modTimeStamp {
				t.Errorf("ModTimeStamp = %d, want %d", s.ModTimeStamp, tt.modTimeStamp)
			}
			for name, want := range tt.longs {
				if got, ok := s.Long(name); !ok || got != want {
					t.Errorf("Long(%q) = %d, %v; want %d", name, got, ok, want)
				}
			}
			for name, want := range tt.texts {
				if got, ok := s.Text(name); !ok || got != want {
					t.Errorf("Text(%q) = %q, %v; want %q", name, got, ok, want)
				}
			}
			if _, ok := s.Long("no.such.counter"); ok {
				t.Error("Long of a missing counter reported ok")
			}
			if _, ok := s.Long("sun.gc.policy.name"); ok {
				t.Error("Long of a string counter reported ok")
			}
			e, _ := s.Lookup("sun.gc.collector.0.time")
			if e.Unit != UnitTicks && tt.fixture == "g1" {
				t.Errorf("collector time unit = %d, want ticks", e.Unit)
			}
		})
	}
}

// Both byte orders decode to the same entries: the fixtures are
// little-endian (x86-64), so re-encode one in each order.
func TestParseByteOrders(t *testing.T) {
	orig := mustParse(t, readFixture(t, "g1"))
	for _, order := range []binary.ByteOrder{binary.BigEndian, binary.LittleEndian} {
		t.Run(order.String(), func(t *testing.T) {
			s := mustParse(t, encode(order, toTestEntries(orig.Entries)))
			if len(s.Entries) != len(orig.Entries) {
				t.Fatalf("%d entries, want %d", len(s.Entries), len(orig.Entries))
			}
			for i, e := range s.Entries {
				o := orig.Entries[i]
				if e.Name != o.Name || e.Type != o.Type || e.Unit != o.Unit || e.Long != o.Long || e.String != o.String {
					t.Errorf("entry %d = %+v, want %+v", i, e, o)
				}
			}
			want, _ := orig.Stats()
			got, err := s.Stats()
			if err != nil || got.HeapUsed != want.HeapUsed || got.GCName != "G1" {
				t.Errorf("Stats = %+v, %v", got, err)
			}
		})
	}
}

// patch returns a copy of b with f applied.
func patch(b []byte, f func(b []byte)) []byte {
	c := append([]byte(nil), b...)
	f(c)
	return c
}

func TestParseBadInput(t *testing.T) {
	le := binary.LittleEndian
	good := encode(le, []testEntry{
		{name: "a.long", typ: TypeLong, unit: UnitBytes, long: 42},
		{name: "a.string", typ: TypeByte, unit: UnitString, bytes: "hello"},
	})
	if _, err := Parse(good); err != nil {
		t.Fatalf("the well-formed base file does not parse: %v", err)
	}
	const first = prologueSize // offset of the first entry
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"empty (the JVM is creating it)", nil, ErrNotAccessible},
		{"zeros (the JVM has not written the prologue)", make([]byte, 32<<10), ErrNotAccessible},
		{"one byte", []byte{0xca}, ErrTruncated},
		{"short prologue", good[:prologueSize-1], ErrTruncated},
		{"wrong magic", patch(good, func(b []byte) { b[0] = 0xbe }), ErrBadMagic},
		{"magic little-endian", patch(good, func(b []byte) { binary.LittleEndian.PutUint32(b, magic) }), ErrBadMagic},
		{"byte order 2", patch(good, func(b []byte) { b[4] = 2 }), ErrMalformed},
		{"major version 1", patch(good, func(b []byte) { b[5] = 1 }), ErrUnsupportedVersion},
		{"minor version 1", patch(good, func(b []byte) { b[6] = 1 }), ErrUnsupportedVersion},
		{"not accessible", patch(good, func(b []byte) { b[7] = 0 }), ErrNotAccessible},
		{"used past the end", patch(good, func(b []byte) { le.PutUint32(b[8:], uint32(len(b)+1)) }), ErrTruncated},
		{"used huge", patch(good, func(b []byte) { le.PutUint32(b[8:], 0xffffffff) }), ErrTruncated},
		{"used inside prologue", patch(good, func(b []byte) { le.PutUint32(b[8:], 8) }), ErrMalformed},
		{"entry_offset inside prologue", patch(good, func(b []byte) { le.PutUint32(b[24:], 4) }), ErrMalformed},
		{"entry_offset huge", patch(good, func(b []byte) { le.PutUint32(b[24:], 0xfffffff0) }), ErrMalformed},
		{"num_entries huge", patch(good, func(b []byte) { le.PutUint32(b[28:], 0xffffffff) }), ErrMalformed},
		{"num_entries above the cap in a big file", func() []byte {
			b := make([]byte, prologueSize+(maxEntries+1)*minEntrySize)
			copy(b, good[:prologueSize])
			le.PutUint32(b[8:], uint32(len(b)))
			le.PutUint32(b[28:], maxEntries+1)
			return b
		}(), ErrMalformed},
		{"num_entries one too many", patch(good, func(b []byte) { le.PutUint32(b[28:], 3) }), ErrTruncated},
		{"entry_length 0", patch(good, func(b []byte) { le.PutUint32(b[first:], 0) }), ErrMalformed},
		{"entry_length below header", patch(good, func(b []byte) { le.PutUint32(b[first:], entryHeaderSize-1) }), ErrMalformed},
		{"entry_length huge", patch(good, func(b []byte) { le.PutUint32(b[first:], 0xffffffff) }), ErrMalformed},
		{"name_offset inside header", patch(good, func(b []byte) { le.PutUint32(b[first+4:], 3) }), ErrMalformed},
		{"name_offset huge", patch(good, func(b []byte) { le.PutUint32(b[first+4:], 0x7fffffff) }), ErrMalformed},
		{"data_offset huge", patch(good, func(b []byte) { le.PutUint32(b[first+16:], 0xffffffff) }), ErrMalformed},
		{"data_offset before name", patch(good, func(b []byte) { le.PutUint32(b[first+16:], entryHeaderSize-1) }), ErrMalformed},
		{"name not NUL-terminated", patch(good, func(b []byte) {
			for i := first + entryHeaderSize; i < first+32; i++ {
				b[i] = 'x'
			}
		}), ErrMalformed},
		{"empty name", patch(good, func(b []byte) { b[first+entryHeaderSize] = 0 }), ErrMalformed},
		{"long cut short", patch(good, func(b []byte) { le.PutUint32(b[first+16:], 36) }), ErrMalformed},
		{"vector_length huge", patch(good, func(b []byte) { le.PutUint32(b[first+40+8:], 0xffffffff) }), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.input)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse = %v, %v; want error %v", s, err, tt.want)
			}
			if s != nil {
				t.Errorf("Parse returned a snapshot with error %v", err)
			}
		})
	}
}

// Every strict prefix of a real file is an error, never a panic. The
// fixtures are trimmed to the prologue's "used", so each prefix lost data.
func TestParseEveryPrefix(t *testing.T) {
	for _, f := range fixtures {
		b := readFixture(t, f.name)
		for n := 0; n < len(b); n++ {
			if s, err := Parse(b[:n:n]); err == nil {
				t.Fatalf("%s: prefix of %d/%d bytes parsed to %d entries", f.name, n, len(b), len(s.Entries))
			}
		}
		// The JVM's own file is 32 KiB with zeros after "used": also fine.
		padded := append(append([]byte(nil), b...), make([]byte, 32<<10-len(b))...)
		if _, err := Parse(padded); err != nil {
			t.Errorf("%s padded to 32 KiB: %v", f.name, err)
		}
	}
}

// Random bytes, and a real file with random bytes changed, never panic;
// random bytes fail.
func TestParseRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.IntN(4096))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if _, err := Parse(b); err == nil {
			t.Fatalf("random bytes %x parsed", b)
		}
		// The same with a valid prologue start, to get past the magic.
		if len(b) >= 8 {
			copy(b, []byte{0xca, 0xfe, 0xc0, 0xc0, 1, 2, 0, 1})
			if s, err := Parse(b); err == nil {
				_, _ = s.Stats()
			}
		}
	}
	orig := readFixture(t, "g1")
	for i := 0; i < 2000; i++ {
		b := append([]byte(nil), orig...)
		for k := rng.IntN(8) + 1; k > 0; k-- {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		if s, err := Parse(b); err == nil {
			_, _ = s.Stats() // must not panic either
		}
	}
}

// An entry the JVM has allocated but not finished writing (data_offset is
// the last header field it writes) ends the snapshot instead of failing it.
func TestParseEntryInProgress(t *testing.T) {
	b := readFixture(t, "g1")
	orig := mustParse(t, b)
	last := len(b) - entryLength(t, b, len(orig.Entries)-1)
	tests := []struct {
		name  string
		clear func(b []byte) // what the JVM has not written yet
	}{
		{"nothing written", func(b []byte) { clear(b[last:]) }},
		{"name and entry_length written", func(b []byte) { clear(b[last+4 : last+entryHeaderSize]) }},
		{"all but data_offset", func(b []byte) { clear(b[last+16 : last+20]) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(patch(b, tt.clear))
			if err != nil {
				t.Fatal(err)
			}
			if s.Pending != 1 || len(s.Entries) != len(orig.Entries)-1 {
				t.Errorf("Pending %d, %d entries; want 1, %d", s.Pending, len(s.Entries), len(orig.Entries)-1)
			}
			if _, err := s.Stats(); err != nil {
				t.Errorf("Stats: %v", err)
			}
		})
	}
}

// entryLength returns the length of entry i of a little-endian file.
func entryLength(t *testing.T, b []byte, i int) int {
	t.Helper()
	off := prologueSize
	for ; i > 0; i-- {
		off += int(binary.LittleEndian.Uint32(b[off:]))
	}
	return int(binary.LittleEndian.Uint32(b[off:]))
}
