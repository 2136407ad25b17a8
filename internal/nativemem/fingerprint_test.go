package nativemem

import (
	"os"
	"regexp"
	"testing"
)

// A maps file fingerprints as the smaps it is the headers of; a resident
// size that moved does not change it, a mapping that grew does.
func TestFingerprint(t *testing.T) {
	smaps, err := os.ReadFile("testdata/g1-200threads.smaps")
	if err != nil {
		t.Fatal(err)
	}
	headers := regexp.MustCompile(`(?m)^[0-9a-f]+-[0-9a-f]+ .*\n`).FindAll(smaps, -1)
	var maps []byte
	for _, h := range headers {
		maps = append(maps, h...)
	}
	fingerprint := func(data []byte) uint64 {
		t.Helper()
		ms, err := ParseSmaps(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		return Fingerprint(ms)
	}
	base := fingerprint(smaps)
	if got := fingerprint(maps); got != base {
		t.Errorf("maps fingerprints %x, its smaps %x", got, base)
	}
	rss := regexp.MustCompile(`(?m)^Rss: +(\d+) kB$`).ReplaceAll(smaps, []byte("Rss: 1 kB"))
	if got := fingerprint(rss); got != base {
		t.Errorf("resident sizes changed the fingerprint")
	}
	// The heap's committed part, e0000000-f7a00000, grows by 1 MiB.
	grown := regexp.MustCompile(`(?m)^e0000000-f7a00000 `).ReplaceAll(smaps, []byte("e0000000-f7b00000 "))
	if string(grown) == string(smaps) {
		t.Fatal("the fixture's first mapping is not the heap's committed part")
	}
	if got := fingerprint(grown); got == base {
		t.Error("a mapping that grew kept the fingerprint")
	}
}
