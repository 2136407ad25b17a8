package exits

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/jvmend"
)

func decideOne(t *testing.T, j *Judge[string], at time.Time) []Decided[string] {
	t.Helper()
	return j.Decide(at)
}

// The orders in which a death, its kernel kill and a notice can reach the
// exporter, and what each must come to.
func TestJudgeRaces(t *testing.T) {
	cfg := Config{Delay: 5 * time.Second, Memory: 10 * time.Minute, MaxKills: 10}
	d := death(FileLeftBehind, calm) // noticed at LastAlive+5s
	type step struct {
		at     time.Duration // after d.Noticed
		do     func(j *Judge[string], at time.Time)
		decide bool
	}
	died := func(j *Judge[string], _ time.Time) { j.Died(d, "exec-1") }
	killed := func(received time.Time) func(j *Judge[string], _ time.Time) {
		return func(j *Judge[string], _ time.Time) { j.Killed(Kill{PID: 42, Received: received, Cause: "heap"}) }
	}
	notice := func(events ...string) func(j *Judge[string], at time.Time) {
		return func(j *Judge[string], at time.Time) { j.Notices(at, events) }
	}
	for _, tc := range []struct {
		name   string
		steps  []step
		want   string
		wantAt time.Duration // after d.Noticed
	}{
		{
			name:  "kill read before the death was noticed decides at once",
			steps: []step{{-3 * time.Second, killed(d.LastAlive.Add(time.Second)), true}, {0, died, true}},
			want:  ReasonOOMKilled, wantAt: 0,
		},
		{
			name:  "kill read after the JVM vanished, within the delay",
			steps: []step{{0, died, true}, {2 * time.Second, killed(d.Noticed.Add(2 * time.Second)), true}},
			want:  ReasonOOMKilled, wantAt: 2 * time.Second,
		},
		{
			name:  "no kill: decided when the delay is over, not before",
			steps: []step{{0, died, true}, {4 * time.Second, nil, true}, {5 * time.Second, nil, true}},
			want:  ReasonKilled, wantAt: 5 * time.Second,
		},
		{
			name:  "a kill read after the decision comes too late",
			steps: []step{{0, died, true}, {6 * time.Second, nil, true}, {7 * time.Second, killed(d.Noticed.Add(7 * time.Second)), true}},
			want:  ReasonKilled, wantAt: 6 * time.Second,
		},
		{
			name:  "a kill of the pid's previous process does not count",
			steps: []step{{-time.Hour - 10*time.Second, killed(d.Start.Add(-time.Second)), true}, {0, died, true}, {5 * time.Second, nil, true}},
			want:  ReasonKilled, wantAt: 5 * time.Second,
		},
		{
			name:  "notice pending before the death",
			steps: []step{{-30 * time.Second, notice("spot_interruption"), false}, {0, died, true}, {5 * time.Second, notice("spot_interruption"), true}},
			want:  ReasonInterrupted, wantAt: 5 * time.Second,
		},
		{
			name:  "notice polled only after the JVM vanished, within the delay",
			steps: []step{{0, died, true}, {3 * time.Second, notice("preemption"), true}, {5 * time.Second, nil, true}},
			want:  ReasonInterrupted, wantAt: 5 * time.Second,
		},
		{
			name: "notice withdrawn long before the death",
			steps: []step{{-10 * time.Minute, notice("spot_interruption"), false}, {-9 * time.Minute, notice(), false},
				{0, died, true}, {5 * time.Second, nil, true}},
			want: ReasonKilled, wantAt: 5 * time.Second,
		},
		{
			name:  "kill and notice both: the kernel kill",
			steps: []step{{-time.Minute, notice("spot_interruption"), false}, {0, died, true}, {time.Second, killed(d.Noticed.Add(time.Second)), true}},
			want:  ReasonOOMKilled, wantAt: time.Second,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := NewJudge[string](cfg)
			var got []Decided[string]
			for _, s := range tc.steps {
				at := d.Noticed.Add(s.at)
				if s.do != nil {
					s.do(j, at)
				}
				if s.decide {
					got = append(got, decideOne(t, j, at)...)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d decisions, want 1: %+v", len(got), got)
			}
			if got[0].Verdict.Reason != tc.want || got[0].Payload != "exec-1" {
				t.Errorf("decided %q for %q, want %q (%s)", got[0].Verdict.Reason, got[0].Payload, tc.want, got[0].Verdict.Evidence)
			}
			if want := d.Noticed.Add(tc.wantAt); !got[0].At.Equal(want) {
				t.Errorf("decided at %v after notice, want %v", got[0].At.Sub(d.Noticed), tc.wantAt)
			}
			if j.Pending() != 0 {
				t.Errorf("%d deaths still pending", j.Pending())
			}
		})
	}
}

func TestJudgeOneKillOneDeath(t *testing.T) {
	j := NewJudge[int](Config{Delay: time.Second})
	first := death(FileLeftBehind, calm)
	j.Killed(Kill{PID: 42, Received: first.Noticed})
	j.Died(first, 1)
	if got := j.Decide(first.Noticed); len(got) != 1 || got[0].Verdict.Reason != ReasonOOMKilled {
		t.Fatalf("first death: %+v", got)
	}
	// The pid comes back as another JVM that then dies: the kill was spent.
	second := first
	second.Start = first.Noticed.Add(time.Second)
	second.LastAlive, second.Noticed = second.Start.Add(time.Minute), second.Start.Add(time.Minute+time.Second)
	j.Died(second, 2)
	if got := j.Decide(second.Noticed.Add(time.Second)); len(got) != 1 || got[0].Verdict.Reason != ReasonKilled {
		t.Fatalf("second death: %+v", got)
	}
}

// A pid reused within the delay: two deaths of pid 42 wait, and one kill
// read after both processes started could be either's. It explains one
// death only (the earlier: a blind spot docs/exits.md names).
func TestJudgeKillExplainsOneDeath(t *testing.T) {
	j := NewJudge[int](Config{Delay: 5 * time.Second})
	first := death(FileLeftBehind, calm)
	second := first
	second.Start = first.Noticed.Add(100 * time.Millisecond)
	second.LastAlive, second.Noticed = second.Start.Add(time.Second), second.Start.Add(2*time.Second)
	j.Died(first, 1)
	j.Died(second, 2)
	j.Killed(Kill{PID: 42, Received: second.Noticed})
	got := j.Decide(second.Noticed)
	got = append(got, j.Decide(second.Noticed.Add(5*time.Second))...)
	reasons := map[int]string{}
	for _, d := range got {
		reasons[d.Payload] = d.Verdict.Reason
	}
	if reasons[1] != ReasonOOMKilled || reasons[2] != ReasonKilled {
		t.Errorf("reasons %v, want the kill on the first death only", reasons)
	}
}

func TestJudgeForgets(t *testing.T) {
	j := NewJudge[int](Config{Delay: time.Second, Memory: time.Minute, MaxKills: 2})
	for i := range 3 {
		j.Killed(Kill{PID: 100 + i, Received: t0})
	}
	if len(j.kills) != 2 || j.kills[0].PID != 101 {
		t.Fatalf("kills kept past MaxKills: %+v", j.kills)
	}
	j.Notices(t0, []string{"spot_interruption"})
	j.Notices(t0.Add(time.Second), nil)
	j.Notices(t0.Add(2*time.Second), []string{"preemption"})
	j.Decide(t0.Add(time.Minute + 2*time.Second))
	if len(j.kills) != 0 {
		t.Errorf("kills older than Memory kept: %+v", j.kills)
	}
	// The ended notice is forgotten; the one still pending is kept and
	// goes on being extended.
	if len(j.notices) != 1 || j.notices[0].Event != "preemption" {
		t.Fatalf("notices: %+v", j.notices)
	}
	j.Notices(t0.Add(2*time.Minute), []string{"preemption"})
	if len(j.notices) != 1 || !j.notices[0].Last.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("open notice not extended: %+v", j.notices)
	}
}

// Whatever the order of deaths, kills, notices and decisions, every death
// is decided exactly once, never before it was noticed, never later than
// Delay after the first Decide call that follows, and oom_killed exactly
// when a kill of that process was read by the time of the decision.
func TestJudgeProperties(t *testing.T) {
	const delay = 5 * time.Second
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		j := NewJudge[int](Config{Delay: delay, MaxKills: 1000})
		now := t0
		deaths := map[int]Death{}
		var kills []Kill
		decided := map[int]Decided[int]{}
		id := 0
		for range 200 {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			switch rng.IntN(4) {
			case 0:
				id++
				pid := 1 + rng.IntN(5) // few pids: reuse is common
				start := now.Add(-time.Duration(rng.IntN(600)) * time.Second)
				for _, prev := range deaths {
					if prev.PID == pid && start.Before(prev.Noticed) {
						start = prev.Noticed // a pid is reused only once its holder is gone
					}
				}
				d := Death{End: jvmend.End{PID: pid, Start: start, LastAlive: now.Add(-time.Duration(rng.IntN(5000)) * time.Millisecond), Noticed: now,
					File: File(rng.IntN(3))}}
				if d.LastAlive.Before(start) {
					d.LastAlive = start
				}
				deaths[id] = d
				j.Died(d, id)
			case 1:
				k := Kill{PID: 1 + rng.IntN(5), Received: now}
				kills = append(kills, k)
				j.Killed(k)
			case 2:
				var events []string
				if rng.IntN(2) == 0 {
					events = []string{"spot_interruption"}
				}
				j.Notices(now, events)
			case 3:
				for _, dd := range j.Decide(now) {
					if _, twice := decided[dd.Payload]; twice {
						t.Fatalf("seed %d: death %d decided twice", seed, dd.Payload)
					}
					decided[dd.Payload] = dd
				}
			}
		}
		now = now.Add(delay)
		for _, dd := range j.Decide(now) {
			decided[dd.Payload] = dd
		}
		if len(decided) != len(deaths) {
			t.Fatalf("seed %d: %d of %d deaths decided", seed, len(decided), len(deaths))
		}
		for id, dd := range decided {
			d := deaths[id]
			if dd.At.Before(d.Noticed) {
				t.Errorf("seed %d: death %d decided before it was noticed", seed, id)
			}
			killedByThen := false
			for _, k := range kills {
				killedByThen = killedByThen || k.Matches(d, dd.At)
			}
			if dd.Verdict.Reason == ReasonOOMKilled && !killedByThen {
				t.Errorf("seed %d: death %d oom_killed without a kill", seed, id)
			}
			if dd.Verdict.Reason != ReasonOOMKilled && dd.At.Sub(d.Noticed) < delay {
				t.Errorf("seed %d: death %d decided %v after notice without a kill", seed, id, dd.At.Sub(d.Noticed))
			}
		}
	}
}
