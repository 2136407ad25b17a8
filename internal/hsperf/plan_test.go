package hsperf

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// A re-read with a Plan must say exactly what a full parse of the same bytes
// says, whatever happened to the file in between; and for what a live JVM
// does to its file (values rewritten, entries appended) it must take the
// fast path, or the Plan saves nothing.
func TestPlanMatchesFullParse(t *testing.T) {
	for _, fx := range fixtures {
		first := padded(readFixture(t, fx.name))
		for _, m := range mutations(t, first) {
			t.Run(fx.name+"/"+m.name, func(t *testing.T) {
				second := m.mutate(bytes.Clone(first))
				if fast := reread(t, first, second); m.fast != nil && fast != *m.fast {
					t.Errorf("fast path taken: %v, want %v", fast, *m.fast)
				}
			})
		}
	}
}

// Every byte of a file changed in turn: the Plan either sees the change or
// it is one that cannot change the result.
func TestPlanEveryByteChanged(t *testing.T) {
	for _, fx := range fixtures {
		first := readFixture(t, fx.name)
		step := 1
		if fx.name != "g1" {
			step = 7 // the same entries in other layouts; a prime, to vary the position in each
		}
		for i := 0; i < len(first); i += step {
			second := bytes.Clone(first)
			second[i] ^= 0x5a
			reread(t, first, second)
		}
	}
}

// A Plan learned from a read that failed, or used on a file it did not
// come from, must not mislead the next read.
func TestPlanSequences(t *testing.T) {
	g1, z := padded(readFixture(t, "g1")), padded(readFixture(t, "z"))
	corrupt := bytes.Clone(g1)
	binaryLE.PutUint32(corrupt[prologueSize:], 1) // first entry_length
	seqs := map[string][][]byte{
		"good, corrupt, good":      {g1, corrupt, g1},
		"truncated, good":          {g1[:len(g1)/2], g1},
		"another JVM's file":       {g1, z, g1},
		"good, empty, good":        {g1, nil, g1},
		"same file three times":    {g1, g1, g1},
		"corrupt, corrupt, good":   {corrupt, corrupt, g1},
		"big-endian, little again": {bigEndian(t, g1), g1},
	}
	for name, seq := range seqs {
		t.Run(name, func(t *testing.T) {
			var plan Plan
			var prev Stats
			for _, b := range seq {
				if st, err := checkAgainstFull(t, b, &prev, &plan); err == nil {
					prev = st
				}
			}
		})
	}
}

// reread learns a Plan from first, reads second with it and checks the
// result against a full parse of second; then reads second once more,
// which must take the fast path if it parsed. It reports whether the read
// of second took the fast path.
func reread(t testing.TB, first, second []byte) bool {
	t.Helper()
	var plan Plan
	prev, _, _ := ParseStats(first, nil, &plan)
	fast := resumes(&plan, second)
	st, err := checkAgainstFull(t, second, &prev, &plan)
	if err != nil {
		return fast
	}
	if !resumes(&plan, second) {
		t.Fatal("the Plan learned from a file does not resume on the same bytes")
	}
	if _, err := checkAgainstFull(t, second, &st, &plan); err != nil {
		t.Fatalf("second read of the same bytes: %v", err)
	}
	return fast
}

// checkAgainstFull reads b with prev and plan, from a buffer overwritten
// afterwards, and compares with ParseStats without either.
func checkAgainstFull(t testing.TB, b []byte, prev *Stats, plan *Plan) (Stats, error) {
	t.Helper()
	want, wantTicks, wantErr := ParseStats(b, nil, nil)
	buf := bytes.Clone(b)
	got, ticks, err := ParseStats(buf, prev, plan)
	for i := range buf {
		buf[i] = 0xa5
	}
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("with a Plan: error %v; full parse: %v", err, wantErr)
	}
	if !reflect.DeepEqual(got, want) || ticks != wantTicks {
		t.Fatalf("with a Plan: %+v, ticks %d\nfull parse: %+v, ticks %d", got, ticks, want, wantTicks)
	}
	return got, err
}

// resumes reports whether ParseStats would take the fast path for b with a
// copy of p.
func resumes(p *Plan, b []byte) bool {
	var s Snapshot
	order, off, num, err := prologue(b, &s)
	if err != nil {
		return false
	}
	q := *p
	b = b[:s.Used]
	var c counters
	_, _, ok := q.resume(b, string(b), order, off, num, s.Used, &c)
	return ok
}

// padded is a fixture as the JVM maps it: 32 KiB, zeros after used, room
// for entries to be appended.
func padded(b []byte) []byte {
	return append(bytes.Clone(b), make([]byte, 32<<10-len(b))...)
}

// bigEndian re-encodes a little-endian file's entries big-endian.
func bigEndian(t testing.TB, b []byte) []byte {
	return encode(binary.BigEndian, toTestEntries(mustParse(t, b).Entries))
}

// FuzzParseStatsPlan reads a first file, then a second with the Plan
// learned from the first: the result must be a full parse's of the second.
//
//	go test -fuzz=FuzzParseStatsPlan ./internal/hsperf
func FuzzParseStatsPlan(f *testing.F) {
	g1 := padded(readFixture(f, "g1"))
	for _, m := range mutations(f, g1) {
		f.Add(g1, m.mutate(bytes.Clone(g1)))
	}
	small := encode(binaryLE, []testEntry{
		{name: "sun.os.hrt.frequency", typ: TypeLong, long: 1e9},
		{name: "sun.gc.generation.0.space.0.used", typ: TypeLong, long: 1},
	})
	more := encode(binaryLE, []testEntry{
		{name: "sun.os.hrt.frequency", typ: TypeLong, long: 1e9},
		{name: "sun.gc.generation.0.space.0.used", typ: TypeLong, long: 2},
		{name: "sun.gc.collector.0.name", typ: TypeByte, bytes: "x"},
	})
	f.Add(small, more)
	f.Add(more, small)
	f.Fuzz(func(t *testing.T, first, second []byte) {
		reread(t, first, second)
	})
}
