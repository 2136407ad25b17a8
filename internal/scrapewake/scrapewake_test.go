package scrapewake

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a Waker whose timers are recorded, not set.
type recorder struct {
	*Waker
	delays []time.Duration
	fire   []func()
}

func newRecorder() *recorder {
	r := &recorder{}
	r.Waker = &Waker{afterFunc: func(d time.Duration, f func()) {
		r.delays = append(r.delays, d)
		r.fire = append(r.fire, f)
	}}
	return r
}

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func at(offsets ...time.Duration) []time.Time {
	ts := make([]time.Time, len(offsets))
	for i, o := range offsets {
		ts[i] = t0.Add(o)
	}
	return ts
}

func everySecond(n int) []time.Time {
	ts := make([]time.Time, n)
	for i := range ts {
		ts[i] = t0.Add(time.Duration(i) * time.Second)
	}
	return ts
}

func (r *recorder) arrive(ts ...time.Time) {
	for _, t := range ts {
		r.Arrived(t)
	}
}

func TestWakesBeforeTheThirdScrapeOnABeat(t *testing.T) {
	r := newRecorder()
	r.arrive(at(0, 15*time.Second)...)
	if len(r.delays) != 0 {
		t.Fatalf("two arrivals set timers %v; a beat needs three", r.delays)
	}
	r.arrive(t0.Add(30 * time.Second))
	if len(r.delays) != 1 || r.delays[0] != 15*time.Second-lead {
		t.Fatalf("timers %v, want one of %v", r.delays, 15*time.Second-lead)
	}
	r.arrive(t0.Add(45 * time.Second))
	if len(r.delays) != 2 || r.delays[1] != 15*time.Second-lead {
		t.Fatalf("timers %v after the fourth arrival, want a second of %v (the beat, not its multiple)", r.delays, 15*time.Second-lead)
	}
}

func TestJitterWithinTolerance(t *testing.T) {
	for _, c := range []struct {
		name   string
		third  time.Duration
		timers int
	}{
		{"on the beat", 60 * time.Second, 1},
		{"8ms late", 60*time.Second + 8*time.Millisecond, 1},
		{"8ms early", 60*time.Second - 8*time.Millisecond, 1},
		{"50ms late", 60*time.Second + 50*time.Millisecond, 0},
		{"a second late", 61 * time.Second, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRecorder()
			r.arrive(at(0, 30*time.Second, c.third)...)
			if len(r.delays) != c.timers {
				t.Fatalf("timers %v, want %d", r.delays, c.timers)
			}
		})
	}
}

func TestTwoScrapersEachKeepTheirBeat(t *testing.T) {
	r := newRecorder()
	// A Prometheus pair, both every 15 s, 7 s apart, and a person's curl.
	r.arrive(at(0, 7*time.Second, 15*time.Second, 19*time.Second, 22*time.Second,
		30*time.Second, 37*time.Second)...)
	want := []time.Duration{15*time.Second - lead, 15*time.Second - lead}
	if len(r.delays) != len(want) || r.delays[0] != want[0] || r.delays[1] != want[1] {
		t.Fatalf("timers %v, want %v (one per scraper's third arrival)", r.delays, want)
	}
}

func TestNoBeatNoTimer(t *testing.T) {
	for name, ts := range map[string][]time.Time{
		"irregular":          at(0, 10*time.Second, 26*time.Second, 31*time.Second, 50*time.Second),
		"below five seconds": at(0, time.Second, 2*time.Second, 3*time.Second, 4*time.Second),
		// Every fifth scrape of a 1 s scraper is 5 s after another.
		"every second for 20 s": everySecond(21),
		"back to back":          at(0, 20*time.Millisecond, 40*time.Millisecond, 60*time.Millisecond),
		"beyond five minute":    at(0, 6*time.Minute, 12*time.Minute),
		"one":                   at(0),
	} {
		t.Run(name, func(t *testing.T) {
			r := newRecorder()
			r.arrive(ts...)
			if len(r.delays) != 0 {
				t.Fatalf("timers %v, want none", r.delays)
			}
		})
	}
}

func TestPendingTimersBounded(t *testing.T) {
	r := newRecorder()
	for i := range 3 + maxPending + 5 {
		r.Arrived(t0.Add(time.Duration(i) * 5 * time.Second))
	}
	if len(r.delays) != maxPending {
		t.Fatalf("%d timers set while none fired, want %d", len(r.delays), maxPending)
	}
	r.fire[0]()
	r.Arrived(t0.Add(time.Duration(3+maxPending+5) * 5 * time.Second))
	if len(r.delays) != maxPending+1 {
		t.Fatalf("%d timers after one fired, want %d", len(r.delays), maxPending+1)
	}
}

func TestWrapSeesEveryRequest(t *testing.T) {
	var calls int
	w := &Waker{afterFunc: func(time.Duration, func()) {}}
	h := w.Wrap(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		calls++
		rw.WriteHeader(http.StatusTeapot)
	}))
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusTeapot {
			t.Fatalf("status %d, want the wrapped handler's", rec.Code)
		}
	}
	seen := 0
	for _, a := range w.arrivals {
		if !a.IsZero() {
			seen++
		}
	}
	if calls != 3 || seen != 3 {
		t.Fatalf("handler called %d times, %d arrivals recorded; want 3 and 3", calls, seen)
	}
}

// TestConcurrentArrivals is for the race detector: scrapes arriving
// together while timers fire.
func TestConcurrentArrivals(t *testing.T) {
	var fired sync.WaitGroup
	var set atomic.Int32
	w := &Waker{afterFunc: func(_ time.Duration, f func()) {
		set.Add(1)
		fired.Add(1)
		go func() { defer fired.Done(); f() }()
	}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				w.Arrived(t0.Add(time.Duration(i)*5*time.Second + time.Duration(g)*time.Millisecond))
			}
		}()
	}
	wg.Wait()
	fired.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if set.Load() == 0 || w.pending != 0 {
		t.Fatalf("%d timers set, %d pending after all fired; want some set, none pending", set.Load(), w.pending)
	}
}

// TestRealTimerFires sets one through the runtime: the waker counts it
// gone once it fired.
func TestRealTimerFires(t *testing.T) {
	w := New()
	done := make(chan struct{})
	real := w.afterFunc
	w.afterFunc = func(_ time.Duration, f func()) {
		real(time.Millisecond, func() { f(); close(done) })
	}
	now := time.Now()
	for i := range 3 {
		w.Arrived(now.Add(time.Duration(i-2) * 5 * time.Second))
	}
	<-done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending != 0 {
		t.Fatalf("%d pending after the timer fired", w.pending)
	}
}
