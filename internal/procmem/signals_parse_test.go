package procmem

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestParseMemoryEvents(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     MemoryEvents
		wantErr  string
	}{
		{name: "6.1", in: "low 0\nhigh 5\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n",
			want: MemoryEvents{High: 5, Max: 12, OOM: 2, OOMKill: 1, HasLow: true, HasHigh: true, HasMax: true, HasOOM: true, HasOOMKill: true}},
		// 4.x before oom_kill: the others still count.
		{name: "no oom_kill", in: "low 0\nhigh 0\nmax 3\noom 1\n",
			want: MemoryEvents{Max: 3, OOM: 1, HasLow: true, HasHigh: true, HasMax: true, HasOOM: true}},
		{name: "first line of a key counts", in: "max 1\nmax x\n", want: MemoryEvents{Max: 1, HasMax: true}},
		{name: "crlf and unknown keys", in: "sock_throttled 9\r\nhigh 4\r\n", want: MemoryEvents{High: 4, HasHigh: true}},
		{name: "empty", in: ""},
		{name: "bad value", in: "low 0\nmax -1\n", wantErr: "max: not an unsigned integer"},
		{name: "overflow", in: "oom 99999999999999999999\n", wantErr: "oom: not an unsigned integer"},
		{name: "line too long", in: strings.Repeat("x", bufio.MaxScanTokenSize) + "\nmax 1\n", wantErr: "token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMemoryEvents([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestParsePressure(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Pressure
		wantErr  string
	}{
		{name: "6.1", in: "some avg10=12.50 avg60=3.10 avg300=0.80 total=4500000\nfull avg10=2.25 avg60=0.40 avg300=0.10 total=1250000\n",
			want: Pressure{SomeTotal: 4500000, FullTotal: 1250000, SomeAvg10: 12.5, FullAvg10: 2.25, HasSome: true, HasFull: true}},
		{name: "idle", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
			want: Pressure{HasSome: true, HasFull: true}},
		// The system-wide cpu file had no full line before 5.13; a cgroup's
		// memory file always has both, but one alone is no error.
		{name: "some alone", in: "some avg10=1.00 avg60=0.00 avg300=0.00 total=7\n", want: Pressure{SomeTotal: 7, SomeAvg10: 1, HasSome: true}},
		{name: "fields in another order, one more", in: "full total=9 avg10=100.00 new=1\n", want: Pressure{FullTotal: 9, FullAvg10: 100, HasFull: true}},
		{name: "unknown line", in: "partial avg10=x\nsome avg10=0.50 total=2\n", want: Pressure{SomeTotal: 2, SomeAvg10: 0.5, HasSome: true}},
		{name: "empty", in: ""},
		{name: "no total", in: "some avg10=0.00 avg60=0.00 avg300=0.00\n", wantErr: "some: want"},
		{name: "no avg10", in: "full avg60=0.00 total=3\n", wantErr: "full: want"},
		{name: "bad total", in: "some avg10=0.00 total=1e6\n", wantErr: "some total: not an unsigned integer"},
		{name: "negative avg", in: "some avg10=-1.00 total=1\n", wantErr: "some avg10: not a percentage"},
		{name: "avg above 100", in: "some avg10=100.01 total=1\n", wantErr: "some avg10: not a percentage"},
		{name: "NaN avg", in: "full avg10=NaN total=1\n", wantErr: "full avg10: not a percentage"},
		{name: "field without =", in: "some avg10 total=1\n", wantErr: "some: \"avg10\""},
		{name: "line too long", in: strings.Repeat("x", bufio.MaxScanTokenSize) + "\n", wantErr: "token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePressure([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// memory.events and memory.pressure parse or fail, never panic; what
// parses is what the kernel can have written.
func FuzzParseSignals(f *testing.F) {
	for _, s := range []string{
		"low 0\nhigh 5\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n",
		"some avg10=12.50 avg60=3.10 avg300=0.80 total=4500000\nfull avg10=2.25 avg60=0.40 avg300=0.10 total=1250000\n",
		"some avg10=NaN total=1\n", "full total=9 avg10=100.00\n", "some avg10 total=1\n", "max 1\nmax x\n",
		"oom_kill 99999999999999999999\n", "", "\n\n", "some  avg10=1  total=2\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := parseMemoryEvents(data)
		if err != nil && e != (MemoryEvents{}) {
			t.Fatalf("error %v with figures %+v", err, e)
		}
		if v, found, kerr := parseKeyedUint(data, "oom_kill"); err == nil && (v != e.OOMKill || found != e.HasOOMKill || kerr != nil) {
			t.Fatalf("oom_kill %d, %v; parseKeyedUint says %d, %v, %v", e.OOMKill, e.HasOOMKill, v, found, kerr)
		}
		p, err := parsePressure(data)
		if err != nil {
			if p != (Pressure{}) {
				t.Fatalf("error %v with figures %+v", err, p)
			}
			if !errors.Is(err, bufio.ErrTooLong) && !strings.Contains(err.Error(), "some") && !strings.Contains(err.Error(), "full") {
				t.Fatalf("error %v names no line", err)
			}
			return
		}
		for _, a := range []float64{p.SomeAvg10, p.FullAvg10} {
			if !(a >= 0 && a <= 100) {
				t.Fatalf("avg10 %v out of range", a)
			}
		}
		if (!p.HasSome && (p.SomeTotal != 0 || p.SomeAvg10 != 0)) || (!p.HasFull && (p.FullTotal != 0 || p.FullAvg10 != 0)) {
			t.Fatalf("figures without their line: %+v", p)
		}
	})
}
