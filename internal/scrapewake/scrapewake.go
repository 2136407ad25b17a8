// Package scrapewake learns the intervals at which scrapes arrive and has
// the Go runtime wake a moment before the next one is due.
//
// Why: between scrapes an exporter is idle, and the Go runtime's monitor
// thread (sysmon) sleeps until the next timer. Woken by a system call the
// scheduler sees (a scrape's accept or read), it bets that the process is
// busy again and polls every 20 µs for its next 50 polls, then less and
// less often, down to every 10 ms; on a virtual machine each of those
// wake-ups costs more CPU than the sleep is long, and a scrape at a real
// interval paid for most of the 50. Woken by a timer, it keeps the pace it
// had: a scrape that arrives in the 10 ms it then sleeps finds it awake
// and does not start it over. A timer that does nothing, set to fire just
// before a scrape is due, costs one wake-up of the process; a scrape that
// comes at another moment costs what it did without one.
// docs/performance.md has the figures.
package scrapewake

import (
	"net/http"
	"sync"
	"time"
)

const (
	// lead is how long before a scrape is due the process wakes: half the
	// monitor's 10 ms pace, so that a scrape up to 5 ms early or late
	// still arrives while it is awake.
	lead = 5 * time.Millisecond
	// tolerance is how far two intervals between arrivals may differ and
	// still be one scraper's: Prometheus starts each scrape on a ticker.
	tolerance = 10 * time.Millisecond
	// minInterval and maxInterval bound the intervals learnt: scrapes a
	// second apart gained nothing from the wake and paid its wake-up,
	// scrapes 5 s apart gained; above 5 minutes no scraper is worth
	// waiting for.
	minInterval = 5 * time.Second
	maxInterval = 5 * time.Minute
	// remembered is how many arrivals are kept: enough for a few scrapers
	// (a Prometheus pair, a second job, a person's curl) to show their
	// intervals between the others'.
	remembered = 16
	// maxPending bounds the wake-ups waiting to fire.
	maxPending = 8
)

// Waker is told when scrapes arrive and sets a timer for when the next is
// due. A scrape is due once three of them have arrived an equal interval
// apart (within tolerance); every later one arriving on that beat sets the
// next timer. Safe for concurrent use.
type Waker struct {
	afterFunc func(d time.Duration, f func()) // time.AfterFunc; tests record instead

	mu       sync.Mutex
	arrivals [remembered]time.Time // a ring, next is the oldest
	next     int
	pending  int
}

// New returns a Waker whose timers are the runtime's.
func New() *Waker {
	return &Waker{afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
}

// Wrap calls w.Arrived for every request to h.
func (w *Waker) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		w.Arrived(time.Now())
		h.ServeHTTP(rw, req)
	})
}

// Arrived records a scrape that arrived at now and, when it keeps the beat
// of earlier ones, sets a timer for lead before the next is due.
func (w *Waker) Arrived(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	interval, ok := w.beat(now)
	w.arrivals[w.next] = now
	w.next = (w.next + 1) % remembered
	if !ok || w.pending >= maxPending {
		return
	}
	w.pending++
	w.afterFunc(interval-lead, w.fired)
}

// fired does nothing but count: the timer itself is the point, it wakes
// the process.
func (w *Waker) fired() {
	w.mu.Lock()
	w.pending--
	w.mu.Unlock()
}

// beat returns the shortest interval at which now follows two earlier
// arrivals that lie that interval apart, the beat of one scraper, when it
// is one to wake for. The shortest: every multiple of a beat is one too,
// and scrapes a second apart must not pass for scrapes 5 s apart.
func (w *Waker) beat(now time.Time) (time.Duration, bool) {
	var best time.Duration
	for _, last := range w.arrivals {
		if last.IsZero() {
			continue
		}
		interval := now.Sub(last)
		if interval <= 2*tolerance || interval > maxInterval || (best > 0 && interval >= best) {
			continue
		}
		if w.arrivedNear(last.Add(-interval)) {
			best = interval
		}
	}
	return best, best >= minInterval
}

func (w *Waker) arrivedNear(t time.Time) bool {
	for _, a := range w.arrivals {
		if !a.IsZero() && a.Sub(t).Abs() <= tolerance {
			return true
		}
	}
	return false
}
