package gzipparts

import (
	"bytes"
	"compress/gzip"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/flate"
)

func TestCombineIsTheCRCOfTheConcatenation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {3, 64}, {1000, 1}, {17, 70000}, {1 << 20, 12345}} {
		a, b := make([]byte, n[0]), make([]byte, n[1])
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
		if got := combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), x8nModP(int64(len(b)))); got != want {
			t.Errorf("lengths %v: combine %08x, want %08x", n, got, want)
		}
	}
}

// gunzip reads exactly one member, checking its CRC and size, and fails
// on anything after it.
func gunzip(t *testing.T, z []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	if rest, _ := io.ReadAll(zr); len(rest) > 0 {
		t.Fatalf("%d bytes after the member", len(rest))
	}
	return out
}

func member(t *testing.T, parts ...Part) []byte {
	t.Helper()
	var buf bytes.Buffer
	m := NewMember(&buf)
	for _, p := range parts {
		if err := m.WritePart(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Parts compressed once decompress, in any order and any number of
// members, to their bytes one after the other; a member of no parts is
// an empty file.
func TestMembersOfParts(t *testing.T) {
	level1, err := NewCompressor(flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Compressor{"BestSpeed": level1, "stateless": NewStatelessCompressor()} {
		t.Run(name, func(t *testing.T) { testMembersOfParts(t, c) })
	}
}

func testMembersOfParts(t *testing.T, c *Compressor) {
	texts := []string{
		strings.Repeat(`executor_jvm_memory_used_bytes{app_id="app-1",area="heap",executor_id="1",pid="10",role="executor"} 1.6e+07`+"\n", 300),
		"",
		"x",
		strings.Repeat(`executor_jvm_memory_used_bytes{app_id="app-1",area="heap",executor_id="1",pid="10",role="executor"} 1.6e+07`+"\n", 3),
	}
	random := make([]byte, 100000)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	texts = append(texts, string(random))
	parts := make([]Part, len(texts))
	for i, s := range texts {
		parts[i] = c.Compress([]byte(s))
		if parts[i].Size() != int64(len(s)) {
			t.Errorf("part %d: size %d, want %d", i, parts[i].Size(), len(s))
		}
	}
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {3, 3, 0, 3}, {2}, {1}, {}} {
		var want strings.Builder
		var ps []Part
		for _, i := range order {
			want.WriteString(texts[i])
			ps = append(ps, parts[i])
		}
		if got := gunzip(t, member(t, ps...)); string(got) != want.String() {
			t.Errorf("order %v: got %d bytes, want %d", order, len(got), want.Len())
		}
	}
	if small, whole := parts[0].CompressedSize(), len(texts[0]); small*10 > whole {
		t.Errorf("a repetitive part compressed to %d of %d bytes", small, whole)
	}
}

// A member whose writer fails returns the error, from then on.
func TestMemberKeepsTheFirstError(t *testing.T) {
	c, _ := NewCompressor(flate.BestSpeed)
	m := NewMember(failingWriter{})
	if err := m.WritePart(c.Compress([]byte("abc"))); err == nil {
		t.Fatal("no error from a failing writer")
	}
	if err := m.Close(); err == nil {
		t.Fatal("Close after a failed write: no error")
	}
	var buf bytes.Buffer
	m = NewMember(&buf)
	_ = m.Close()
	if err := m.WritePart(c.Compress([]byte("abc"))); err == nil {
		t.Error("a part after Close: no error")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// Any bytes, cut anywhere into parts, come back whole.
func FuzzMembersOfParts(f *testing.F) {
	f.Add([]byte("executor_jvm_info{pid=\"1\"} 1\n"), uint8(3))
	f.Add([]byte{}, uint8(0))
	level1, _ := NewCompressor(flate.BestSpeed)
	stateless := NewStatelessCompressor()
	f.Fuzz(func(t *testing.T, data []byte, cuts uint8) {
		c := level1
		if cuts%2 == 1 {
			c = stateless
		}
		var parts []Part
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if cuts > 0 {
				n = min(n, int(cuts)*(i%3+1))
			}
			parts = append(parts, c.Compress(rest[:n]))
			rest = rest[n:]
		}
		if got := gunzip(t, member(t, parts...)); !bytes.Equal(got, data) {
			t.Fatalf("got %q, want %q", got, data)
		}
	})
}
