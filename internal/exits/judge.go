package exits

import (
	"slices"
	"time"
)

// Config configures a Judge.
type Config struct {
	// Delay is how long after a death was noticed the judge waits for a
	// kernel kill record or an interruption notice that is read late
	// before it decides. A matching kill decides at once.
	Delay time.Duration
	// Memory is how long kills and notices are kept for deaths noticed
	// after them.
	Memory time.Duration
	// MaxKills bounds the kills kept; the oldest goes first.
	MaxKills int
	// YARNStatus, when set, returns the NodeManager's exit status of a
	// finished YARN container (ok false while it is not known). A death in
	// a YARN container waits for it up to YARNWait after it was noticed:
	// the NodeManager marks the container finished after its process is
	// gone, and the status is read at the next poll.
	YARNStatus func(containerID string) (YARNStatus, bool)
	YARNWait   time.Duration
}

// DefaultConfig: the kernel prints a kill before its victim is gone, so its
// record is read within milliseconds unless the machine is overloaded; the
// delay is that margin, and the time for a notice polled just after the
// end. Its cost: every death is counted this much later.
// YARNWait covers two hurried polls of the NodeManager (2 s each) and
// the time it takes to mark a killed container finished.
var DefaultConfig = Config{Delay: 2 * time.Second, Memory: 10 * time.Minute, MaxKills: 1000, YARNWait: 8 * time.Second}

// Decided is a death and its verdict, with what the caller attached to it.
type Decided[T any] struct {
	Death   Death
	Verdict Verdict
	Payload T
	At      time.Time // when it was decided
}

type pending[T any] struct {
	death   Death
	payload T
}

// Judge collects deaths, kernel kills and interruption notices as they
// come, in any order, and decides each death exactly once: as soon as a
// kill matches it, or Delay after it was noticed. It is not safe for
// concurrent use.
type Judge[T any] struct {
	cfg     Config
	pending []pending[T]
	kills   []Kill
	notices []Interruption // oldest first; open[event] indexes the one still pending
	open    map[string]int
}

// NewJudge returns a judge; zero fields of cfg take DefaultConfig's.
func NewJudge[T any](cfg Config) *Judge[T] {
	if cfg.Delay <= 0 {
		cfg.Delay = DefaultConfig.Delay
	}
	if cfg.Memory <= 0 {
		cfg.Memory = DefaultConfig.Memory
	}
	if cfg.MaxKills <= 0 {
		cfg.MaxKills = DefaultConfig.MaxKills
	}
	if cfg.YARNWait <= 0 {
		cfg.YARNWait = DefaultConfig.YARNWait
	}
	return &Judge[T]{cfg: cfg, open: map[string]int{}}
}

// Died adds a death to be decided.
func (j *Judge[T]) Died(d Death, payload T) {
	j.pending = append(j.pending, pending[T]{d, payload})
}

// Killed adds a kernel OOM kill of a tracked JVM.
func (j *Judge[T]) Killed(k Kill) {
	if len(j.kills) >= j.cfg.MaxKills {
		j.kills = j.kills[1:]
	}
	j.kills = append(j.kills, k)
}

// Notices records which interrupting notices are pending at a moment (an
// empty list: none); call it whenever the cloud's state is looked at.
func (j *Judge[T]) Notices(at time.Time, events []string) {
	for event := range j.open {
		if !slices.Contains(events, event) {
			delete(j.open, event) // ended; its last sighting stays
		}
	}
	for _, event := range events {
		if i, ok := j.open[event]; ok {
			j.notices[i].Last = at
			continue
		}
		j.open[event] = len(j.notices)
		j.notices = append(j.notices, Interruption{Event: event, First: at, Last: at})
	}
}

// Pending returns how many deaths wait for a decision.
func (j *Judge[T]) Pending() int { return len(j.pending) }

// Decide returns the deaths that can be decided at now, each once, and
// forgets kills and notices older than Memory.
func (j *Judge[T]) Decide(now time.Time) []Decided[T] {
	var out []Decided[T]
	keep := j.pending[:0]
	for _, p := range j.pending {
		ki := slices.IndexFunc(j.kills, func(k Kill) bool { return k.Matches(p.death, now) })
		waitYARN := j.yarnStatus(&p.death) && now.Sub(p.death.Noticed) < j.cfg.YARNWait
		if ki < 0 && (now.Sub(p.death.Noticed) < j.cfg.Delay || waitYARN) {
			keep = append(keep, p)
			continue
		}
		var kill *Kill
		if ki >= 0 {
			k := j.kills[ki]
			kill = &k
			j.kills = slices.Delete(j.kills, ki, ki+1) // one kill, one death
		}
		var notice *Interruption
		if ni := slices.IndexFunc(j.notices, func(n Interruption) bool { return n.Overlaps(p.death, now) }); ni >= 0 {
			n := j.notices[ni]
			notice = &n
		}
		out = append(out, Decided[T]{Death: p.death, Verdict: Decide(p.death, kill, notice), Payload: p.payload, At: now})
	}
	clear(j.pending[len(keep):])
	j.pending = keep
	j.forget(now)
	return out
}

// yarnStatus fills a YARN death's NodeManager status when it is known,
// and reports whether it is still missing.
func (j *Judge[T]) yarnStatus(d *Death) (missing bool) {
	if d.YARN == nil || d.YARN.Status != nil || j.cfg.YARNStatus == nil {
		return false
	}
	st, ok := j.cfg.YARNStatus(d.YARN.ContainerID)
	if !ok {
		return true
	}
	y := *d.YARN // the caller's evidence stays as it was handed over
	y.Status = &st
	d.YARN = &y
	return false
}

func (j *Judge[T]) forget(now time.Time) {
	cutoff := now.Add(-j.cfg.Memory)
	j.kills = slices.DeleteFunc(j.kills, func(k Kill) bool { return k.Received.Before(cutoff) })
	kept := j.notices[:0]
	open := map[string]int{}
	for i, n := range j.notices {
		if n.Last.Before(cutoff) {
			continue // a notice still pending was seen at the last Notices call
		}
		if oi, ok := j.open[n.Event]; ok && oi == i {
			open[n.Event] = len(kept)
		}
		kept = append(kept, n)
	}
	j.notices, j.open = kept, open
}
