package nativemem

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const (
	kib = uint64(1) << 10
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

// mp describes one mapping of a synthetic smaps text. Anonymous unless
// path names a file (inode set) or one of the kernel's names ("[heap]").
type mp struct {
	size  uint64 // bytes; the mapping starts where the previous one ended, plus gap
	gap   uint64 // unmapped bytes before this mapping
	perms string // "rw-p", "---p", "rwxp", "r--s", ...
	rss   uint64 // bytes (a multiple of 1 KiB)
	nr    bool   // VmFlags nr
	path  string
	inode uint64
	dev   string // "fd:01" for files when empty
	off   uint64
}

// smapsText lays the mappings out one after the other from base and
// writes them as /proc/<pid>/smaps does, with the fields ParseSmaps skips.
func smapsText(base uint64, maps ...mp) []byte {
	var b bytes.Buffer
	addr := base
	for _, m := range maps {
		addr += m.gap
		dev := "00:00"
		if m.inode != 0 {
			dev = m.dev
			if dev == "" {
				dev = "fd:01"
			}
		}
		hdr := fmt.Sprintf("%x-%x %s %08x %s %d", addr, addr+m.size, m.perms, m.off, dev, m.inode)
		if m.path != "" {
			hdr = fmt.Sprintf("%-73s%s", hdr, m.path)
		}
		b.WriteString(hdr + "\n")
		fmt.Fprintf(&b, "Size:           %8d kB\nKernelPageSize:        4 kB\nMMUPageSize:           4 kB\n", m.size>>10)
		fmt.Fprintf(&b, "Rss:            %8d kB\nPss:            %8d kB\nPss_Dirty:      %8d kB\n", m.rss>>10, m.rss>>10, m.rss>>10)
		b.WriteString("Shared_Clean:          0 kB\nPrivate_Dirty:         0 kB\nAnonHugePages:         0 kB\nSwap:                  0 kB\nLocked:                0 kB\nTHPeligible:    0\n")
		flags := "VmFlags: "
		for i, f := range []string{"rd", "wr", "ex"} {
			if m.perms[i] != '-' {
				flags += f + " "
			}
		}
		if m.perms[3] == 's' {
			flags += "sh "
		}
		flags += "mr mw me ac"
		if m.nr {
			flags += " nr"
		}
		b.WriteString(flags + " \n")
		addr += m.size
	}
	return b.Bytes()
}

// classifyText parses a synthetic smaps text and classifies it.
func classifyText(t testing.TB, text []byte, l Layout) Breakdown {
	t.Helper()
	ms, err := ParseSmaps(text, nil)
	if err != nil {
		t.Fatalf("ParseSmaps: %v\n%s", err, text)
	}
	return Classify(ms, l)
}

// dumpMappings lists mappings one a line, for a failure's message.
func dumpMappings(ms []Mapping) string {
	var b strings.Builder
	for i := range ms {
		m := &ms[i]
		perms := []byte("----")
		for j, on := range []bool{m.Read, m.Write, m.Exec} {
			if on {
				perms[j] = "rwx"[j]
			}
		}
		if m.Shared {
			perms[3] = 's'
		} else {
			perms[3] = 'p'
		}
		nr := ""
		if m.NoReserve {
			nr = " nr"
		}
		fmt.Fprintf(&b, "  %x-%x %s size=%s rss=%s%s %s\n", m.Start, m.End, perms, human(m.Size()), human(m.Rss), nr, m.Path)
	}
	return b.String()
}

// breakdownOf builds a Breakdown from region: bytes pairs.
func breakdownOf(kv map[Region]uint64) Breakdown {
	var b Breakdown
	for r, v := range kv {
		b[r] = v
	}
	return b
}

// fmtBreakdown prints the non-zero regions.
func fmtBreakdown(b Breakdown) string {
	var s []string
	for r := Region(0); r < NumRegions; r++ {
		if b[r] != 0 {
			s = append(s, fmt.Sprintf("%s=%s", r, human(b[r])))
		}
	}
	return "{" + strings.Join(s, " ") + "}"
}

func human(v uint64) string {
	switch {
	case v%mib == 0:
		return fmt.Sprintf("%dMiB", v/mib)
	case v%kib == 0:
		return fmt.Sprintf("%dKiB", v/kib)
	}
	return fmt.Sprintf("%dB", v)
}

// sumRss adds up the Rss lines of an smaps text without ParseSmaps.
func sumRss(t testing.TB, text []byte) uint64 {
	t.Helper()
	var sum uint64
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "Rss:" && f[2] == "kB" {
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatalf("Rss line %q: %v", sc.Text(), err)
			}
			sum += v << 10
		}
	}
	return sum
}

// nmtCategory is one category of `jcmd <pid> VM.native_memory summary`, in bytes.
type nmtCategory struct {
	Reserved, Committed         uint64
	MmapReserved, MmapCommitted uint64
	StackCommitted              uint64
	Malloc                      uint64
	Threads                     int // "(thread #N)", the Thread category's
}

// nmtSummary maps a category's name ("Java Heap", "Thread", "Other", ...)
// to its figures; "Total" is the summary's first line.
type nmtSummary map[string]nmtCategory

var (
	nmtCategoryLine = regexp.MustCompile(`^-\s+(.+?) \(reserved=(\d+)KB, committed=(\d+)KB\)`)
	nmtTotalLine    = regexp.MustCompile(`^Total: reserved=(\d+)KB, committed=(\d+)KB`)
	nmtMmapLine     = regexp.MustCompile(`^\s+\(mmap: reserved=(\d+)KB, committed=(\d+)KB\)`)
	nmtStackLine    = regexp.MustCompile(`^\s+\(stack: reserved=(\d+)KB, committed=(\d+)KB\)`)
	nmtMallocLine   = regexp.MustCompile(`^\s+\(malloc=(\d+)KB`)
	nmtThreadLine   = regexp.MustCompile(`^\s+\(thread #(\d+)\)`)
	nmtTotalMalloc  = regexp.MustCompile(`^\s+malloc: (\d+)KB`)
	nmtTotalMmap    = regexp.MustCompile(`^\s+mmap:\s+reserved=(\d+)KB, committed=(\d+)KB`)
)

func kb(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v << 10
}

// parseNMT parses the output of VM.native_memory summary (scale KB).
func parseNMT(text string) (nmtSummary, error) {
	s := nmtSummary{}
	cur := ""
	for _, line := range strings.Split(text, "\n") {
		if m := nmtTotalLine.FindStringSubmatch(line); m != nil {
			cur = "Total"
			s[cur] = nmtCategory{Reserved: kb(m[1]), Committed: kb(m[2])}
			continue
		}
		if m := nmtCategoryLine.FindStringSubmatch(line); m != nil {
			cur = m[1]
			s[cur] = nmtCategory{Reserved: kb(m[2]), Committed: kb(m[3])}
			continue
		}
		if cur == "" {
			continue
		}
		c := s[cur]
		if m := nmtTotalMalloc.FindStringSubmatch(line); m != nil {
			c.Malloc = kb(m[1])
		} else if m := nmtTotalMmap.FindStringSubmatch(line); m != nil {
			c.MmapReserved, c.MmapCommitted = kb(m[1]), kb(m[2])
		} else if m := nmtMmapLine.FindStringSubmatch(line); m != nil {
			c.MmapReserved, c.MmapCommitted = kb(m[1]), kb(m[2])
		} else if m := nmtStackLine.FindStringSubmatch(line); m != nil {
			c.StackCommitted = kb(m[2])
		} else if m := nmtMallocLine.FindStringSubmatch(line); m != nil {
			c.Malloc = kb(m[1])
		} else if m := nmtThreadLine.FindStringSubmatch(line); m != nil {
			c.Threads, _ = strconv.Atoi(m[1])
		}
		s[cur] = c
	}
	for _, need := range []string{"Total", "Java Heap", "Class", "Thread", "Code", "GC", "Metaspace"} {
		if _, ok := s[need]; !ok {
			return nil, fmt.Errorf("no %q in NMT summary:\n%s", need, text)
		}
	}
	return s, nil
}

// metaspace is NMT's view of what the metaspace region holds: the
// Metaspace category's committed bytes and the class space (the Class
// category's mapped part).
func (s nmtSummary) metaspace() uint64 {
	return s["Metaspace"].Committed + s["Class"].MmapCommitted
}
