package nativemem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Two mappings as a 6.x kernel writes them, with every field ParseSmaps
// skips.
const realSmaps = `e0000000-f7a00000 rw-p 00000000 00:00 0 
Size:             387072 kB
KernelPageSize:        4 kB
MMUPageSize:           4 kB
Rss:                 528 kB
Pss:                 528 kB
Pss_Dirty:           528 kB
Shared_Clean:          0 kB
Shared_Dirty:          0 kB
Private_Clean:         0 kB
Private_Dirty:       528 kB
Referenced:          528 kB
Anonymous:           528 kB
KSM:                   0 kB
LazyFree:              0 kB
AnonHugePages:         0 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:       0 kB
Swap:                  0 kB
SwapPss:               0 kB
Locked:                0 kB
THPeligible:           0
ProtectionKey:         0
VmFlags: rd wr mr mw me ac sd 
f7a00000-ffe00000 ---p 00000000 00:00 0 
Size:             135168 kB
Rss:                   0 kB
VmFlags: mr mw me nr sd 
7ffb2cfc0000-7ffb2cfc7000 r--s 00001000 fd:01 1835213                    /usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache
Size:                 28 kB
Rss:                  28 kB
VmFlags: rd sh mr mw me ms sd 
7ffb2d00c000-7ffb2d014000 rw-s 00000000 103:02 2097170                   /tmp/hsperfdata_root/9204
Rss:                  32 kB
VmFlags: rd wr sh mr mw me ms sd 
7ffb2d25a000-7ffb2d25c000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   4 kB
VmFlags: rd ex mr mw me de sd 
7f0000000000-7f0000001000 rw-p 00000000 00:00 0                          /tmp/spill dir/part 1.bin (deleted)
Rss:                   4 kB
`

func TestParseSmaps(t *testing.T) {
	ms, err := ParseSmaps([]byte(realSmaps), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0xe0000000, End: 0xf7a00000, Read: true, Write: true, Rss: 528 << 10},
		{Start: 0xf7a00000, End: 0xffe00000, NoReserve: true},
		{Start: 0x7ffb2cfc0000, End: 0x7ffb2cfc7000, Read: true, Shared: true, Offset: 0x1000, Dev: 0xfd<<32 | 1, Inode: 1835213,
			Path: "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache", Rss: 28 << 10},
		{Start: 0x7ffb2d00c000, End: 0x7ffb2d014000, Read: true, Write: true, Shared: true, Dev: 0x103<<32 | 2, Inode: 2097170,
			Path: "/tmp/hsperfdata_root/9204", Rss: 32 << 10},
		{Start: 0x7ffb2d25a000, End: 0x7ffb2d25c000, Read: true, Exec: true, Path: "[vdso]", Rss: 4 << 10},
		// A path with spaces, and no VmFlags line (kernels before 3.8).
		{Start: 0x7f0000000000, End: 0x7f0000001000, Read: true, Write: true, Path: "/tmp/spill dir/part 1.bin (deleted)", Rss: 4 << 10},
	}
	if len(ms) != len(want) {
		t.Fatalf("ParseSmaps: %d mappings, want %d:\n%s", len(ms), len(want), dumpMappings(ms))
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("mapping %d:\n got %+v\nwant %+v", i, ms[i], want[i])
		}
	}
	if ms[0].Size() != 387072<<10 {
		t.Errorf("Size() = %d", ms[0].Size())
	}
	for i, anon := range []bool{true, true, false, false, true, false} {
		if ms[i].Anonymous() != anon {
			t.Errorf("mapping %d (%q): Anonymous() = %v", i, ms[i].Path, !anon)
		}
	}
}

// VmFlags' "nr" is a whole flag, not a part of another.
func TestParseSmapsNoReserveFlag(t *testing.T) {
	for flags, want := range map[string]bool{
		"VmFlags: rd wr mr mw me nr sd":  true,
		"VmFlags: nr":                    true,
		"VmFlags:nr":                     true,
		"VmFlags: rd wr mr mw me ac":     false,
		"VmFlags: rd wr mr mw me ac nrx": false,
		"VmFlags: rd wr mr mw me ac xnr": false,
		"VmFlags:":                       false,
	} {
		ms, err := ParseSmaps([]byte("1000-2000 rw-p 00000000 00:00 0\nRss: 4 kB\n"+flags+"\n"), nil)
		if err != nil {
			t.Fatalf("%q: %v", flags, err)
		}
		if ms[0].NoReserve != want {
			t.Errorf("%q: NoReserve = %v, want %v", flags, ms[0].NoReserve, want)
		}
	}
}

// ParseSmaps reuses the slice it is given.
func TestParseSmapsReuses(t *testing.T) {
	buf := make([]Mapping, 0, 16)
	ms, err := ParseSmaps([]byte(realSmaps), buf)
	if err != nil {
		t.Fatal(err)
	}
	if &ms[0] != &buf[:1][0] {
		t.Error("ParseSmaps did not reuse the slice's storage")
	}
	ms2, err := ParseSmaps([]byte("1000-2000 rw-p 00000000 00:00 0\nRss: 4 kB\n"), ms)
	if err != nil || len(ms2) != 1 || ms2[0].Rss != 4<<10 || ms2[0].NoReserve || ms2[0].Path != "" {
		t.Errorf("second parse into the same slice = %+v, %v", ms2, err)
	}
	if ms, err := ParseSmaps(nil, nil); err != nil || len(ms) != 0 {
		t.Errorf("ParseSmaps(empty) = %v, %v", ms, err)
	}
}

func TestParseSmapsMalformed(t *testing.T) {
	const ok = "1000-2000 rw-p 00000000 00:00 0\n"
	cases := map[string]string{
		"address not hex":           "zzzz-2000 rw-p 00000000 00:00 0\n",
		"end not hex":               "1000-zz rw-p 00000000 00:00 0\n",
		"end before start":          "2000-1000 rw-p 00000000 00:00 0\n",
		"no inode":                  "1000-2000 rw-p 00000000 00:00\n",
		"only an address":           "1000-2000\n",
		"permissions too long":      "1000-2000 rw-pp 00000000 00:00 0\n",
		"permissions too short":     "1000-2000 rw- 00000000 00:00 0\n",
		"offset not hex":            "1000-2000 rw-p 0000000g 00:00 0\n",
		"device without colon":      "1000-2000 rw-p 00000000 0000 0\n",
		"device not hex":            "1000-2000 rw-p 00000000 zz:00 0\n",
		"minor not hex":             "1000-2000 rw-p 00000000 00:zz 0\n",
		"inode not decimal":         "1000-2000 rw-p 00000000 00:00 x\n",
		"negative inode":            "1000-2000 rw-p 00000000 00:00 -1\n",
		"Rss before any mapping":    "Rss: 4 kB\n" + ok,
		"VmFlags before a mapping":  "VmFlags: rd wr nr\n" + ok,
		"Rss not a number":          ok + "Rss: many kB\n",
		"Rss negative":              ok + "Rss: -4 kB\n",
		"Rss empty":                 ok + "Rss:\n",
		"Rss beyond 16 PiB":         ok + "Rss: 17592186044417 kB\n",
		"bad header after good one": ok + "Rss: 4 kB\n" + "1000-2000 rw-p 00000000 00:00 0 \n" + "3000-zzzz r--p 0 00:00 0\n",
	}
	for name, text := range cases {
		ms, err := ParseSmaps([]byte(text), nil)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ParseSmaps(%q) = %d mappings, %v; want ErrMalformed", name, text, len(ms), err)
		}
	}
	// The boundaries just inside.
	for name, text := range map[string]string{
		"Rss of 16 PiB":       ok + "Rss: 17592186044416 kB\n",
		"empty mapping":       "1000-1000 ---p 00000000 00:00 0\n",
		"no trailing newline": ok + "Rss: 4 kB",
		"CRLF-free blank":     ok + "\n\n" + "Rss: 4 kB\n",
	} {
		if _, err := ParseSmaps([]byte(text), nil); err != nil {
			t.Errorf("%s: ParseSmaps(%q) = %v", name, text, err)
		}
	}
}

// Any path the kernel prints parses: up to PATH_MAX-1 (4095) bytes, and
// the kernel writes a newline in a file's name as "\012" (seq_path's
// escape), so a header can hold four times that. A file whose name a job
// chose must not make the whole breakdown fail.
func TestParseSmapsLongestPath(t *testing.T) {
	plain := "/" + strings.Repeat("a", 4094)
	escaped := "/" + strings.Repeat(`\012`, 4094)
	for name, path := range map[string]string{"4095 bytes": plain, "4095 bytes of newlines": escaped} {
		text := smapsText(anonBase, file(path, 4*kib, 4*kib, "r--p", 7), rw(mib, mib))
		ms, err := ParseSmaps(text, nil)
		if err != nil {
			t.Errorf("%s: ParseSmaps: %v", name, err)
			continue
		}
		if len(ms) != 2 || ms[0].Path != path || ms[1].Rss != mib {
			t.Errorf("%s: ParseSmaps = %d mappings, path of %d bytes", name, len(ms), len(ms[0].Path))
		}
	}
}

// At most MaxMappings mappings: one more is an error, not a breakdown.
func TestParseSmapsMaxMappings(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < MaxMappings; i++ {
		fmt.Fprintf(&b, "%x-%x rw-p 00000000 00:00 0\nRss: 4 kB\n", 0x10000+i*0x1000, 0x11000+i*0x1000)
	}
	ms, err := ParseSmaps(b.Bytes(), nil)
	if err != nil || len(ms) != MaxMappings {
		t.Fatalf("%d mappings: ParseSmaps = %d, %v", MaxMappings, len(ms), err)
	}
	if got := Classify(ms, Layout{}); got.Total() != MaxMappings*4<<10 {
		t.Errorf("Total() = %d", got.Total())
	}
	fmt.Fprintf(&b, "%x-%x rw-p 00000000 00:00 0\n", 0x10000+MaxMappings*0x1000, 0x11000+MaxMappings*0x1000)
	if ms, err := ParseSmaps(b.Bytes(), nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("%d mappings: ParseSmaps = %d mappings, %v; want ErrMalformed", MaxMappings+1, len(ms), err)
	}
}

// wantTotal is what Classify must account for: every resident byte once,
// ZGC's views of the same heap pages (and any file mapped twice at the
// same offset inside the heap) once.
func wantTotal(ms []Mapping, l Layout) uint64 {
	heap := findReservation(ms, l.HeapReserved)
	seen := map[sharedKey]bool{}
	var sum uint64
	for i := range ms {
		m := &ms[i]
		if m.Rss == 0 {
			continue
		}
		if !m.Anonymous() && (strings.HasPrefix(m.Path, "/memfd:java_heap") || heap.overlaps(m)) {
			k := sharedKey{m.Dev, m.Inode, m.Offset}
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		sum += m.Rss
	}
	return sum
}

// FuzzParseSmaps: ParseSmaps never panics, fails only with ErrMalformed,
// and whatever it parses, Classify accounts for every resident byte once
// under any layout.
func FuzzParseSmaps(f *testing.F) {
	fixture, err := os.ReadFile("testdata/g1-200threads.smaps")
	if err != nil {
		f.Fatal(err)
	}
	head := fixture[:4096]
	head = head[:bytes.LastIndexByte(head, '\n')+1]
	f.Add(head, uint64(512*mib), uint64(gib), uint64(0))
	f.Add(fixture[:4096], uint64(512*mib), uint64(gib), uint64(384*kib)) // cut mid-line
	f.Add([]byte(realSmaps), uint64(0x3fa00000+0x4400000), uint64(0), uint64(0))
	f.Add(smapsText(anonBase, rw(10*mib, 10*mib), reserved(54*mib), guard(16*kib), rw(1008*kib, 88*kib)), uint64(256*mib), uint64(64*mib), uint64(4*mib))
	f.Add(smapsText(0xc0000000, rw(100*mib, 100*mib), reserved(924*mib), gapped(rw(64*kib, 64*kib), gib), reserved(gib-64*kib)), uint64(gib), uint64(gib), uint64(0))
	zgc := file("/memfd:java_heap (deleted)", 256*mib, 10*mib, "rw-s", 4242)
	f.Add(smapsText(0x40000000000, zgc, reserved(gib), gapped(zgc, gib)), uint64(256*mib), uint64(gib), uint64(0))
	for _, bad := range []string{
		"zzzz-2000 rw-p 00000000 00:00 0\n",
		"Rss: 4 kB\n1000-2000 rw-p 00000000 00:00 0\n",
		"1000-2000 rw-p 00000000 00:00 0\nRss: 17592186044417 kB\n",
		"1000-2000 rw-p 00000000 00:00 0\nVmFlags: nr\nRss: 4 kB\n2000-1000 rw-p 0 0:0 0\n",
		"1000-2000 rw-p 00000000 00:00 0 [heap]\nRss: 4 kB\n-\n",
		"1000-2000 rw-p 00000000 00:00 0\nRss:    4 kB\nRss: 8 kB\n",
		"1000-2000 ---p 0 0:0 0\nVmFlags: nr\n2000-3000 rw-p 0 0:0 0\nRss: 4 kB\n3000-3000 ---p 0 0:0 0\nVmFlags: nr\n",
	} {
		f.Add([]byte(bad), uint64(0x1000), uint64(0x2000), uint64(0x1000))
	}
	f.Fuzz(func(t *testing.T, data []byte, heap, class, meta uint64) {
		ms, err := ParseSmaps(data, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseSmaps error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(ms) > MaxMappings {
			t.Fatalf("%d mappings parsed", len(ms))
		}
		for _, l := range []Layout{{}, {HeapReserved: heap, ClassSpaceReserved: class, MetaspaceCommitted: meta}} {
			b := Classify(ms, l)
			if got, want := b.Total(), wantTotal(ms, l); got != want {
				t.Fatalf("Classify(%+v).Total() = %d, the mappings' Rss add up to %d\n%s\nmappings:\n%s", l, got, want, fmtBreakdown(b), dumpMappings(ms))
			}
		}
	})
}
