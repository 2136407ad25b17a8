package jvm

import (
	"time"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
)

// SamplingConfig says how often each JVM is read in the background: as
// often as its risk of an OOM kill says, between Fastest and Slowest. The
// background sample exists so that the last sample before a kill is
// recent; an idle executor far from its limit needs no such sample, and
// a container's headroom says how soon a fast leak could fill it.
type SamplingConfig struct {
	// Slowest is the interval of a JVM far from its limit and not
	// growing; 0 turns background sampling off (scrapes read).
	Slowest time.Duration
	// AtRisk caps the interval of a JVM above 75 % of its container's
	// limit, growing, after a full collection, or starting.
	AtRisk time.Duration
	// Fastest is the interval of a JVM above 90 % of its limit, or whose
	// growth would reach the limit within a few of these.
	Fastest time.Duration
	// Discovery is how often the process table is listed for new JVMs
	// and ends, whatever is due.
	Discovery time.Duration
}

// DefaultSampling is the policy of docs/jvm.md#sampling.
var DefaultSampling = SamplingConfig{
	Slowest:   30 * time.Second,
	AtRisk:    5 * time.Second,
	Fastest:   time.Second,
	Discovery: 5 * time.Second,
}

// designLeakRate is the fastest growth (bytes per second) the sampler is
// sized to catch: a container is sampled at least twice in the time a
// leak this fast needs to fill its headroom.
const designLeakRate = 64 << 20

const (
	riskShare = 0.75 // above it a JVM is at risk: AtRisk at most
	nearShare = 0.90 // above it: Fastest
)

// normalized orders the intervals: Fastest ≤ AtRisk ≤ Slowest, and
// Discovery ≤ Slowest, so a small Slowest (tests, users who want every
// JVM sampled often) caps everything.
func (c SamplingConfig) normalized() SamplingConfig {
	if c.Slowest <= 0 {
		return SamplingConfig{}
	}
	if c.AtRisk <= 0 || c.AtRisk > c.Slowest {
		c.AtRisk = c.Slowest
	}
	if c.Fastest <= 0 || c.Fastest > c.AtRisk {
		c.Fastest = c.AtRisk
	}
	if c.Discovery <= 0 || c.Discovery > c.Slowest {
		c.Discovery = c.Slowest
	}
	return c
}

// interval is how long after cur was read it is read again. prev is the
// last reading of the same process (nil for a first one).
func (c SamplingConfig) interval(prev, cur *JVM) time.Duration {
	d := c.Slowest
	if limit, used := cur.Budget(); limit > 0 {
		usage := min(used, limit)
		share := float64(usage) / float64(limit)
		if share >= nearShare {
			return c.Fastest
		}
		if share >= riskShare {
			d = min(d, c.AtRisk)
		}
		headroom := limit - usage
		d = min(d, c.atLeastFastest(seconds(float64(headroom)/designLeakRate/2)))
		if _, prevUsed := prev.budget(); prev != nil && usage > prevUsed {
			if dt := cur.Time.Sub(prev.Time).Seconds(); dt > 0 {
				rate := float64(usage-prevUsed) / dt
				d = min(d, c.atLeastFastest(seconds(float64(headroom)/rate/2)))
			}
		}
	} else if prev != nil && treeRSS(cur) >= treeRSS(prev)+growthBytes {
		// No limit of its own: the machine's memory is the budget, and a
		// tree that grows fast is what a machine-wide OOM kill picks.
		d = min(d, c.AtRisk)
	}
	// The heap: nearly full now, or its old generation, where the live
	// data ends up, three quarters full; the heap alerts look at its
	// troughs, which a reading every 30 s would mostly miss.
	if cur.HeapMax > 0 && float64(cur.HeapUsed) >= nearShare*float64(cur.HeapMax) || oldShare(&cur.Stats) >= riskShare {
		d = min(d, c.AtRisk)
	}
	if prev != nil && fullCollections(&cur.Stats) > fullCollections(&prev.Stats) {
		d = min(d, c.AtRisk)
	}
	if !cur.ProcessStart.IsZero() && cur.Time.Sub(cur.ProcessStart) < startupGrace {
		d = min(d, c.AtRisk)
	}
	return d
}

// budget is j's Budget, nothing for nil.
func (j *JVM) budget() (limit, used uint64) {
	if j == nil {
		return 0, 0
	}
	return j.Budget()
}

// growthBytes is how much a process tree without a limit of its own grows
// between two readings to be read more often.
const growthBytes = 32 << 20

func (c SamplingConfig) atLeastFastest(d time.Duration) time.Duration { return max(d, c.Fastest) }

func seconds(s float64) time.Duration {
	if s >= float64(time.Hour/time.Second) {
		return time.Hour
	}
	return time.Duration(s * float64(time.Second))
}

func treeRSS(j *JVM) uint64 { return j.RSSJVM + j.RSSPython + j.RSSOther }

// fullCollections counts the ended collections of the collectors that
// collect the whole heap: one under way has not yet changed the heap's
// figures read with it.
func fullCollections(s *hsperf.Stats) uint64 {
	var n uint64
	for _, g := range s.GCs {
		if isFullCollector(g.Name) {
			n += g.Completed()
		}
	}
	return n
}

// oldShare is the old generation's use of its maximum; 0 when unknown.
func oldShare(s *hsperf.Stats) float64 {
	var used, most uint64
	for _, p := range s.Pools {
		if isOldPool(p.Name) {
			used, most = used+p.Used, most+p.Max
		}
	}
	if most == 0 {
		return 0
	}
	return float64(used) / float64(most)
}

// schedule says when each JVM is next due, in the JVM's record. Not safe
// for concurrent use: the tracker's scans own it.
type schedule struct {
	recs records
	// epoch is where the grids of aligned and nextScan start.
	epoch time.Time
}

type plannedRead struct {
	at time.Time
	// soon: due sooner than the next discovery scan would come. The
	// others wait for that scan, so that one scan reads many JVMs: a
	// scan's listing and discovery cost more than one JVM's read.
	soon bool
}

func newSchedule(recs records) *schedule { return &schedule{recs: recs, epoch: time.Now()} }

// aligned moves at back to the grid of step: JVMs read as often fall due
// together, so that one scan reads them all and the scans between them
// find nothing due and read nothing (Tracker.idle). Never later than at:
// a JVM is read as often as its risk says, once early at most.
func (s *schedule) aligned(at time.Time, step time.Duration) time.Time {
	if step <= 0 || at.Before(s.epoch) {
		return at
	}
	return s.epoch.Add(at.Sub(s.epoch) / step * step)
}

// nextScan is the first point of the grid of step after now: discovery
// scans stay on the grid the JVMs are aligned to, whatever woke a scan
// between.
func (s *schedule) nextScan(now time.Time, step time.Duration) time.Time {
	if step <= 0 || now.Before(s.epoch) {
		return now.Add(step)
	}
	return s.aligned(now, step).Add(step)
}

// due: pid, started at start, has never been read, or its time has come.
func (s *schedule) due(pid int, start, now time.Time) bool {
	r, ok := s.recs.get(pid, start)
	return !ok || !r.hasPlan || !now.Before(r.plan.at)
}

func (s *schedule) plan(pid int, start, at time.Time, soon bool) {
	r := s.recs.of(pid, start)
	r.plan, r.hasPlan = plannedRead{at: at, soon: soon}, true
}

// earliest is when the first JVM due sooner than the next discovery scan
// is due; ok is false when none is.
func (s *schedule) earliest() (first time.Time, ok bool) {
	for _, r := range s.recs.m {
		if r.hasPlan && r.plan.soon && (!ok || r.plan.at.Before(first)) {
			first, ok = r.plan.at, true
		}
	}
	return first, ok
}

// keep drops the plans of the JVMs for which alive is false: they are
// due as soon as they are seen again.
func (s *schedule) keep(alive func(pid int) bool) {
	for pid, r := range s.recs.m {
		if !alive(pid) {
			r.hasPlan = false
		}
	}
}
