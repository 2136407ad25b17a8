package hsperf

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fixtures are real hsperfdata files of JDK 17.0.15 JVMs running
// testdata/Alloc.java, captured with testdata/capture.sh together with
// jstat -gc and -class: one per collector with -Xmx64m, as the live tests
// run them, and g1-large with -Xms5g -Xmx6g, whose old generation commits
// more than 4 GiB: a 64-bit counter read as 32 bits wraps there, and the
// golden and jstat comparisons fail.
var fixtures = []struct {
	name, flag string
	live       bool // TestLiveAgainstJstat runs it (the -Xmx64m ones)
}{
	{"g1", "-XX:+UseG1GC", true},
	{"parallel", "-XX:+UseParallelGC", true},
	{"serial", "-XX:+UseSerialGC", true},
	{"z", "-XX:+UseZGC", true},
	{"shenandoah", "-XX:+UseShenandoahGC", true},
	{"g1-large", "-XX:+UseG1GC", false},
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".hsperf"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t testing.TB, b []byte) *Snapshot {
	t.Helper()
	s, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// jstatTable is jstat's output as column -> value; a column jstat prints
// as "-" (not applicable to the collector) is absent.
type jstatTable map[string]float64

// parseJstat reads one or more jstat tables (a header line, then a value
// line each).
func parseJstat(t testing.TB, out string) jstatTable {
	t.Helper()
	cols := jstatTable{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines)%2 != 0 {
		t.Fatalf("jstat output is not header/value pairs:\n%s", out)
	}
	for i := 0; i < len(lines); i += 2 {
		head, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(head) != len(vals) {
			t.Fatalf("jstat: %d headers, %d values:\n%s", len(head), len(vals), out)
		}
		for j, h := range head {
			if vals[j] == "-" {
				continue
			}
			v, err := strconv.ParseFloat(vals[j], 64)
			if err != nil {
				t.Fatalf("jstat column %s: %v", h, err)
			}
			if _, dup := cols[h]; !dup { // -class repeats "Bytes"; keep the first
				cols[h] = v
			}
		}
	}
	return cols
}

// kib sums jstat columns (KiB) as bytes; missing columns count 0.
func (j jstatTable) kib(cols ...string) float64 {
	var sum float64
	for _, c := range cols {
		sum += j[c] * 1024
	}
	return sum
}

// jstatRounding is how far a sum of n jstat KiB columns, printed with one
// decimal, may be from the exact byte count.
func jstatRounding(n int) float64 { return float64(n) * 0.05 * 1024 }

// testEntry is an entry to encode into a synthetic file.
type testEntry struct {
	name  string
	typ   Type
	unit  Unit
	long  int64
	bytes string // for TypeByte; written with vector_length len(bytes)+1
}

// encode builds a well-formed version 2.0 file laid out as HotSpot lays it
// out: header, NUL-terminated name, data aligned to 8.
func encode(order binary.ByteOrder, entries []testEntry) []byte {
	b := make([]byte, prologueSize)
	binary.BigEndian.PutUint32(b[0:], magic)
	b[4] = byteOrderLittle
	if order == binary.ByteOrder(binary.BigEndian) {
		b[4] = byteOrderBig
	}
	b[5], b[6], b[7] = supportedMajor, supportedMinor, 1
	order.PutUint64(b[16:], 12345)
	order.PutUint32(b[24:], prologueSize)
	order.PutUint32(b[28:], uint32(len(entries)))
	for _, e := range entries {
		b = append(b, encodeEntry(order, e)...)
	}
	order.PutUint32(b[8:], uint32(len(b)))
	return b
}

// encodeEntry lays e out as HotSpot does: header, NUL-terminated name,
// data aligned to 8.
func encodeEntry(order binary.ByteOrder, e testEntry) []byte {
	nameOff := entryHeaderSize
	dataOff := (nameOff + len(e.name) + 1 + 7) &^ 7
	var data []byte
	vec := 0
	switch e.typ {
	case TypeLong:
		data = make([]byte, 8)
		order.PutUint64(data, uint64(e.long))
	default:
		data = append([]byte(e.bytes), 0)
		vec = len(data)
	}
	length := (dataOff + len(data) + 7) &^ 7
	ent := make([]byte, length)
	order.PutUint32(ent[0:], uint32(length))
	order.PutUint32(ent[4:], uint32(nameOff))
	order.PutUint32(ent[8:], uint32(vec))
	ent[12], ent[13], ent[14], ent[15] = byte(e.typ), 1, byte(e.unit), byte(Variable)
	order.PutUint32(ent[16:], uint32(dataOff))
	copy(ent[nameOff:], e.name)
	copy(ent[dataOff:], data)
	return ent
}

// toTestEntries turns parsed entries back into encode's input. Strings are
// re-encoded without the padding NULs HotSpot leaves after them.
func toTestEntries(es []Entry) []testEntry {
	out := make([]testEntry, len(es))
	for i, e := range es {
		out[i] = testEntry{name: e.Name, typ: e.Type, unit: e.Unit, long: e.Long, bytes: e.String}
	}
	return out
}

var binaryLE = binary.LittleEndian
