package yarn

import "testing"

func BenchmarkParseContainers(b *testing.B) {
	data := fixture(b, "containers.json")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseContainers(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseDiagnostics(b *testing.B) {
	s := string(fixture(b, "diag-pmem-hadoop2.txt"))
	for b.Loop() {
		if ParseDiagnostics(s).Kind != KillPmem {
			b.Fatal("not parsed")
		}
	}
}
