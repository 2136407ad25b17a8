package hsperf

import "testing"

// The JVM's file is 32 KiB, zeros after "used": benchmark on that, as the
// exporter reads it.
func benchFile(b *testing.B) []byte {
	f := readFixture(b, "g1")
	return append(f, make([]byte, 32<<10-len(f))...)
}

func BenchmarkParse(b *testing.B) {
	file := benchFile(b)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(file); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStats(b *testing.B) {
	s := mustParse(b, benchFile(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseStats is what a scrape costs per JVM once the file is read.
func BenchmarkParseStats(b *testing.B) {
	file := benchFile(b)
	b.ReportAllocs()
	for b.Loop() {
		s, err := Parse(file)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookup includes building the index on first use.
func BenchmarkLookup(b *testing.B) {
	file := benchFile(b)
	b.ReportAllocs()
	for b.Loop() {
		s, _ := Parse(file)
		if _, ok := s.Long("sun.os.hrt.frequency"); !ok {
			b.Fatal("missing")
		}
	}
}

// BenchmarkParseStatsPrev is what a scan did per JVM read before without a
// Plan: a full ParseStats with the previous read's Stats.
func BenchmarkParseStatsPrev(b *testing.B) {
	benchParseStatsAgain(b, nil)
}

// BenchmarkParseStatsPlan is what a scan does per JVM read before: the
// previous read's Stats and Plan, the file unchanged but for its longs.
func BenchmarkParseStatsPlan(b *testing.B) {
	benchParseStatsAgain(b, new(Plan))
}

func benchParseStatsAgain(b *testing.B, plan *Plan) {
	file := benchFile(b)
	prev, _, err := ParseStats(file, nil, plan)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		st, _, err := ParseStats(file, &prev, plan)
		if err != nil {
			b.Fatal(err)
		}
		prev = st
	}
}
