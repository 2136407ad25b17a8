package hsperf

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse and, when they parse, to the
// lookups and Stats: none may panic, and what Parse accepts must be
// self-consistent. Seeds: the real fixtures, a big-endian re-encoding, and
// small files each broken in one way.
//
//	go test -fuzz=FuzzParse ./internal/hsperf
func FuzzParse(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(readFixture(f, fx.name))
	}
	g1 := mustParse(f, readFixture(f, "g1"))
	f.Add(encode(binary.BigEndian, toTestEntries(g1.Entries)))
	f.Add(encode(binary.LittleEndian, []testEntry{
		{name: "sun.os.hrt.frequency", typ: TypeLong, long: 1e9},
		{name: "sun.gc.generation.0.space.0.used", typ: TypeLong, long: 1},
		{name: "sun.gc.collector.0.name", typ: TypeByte, bytes: "x"},
	}))
	for _, b := range brokenFiles() {
		f.Add(b)
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		checkParseStats(t, b)
		s, err := Parse(b)
		if err != nil {
			if s != nil {
				t.Fatalf("snapshot with error %v", err)
			}
			return
		}
		if uint64(s.Used) > uint64(len(b)) {
			t.Fatalf("used %d beyond %d bytes", s.Used, len(b))
		}
		if len(s.Entries)*minEntrySize > len(b) {
			t.Fatalf("%d entries from %d bytes", len(s.Entries), len(b))
		}
		for _, e := range s.Entries {
			if e.Name == "" {
				t.Fatal("entry with an empty name")
			}
			if got, ok := s.Lookup(e.Name); !ok || got.Name != e.Name {
				t.Fatalf("Lookup(%q) = %+v, %v", e.Name, got, ok)
			}
		}
		st, err := s.Stats()
		if err != nil {
			return
		}
		// Hostile counters may say anything (used above max...); only the
		// sums must hold.
		var used, committed uint64
		for _, p := range st.Pools {
			if p.Area == AreaHeap {
				used += p.Used
				committed += p.Committed
			}
		}
		if used != st.HeapUsed || committed != st.HeapCommitted {
			t.Fatalf("heap pools sum to %d/%d, totals %d/%d", used, committed, st.HeapUsed, st.HeapCommitted)
		}
	})
}

// checkParseStats checks that ParseStats says what Parse and Stats say, and
// keeps nothing of the buffer it read: its result survives the buffer being
// overwritten, read again with itself as prev and the Plan it learned.
func checkParseStats(t *testing.T, b []byte) {
	t.Helper()
	want, wantErr := Parse(b)
	var wantStats Stats
	var wantTicks int64
	if wantErr == nil {
		wantStats, wantErr = want.Stats()
		for _, e := range want.Entries {
			if e.Name == "sun.os.hrt.ticks" && e.Type == TypeLong {
				wantTicks = e.Long
				break
			}
		}
	}
	buf := append([]byte(nil), b...)
	var plan Plan
	got, ticks, err := ParseStats(buf, nil, &plan)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("ParseStats error %v, Parse and Stats %v", err, wantErr)
	}
	if err != nil {
		return
	}
	again, _, err := ParseStats(buf, &got, &plan)
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 0xa5
	}
	if !reflect.DeepEqual(got, wantStats) || ticks != wantTicks {
		t.Fatalf("ParseStats = %+v, ticks %d\nParse, Stats = %+v, ticks %d", got, ticks, wantStats, wantTicks)
	}
	if !reflect.DeepEqual(again, wantStats) {
		t.Fatalf("ParseStats with prev = %+v\nwant %+v", again, wantStats)
	}
}

// brokenFiles are small files, each wrong in one place: the prologue alone,
// a JVM that is not accessible yet, an entry count past the end, and an
// entry whose length is zero, whose name has no NUL, or whose vector runs
// past the entry.
func brokenFiles() [][]byte {
	le := binary.LittleEndian
	one := func(e testEntry, breakIt func(b []byte)) []byte {
		b := encode(le, []testEntry{e})
		breakIt(b[prologueSize:])
		return b
	}
	long := testEntry{name: "sun.os.hrt.frequency", typ: TypeLong, long: 1e9}
	str := testEntry{name: "sun.rt.javaCommand", typ: TypeByte, bytes: "Alloc"}
	return [][]byte{
		encode(le, nil),
		func() []byte { b := encode(le, nil); b[7] = 0; return b }(), // accessible = 0
		func() []byte { b := encode(le, nil); le.PutUint32(b[28:], 0xffffffff); return b }(),
		one(long, func(e []byte) { le.PutUint32(e[0:], 0) }),
		one(long, func(e []byte) { // the name runs into the data: no NUL
			for i := entryHeaderSize; i < int(le.Uint32(e[16:])); i++ {
				e[i] = 'x'
			}
		}),
		one(str, func(e []byte) { le.PutUint32(e[8:], 1<<20) }),
	}
}
