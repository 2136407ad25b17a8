package exposition

import (
	"bytes"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestGzipWritersKeepsUpToItsNumber: a writer put back is the next one
// got, reset to its new destination; more than the kept number are
// dropped; every answer decompresses to what was written.
func TestGzipWritersKeepsUpToItsNumber(t *testing.T) {
	g := newGzipWriters(1)
	var first, second, third bytes.Buffer
	a := g.get(&first)
	b := g.get(&second) // none kept: a new one
	if a == b {
		t.Fatal("two answers at once got the same writer")
	}
	write(t, a, "first answer")
	write(t, b, "second answer")
	g.put(a)
	g.put(b) // over the number kept: dropped
	c := g.get(&third)
	if c != a {
		t.Error("the writer kept is not the next one got")
	}
	write(t, c, "third answer")
	if d := g.get(io.Discard); d == a || d == b {
		t.Error("a writer in use, or one dropped, was got again")
	}
	for buf, want := range map[*bytes.Buffer]string{&first: "first answer", &second: "second answer", &third: "third answer"} {
		r, err := gzip.NewReader(buf)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != want {
			t.Errorf("decompressed %q (%v), want %q", got, err, want)
		}
	}
}

func write(t *testing.T, z *gzip.Writer, s string) {
	t.Helper()
	if _, err := io.WriteString(z, s); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
}
