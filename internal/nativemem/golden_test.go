package nativemem

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
)

var update = flag.Bool("update", false, "rewrite testdata's golden files from the fixtures")

// fixture is a real JVM's smaps with its hsperfdata and NMT summary,
// captured together by testdata/capture.sh.
type fixture struct {
	smaps  []byte
	ms     []Mapping
	layout Layout
	nmt    nmtSummary
}

func loadFixture(t testing.TB, name string) fixture {
	t.Helper()
	var fx fixture
	var err error
	if fx.smaps, err = os.ReadFile("testdata/" + name + ".smaps"); err != nil {
		t.Fatal(err)
	}
	if fx.ms, err = ParseSmaps(fx.smaps, nil); err != nil {
		t.Fatal(err)
	}
	perf, err := os.ReadFile("testdata/" + name + ".hsperf")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := hsperf.Parse(perf)
	if err != nil {
		t.Fatal(err)
	}
	st, err := snap.Stats()
	if err != nil {
		t.Fatal(err)
	}
	fx.layout = LayoutOf(&st)
	text, err := os.ReadFile("testdata/" + name + ".nmt.txt")
	if err != nil {
		t.Fatal(err)
	}
	if fx.nmt, err = parseNMT(string(text)); err != nil {
		t.Fatal(err)
	}
	return fx
}

// formatGolden writes the layout and the breakdown one value a line.
func formatGolden(l Layout, b Breakdown) []byte {
	var w bytes.Buffer
	w.WriteString("# Classify(g1-200threads.smaps, LayoutOf(g1-200threads.hsperf)), bytes.\n")
	w.WriteString("# Regenerate with capture.sh, or go test ./internal/nativemem -run TestGoldenFixture -update\n")
	fmt.Fprintf(&w, "layout.heap_reserved %d\n", l.HeapReserved)
	fmt.Fprintf(&w, "layout.class_space_reserved %d\n", l.ClassSpaceReserved)
	fmt.Fprintf(&w, "layout.metaspace_committed %d\n", l.MetaspaceCommitted)
	for r := Region(0); r < NumRegions; r++ {
		fmt.Fprintf(&w, "%s %d\n", r, b[r])
	}
	fmt.Fprintf(&w, "total %d\n", b.Total())
	return w.Bytes()
}

func parseGolden(t testing.TB, data []byte) map[string]uint64 {
	t.Helper()
	vals := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		n, err := strconv.ParseUint(v, 10, 64)
		if !ok || err != nil {
			t.Fatalf("golden line %q", line)
		}
		vals[k] = n
	}
	return vals
}

// TestGoldenFixture classifies a real JVM's smaps (G1, -Xmx512m, 200
// sleeping threads) and compares every region with the golden file, then
// checks the breakdown against what the JVM's own Native Memory Tracking
// said of the same process a moment later.
func TestGoldenFixture(t *testing.T) {
	fx := loadFixture(t, "g1-200threads")
	b := Classify(fx.ms, fx.layout)
	got := formatGolden(fx.layout, b)
	const golden = "testdata/g1-200threads.golden"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantText, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	want, have := parseGolden(t, wantText), parseGolden(t, got)
	for k, v := range want {
		if have[k] != v {
			t.Errorf("%s = %d (%s), golden %d (%s)", k, have[k], human(have[k]), v, human(v))
		}
	}
	if len(want) != len(have) {
		t.Errorf("golden has %d values, the breakdown %d", len(want), len(have))
	}

	t.Run("sanity", func(t *testing.T) {
		// Every resident byte is counted once: no ZGC views here.
		if rss := sumRss(t, fx.smaps); b.Total() != rss {
			t.Errorf("Total() = %d, the smaps' Rss lines add up to %d", b.Total(), rss)
		}
		// The layout is the JVM's: -Xmx512m, the default 1 GiB class space.
		if fx.layout.HeapReserved != 512*mib || fx.layout.ClassSpaceReserved != gib || fx.layout.MetaspaceCommitted == 0 {
			t.Errorf("layout = %+v", fx.layout)
		}
		nmt := fx.nmt
		if n := nmt["Thread"].Threads; n < 200 {
			t.Errorf("NMT counts %d threads, want 200 and more", n)
		}
		// A region holds resident bytes, NMT's categories committed ones,
		// resident or not: no region exceeds its category, and each holds
		// something.
		for _, c := range []struct {
			r     Region
			limit uint64
			what  string
		}{
			{Heap, nmt["Java Heap"].Committed, "Java Heap committed"},
			{Metaspace, nmt.metaspace(), "Metaspace committed + class space committed"},
			{CodeCache, nmt["Code"].MmapCommitted, "Code mmap committed"},
			{GC, nmt["GC"].MmapCommitted, "GC mmap committed"},
			{ThreadStacks, nmt["Thread"].StackCommitted, "Thread stack committed"},
		} {
			if b[c.r] == 0 || b[c.r] > c.limit {
				t.Errorf("%s = %s, NMT %s = %s: want (0, NMT]", c.r, human(b[c.r]), c.what, human(c.limit))
			}
		}
		// Each of 200 sleeping threads has some stack resident, and the
		// stacks are most of what NMT counts (NMT also counts each Java
		// thread's 16 KiB guard zone as committed).
		if b[ThreadStacks] < 200*8*kib || b[ThreadStacks] < nmt["Thread"].StackCommitted*3/4 {
			t.Errorf("thread_stacks = %s, NMT Thread stack committed = %s", human(b[ThreadStacks]), human(nmt["Thread"].StackCommitted))
		}
		// Metaspace: at least what the JVM reports committed outside the
		// class space, as hsperfdata says and NMT agrees.
		if b[Metaspace] < fx.layout.MetaspaceCommitted {
			t.Errorf("metaspace = %s < the layout's %s", human(b[Metaspace]), human(fx.layout.MetaspaceCommitted))
		}
		// glibc's arenas hold what NMT saw malloc'd (most of it touched)
		// and more; the JVM's libraries and CDS archive are mapped.
		if b[Malloc] < nmt["Total"].Malloc/2 {
			t.Errorf("malloc = %s, NMT malloc total %s", human(b[Malloc]), human(nmt["Total"].Malloc))
		}
		if b[SharedLibraries] < 10*mib {
			t.Errorf("shared_libraries = %s: libjvm.so and the CDS archive alone are more", human(b[SharedLibraries]))
		}
		// The JVM's resident memory is what NMT says committed, but for
		// what it commits and never touches (most of an idle heap) and what
		// it does not track (libraries, libc's own malloc).
		if b.Total() > nmt["Total"].Committed+b[SharedLibraries]+b[Malloc] {
			t.Errorf("Total() = %s, more than NMT's committed %s plus libraries and malloc", human(b.Total()), human(nmt["Total"].Committed))
		}
	})
}
