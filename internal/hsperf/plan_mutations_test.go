package hsperf

import (
	"testing"
)

// mutation is something that may happen to a file between two reads.
type mutation struct {
	name   string
	mutate func(b []byte) []byte
	fast   *bool // whether a Plan may skip the entries it knows; nil: either
}

var (
	fast = func() *bool { v := true; return &v }()
	full = func() *bool { v := false; return &v }()
)

// located is an entry of a little-endian file and where its parts lie.
type located struct {
	off, data int
	name      string
	typ       Type
	scalar    bool
	target    target
}

func locate(t testing.TB, b []byte) []located {
	t.Helper()
	var s Snapshot
	order, off, num, err := prologue(b, &s)
	if err != nil {
		t.Fatal(err)
	}
	b = b[:s.Used]
	var out []located
	for i := 0; i < int(num) && !inProgress(b, off, order); i++ {
		var e Entry
		n, err := parseEntry(b, string(b), off, order, &e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, located{
			off: off, data: off + int(order.Uint32(b[off+16:])), name: e.Name, typ: e.Type,
			scalar: e.Type == TypeLong && order.Uint32(b[off+8:]) == 0, target: targetOf(e.Name),
		})
		off += n
	}
	return out
}

// appendEntries writes es after the file's last entry, as HotSpot adds a
// counter: used and num_entries grow.
func appendEntries(b []byte, es ...testEntry) []byte {
	for _, e := range es {
		used := binaryLE.Uint32(b[8:])
		ent := encodeEntry(binaryLE, e)
		copy(b[used:], ent)
		binaryLE.PutUint32(b[8:], used+uint32(len(ent)))
		binaryLE.PutUint32(b[28:], binaryLE.Uint32(b[28:])+1)
	}
	return b
}

// mutations of first, a padded little-endian fixture.
func mutations(t testing.TB, first []byte) []mutation {
	es := locate(t, first)
	used := int(binaryLE.Uint32(first[8:]))
	find := func(name string) located {
		for _, e := range es {
			if e.name == name {
				return e
			}
		}
		t.Fatalf("no entry %s", name)
		return located{}
	}
	var unread located // an entry Stats does not read
	for _, e := range es {
		if e.target.kind == noTarget && e.scalar {
			unread = e
			break
		}
	}
	freq, cmd := find("sun.os.hrt.frequency"), find("sun.rt.javaCommand")
	var unreadString located // as sun.ci.lastMethod, rewritten by the JIT
	for _, e := range es {
		if e.target.kind == noTarget && e.typ == TypeByte {
			unreadString = e
			break
		}
	}
	longs := func(f func(v int64) int64) func(b []byte) []byte {
		return func(b []byte) []byte {
			for _, e := range es {
				if e.scalar {
					binaryLE.PutUint64(b[e.data:], uint64(f(int64(binaryLE.Uint64(b[e.data:])))))
				}
			}
			return b
		}
	}
	at := func(off int, f func(b []byte)) func(b []byte) []byte {
		return func(b []byte) []byte { f(b[off:]); return b }
	}
	appended := func(es ...testEntry) func(b []byte) []byte {
		return func(b []byte) []byte { return appendEntries(b, es...) }
	}
	extra := []testEntry{
		{name: "sun.ci.extra", typ: TypeLong, long: 5},
		{name: "sun.gc.collector.5.name", typ: TypeByte, bytes: "Extra collector"},
		{name: "sun.gc.collector.5.invocations", typ: TypeLong, long: 3},
		{name: "sun.os.hrt.frequency", typ: TypeLong, long: 1000}, // a second one wins
		{name: "sun.os.hrt.ticks", typ: TypeLong, long: 1},        // the first one wins
		{name: "java.rt.vmFlags", typ: TypeByte, bytes: "-XX:MaxMetaspaceSize=64m"},
		{name: "sun.gc.generation.3.space.0.used", typ: TypeLong, long: 7},
	}
	ms := []mutation{
		{"same bytes", func(b []byte) []byte { return b }, fast},
		{"every long rewritten", longs(func(v int64) int64 { return v*3 + 1 }), fast},
		{"every long negative", longs(func(v int64) int64 { return -v - 1 }), fast},
		{"every long zero", longs(func(int64) int64 { return 0 }), fast},
		{"prologue's timestamp and overflow", at(12, func(b []byte) { b[0], b[4] = 1, 1 }), fast},
		{"entries appended", appended(extra...), fast},
		{"entry appended, not finished", func(b []byte) []byte {
			appendEntries(b, extra[0])
			clear(b[used+16 : used+20]) // data_offset
			return b
		}, fast},
		{"entry appended, malformed", func(b []byte) []byte {
			appendEntries(b, extra[1])
			binaryLE.PutUint32(b[used:], 3) // entry_length
			return b
		}, fast},
		{"num_entries one past the entries", at(28, func(b []byte) { b[0]++ }), fast},
		{"num_entries shrunk", at(28, func(b []byte) { b[0]-- }), full},
		{"num_entries zero", at(28, func(b []byte) { clear(b[:4]) }), full},
		{"used shrunk by one", at(8, func(b []byte) { binaryLE.PutUint32(b, uint32(used-1)) }), full},
		{"used shrunk to the prologue", at(8, func(b []byte) { binaryLE.PutUint32(b, prologueSize) }), full},
		{"used past the file", at(8, func(b []byte) { binaryLE.PutUint32(b, 1<<20) }), full},
		{"entry_offset moved", at(24, func(b []byte) { b[0] += 8 }), full},
		{"byte order", at(4, func(b []byte) { b[0] = byteOrderBig }), full},
		{"version", at(6, func(b []byte) { b[0] = 1 }), full},
		{"not accessible", at(7, func(b []byte) { b[0] = 0 }), full},
		{"magic", at(0, func(b []byte) { b[3] = 0 }), full},
		{"truncated before used", func(b []byte) []byte { return b[:used-1] }, full},
		{"truncated to the prologue", func(b []byte) []byte { return b[:prologueSize] }, full},
		{"truncated in the prologue", func(b []byte) []byte { return b[:prologueSize-1] }, full},
		{"empty", func(b []byte) []byte { return b[:0] }, full},
		{"zeros", func(b []byte) []byte { clear(b); return b }, full},
		{"an unread string rewritten", at(unreadString.data, func(b []byte) { b[0] ^= 1 }), fast},
		{"a string value", at(cmd.data, func(b []byte) { b[0] ^= 1 }), full},
		{"a string cut short", at(cmd.data, func(b []byte) { b[2] = 0 }), full},
	}
	for _, e := range []located{freq, unread} {
		kind := "read"
		if e.target.kind == noTarget {
			kind = "unread"
		}
		header := func(name string, f func(h []byte)) mutation {
			return mutation{kind + " entry's " + name, at(e.off, f), full}
		}
		ms = append(ms,
			header("entry_length", func(h []byte) { h[0] += 8 }),
			header("entry_length zero", func(h []byte) { clear(h[0:4]) }),
			header("name_offset", func(h []byte) { h[4]++ }),
			header("vector_length", func(h []byte) { h[8] = 1 }),
			header("type B", func(h []byte) { h[12] = byte(TypeByte) }),
			header("type I", func(h []byte) { h[12] = 'I' }),
			header("flags", func(h []byte) { h[13] ^= 1 }),
			header("units", func(h []byte) { h[14]++ }),
			header("variability", func(h []byte) { h[15]++ }),
			header("data_offset", func(h []byte) { h[16] += 8 }),
			header("data_offset zero", func(h []byte) { clear(h[16:20]) }),
			header("name", func(h []byte) { h[entryHeaderSize+len(e.name)-1]++ }),
			header("name's NUL", func(h []byte) { h[entryHeaderSize+len(e.name)] = 'x' }),
			header("name cut short", func(h []byte) { h[entryHeaderSize+4] = 0 }),
		)
	}
	return ms
}
