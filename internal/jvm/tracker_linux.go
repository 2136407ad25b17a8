package jvm

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/procfs"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// Reasons a found JVM was not read, for executor_jvm_read_errors_total.
const (
	ReasonPermission = "permission" // the exporter may not read its hsperfdata
	ReasonCorrupt    = "corrupt"    // the hsperfdata file does not parse
	ReasonStale      = "stale"      // the file is older than the process: a dead JVM's, pid reused
	ReasonUntrusted  = "untrusted"  // a symlink, not a regular file, or not owned by the process's user
	ReasonRead       = "read"       // any other I/O error
	ReasonCgroup     = "cgroup"     // the JVM was read but its memory cgroup was not
	// ReasonNativeMemory: the JVM was read but its mappings could not be
	// broken down (smaps unreadable, too large, too slow, malformed).
	ReasonNativeMemory = "native_memory"
)

const (
	maxCmdlineBytes = 1 << 20   // Spark classpaths run to hundreds of KiB
	maxEnvironBytes = 256 << 10 // the Spark variables are set by the launcher, early in the block
	// startSlack absorbs clock granularity and small wall-clock steps when
	// comparing the process start (whole-second boot time + 10 ms ticks)
	// with the JVM's creation time (wall-clock ms); see isStale. A pid
	// reused within it is caught once the dead JVM's timer has stood still
	// for frozenAfter.
	startSlack = 2 * time.Second
	// logEvery bounds how often one JVM's failure is logged: a broken JVM
	// must not write a line every few seconds.
	logEvery = 10 * time.Minute
)

// Config is the tracker's configuration; the collector package fills it
// from flags.
type Config struct {
	ProcFS    string
	SysFS     string
	Retention time.Duration // how long the last sample of a gone JVM is kept
	// EndedRetention is how long a JVM that ended stays in View.Ended,
	// with its final peaks.
	EndedRetention time.Duration
	MaxProcesses   int // cardinality guard: JVMs beyond it are not read
	// Sampling says how often each JVM is read in the background; a zero
	// Slowest samples only on Refresh.
	Sampling SamplingConfig
	// MaxAge lets Current serve a view younger than this instead of
	// reading every JVM again, when nothing samples in the background;
	// 0 reads on every call.
	MaxAge time.Duration
	// Native says when each JVM's native memory is broken down by region,
	// in a loop of its own beside background sampling; a zero MaxAge
	// turns it off.
	Native NativeConfig
	// YARN gives the allocation of a JVM's YARN container; nil off YARN.
	YARN YARNSource
}

// YARNSource is what the tracker asks of YARN's NodeManager: a container's
// memory allocation. It answers from what it holds, never waiting.
type YARNSource interface {
	Allocation(containerID string) (uint64, bool)
}

// JVM is everything read about one JVM in one refresh.
type JVM struct {
	Sample
	MainClass string
	Xmx       string
	Pod       string
	// ProcessStart is when the process started, which tells a JVM from
	// another that reused its pid.
	ProcessStart time.Time
	Stats        hsperf.Stats
	Cgroup       procmem.CgroupMemory
	HasCgroup    bool
	// Counters is CountersHsperf, or why the JVM publishes no hsperfdata:
	// then Stats is empty and only identity, RSS and cgroup are known.
	Counters string
	// NearAllocation: its budget is its YARN container's allocation, and
	// at its last reading it was near it (nearAllocation), so the
	// NodeManager's word on a kill must be read before it drops the
	// container.
	NearAllocation bool
}

// View is the result of one refresh.
type View struct {
	JVMs    []JVM // sorted by pid
	Dropped int   // JVMs found but not read because of MaxProcesses
	Time    time.Time
	// Ended is the last sample of each JVM that ended within
	// Config.EndedRetention, sorted by pid, but for pids a JVM in JVMs has
	// taken since: their final peaks stay readable after the end.
	Ended []Sample
}

// Tracker finds and reads the JVMs on the machine, on demand and in the
// background, and remembers the last sample of each for a while after it
// is gone. It is safe for concurrent use.
type Tracker struct {
	cfg    Config
	logger log.Logger

	refreshMu sync.Mutex // serialises scans; concurrent callers share one
	view      View
	lastDone  time.Time
	loggedAt  map[string]time.Time
	// A scan lists the processes (procs, which follows them from scan to
	// scan so that a scan reads the JVMs and their trees, not every
	// process), finds the JVMs among them (found), reads those that are
	// due (read, when sched says), and notices the ones that ended (ends).
	procs *procmem.ProcessWatch // made by the first scan
	recs  records               // what the tracker keeps of each JVM, live or ended (record_linux.go)
	found *discovery
	ids   identityReader
	read  *reader
	ends  *ends
	sched *schedule
	// native breaks JVMs' memory down by region in a loop of its own,
	// woken by viewMade after each background scan; nil when turned off.
	native     *nativeReader
	nativeDone chan struct{}
	viewMade   chan struct{}

	mu     sync.RWMutex // guards errors and last, read without waiting for a scan
	last   View         // the view of the last scan, for Last
	errors map[string]uint64
	reads  uint64 // JVMs read, in the background and on Refresh

	hooksMu sync.Mutex // serialises OnScan
	hooks   atomic.Pointer[[]func(time.Time, View, []Exit)]

	startOnce sync.Once
	stopOnce  sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// NewTracker returns a tracker; Start begins background sampling.
func NewTracker(cfg Config, logger log.Logger) (*Tracker, error) {
	if _, err := procfs.NewFS(cfg.ProcFS); err != nil {
		return nil, fmt.Errorf("open procfs: %w", err)
	}
	if cfg.MaxProcesses <= 0 {
		return nil, errors.New("max processes must be positive")
	}
	cfg.Sampling = cfg.Sampling.normalized()
	recs := newRecords()
	t := &Tracker{
		cfg:        cfg,
		logger:     logger,
		found:      newDiscovery(cfg.ProcFS),
		ids:        newIdentityReader(cfg.ProcFS),
		recs:       recs,
		read:       newReader(cfg.ProcFS, cfg.SysFS, recs),
		ends:       newEnds(cfg.ProcFS, recs),
		sched:      newSchedule(recs),
		loggedAt:   map[string]time.Time{},
		errors:     map[string]uint64{},
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		nativeDone: make(chan struct{}),
		viewMade:   make(chan struct{}, 1),
	}
	if cfg.Native.MaxAge > 0 {
		t.native = newNativeReader(cfg.Native, cfg.ProcFS, recs, t.nativeFailed)
	}
	return t, nil
}

// Start begins sampling in the background, each JVM as often as its risk
// says (SamplingConfig), so the last sample before an OOM kill is recent
// even when no one scrapes. It is idempotent.
func (t *Tracker) Start() {
	t.startOnce.Do(func() {
		if t.cfg.Sampling.Slowest <= 0 {
			close(t.done)
			close(t.nativeDone)
			return
		}
		go t.loop()
		if t.native == nil {
			close(t.nativeDone)
			return
		}
		go t.nativeLoop()
	})
}

// Stop ends background sampling and waits for it.
func (t *Tracker) Stop() {
	t.stopOnce.Do(func() { close(t.stop) })
	t.Start() // a never-started tracker has nothing to wait for
	<-t.done
	<-t.nativeDone
	t.close()
}

// Done is closed once background sampling has ended (after Stop, or at
// once when it never samples in the background).
func (t *Tracker) Done() <-chan struct{} { return t.done }

// loop scans when a JVM is due or when discovery is; between, it sleeps.
func (t *Tracker) loop() {
	defer close(t.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-timer.C:
		}
		next := t.sampleInBackground()
		timer.Stop()
		timer.Reset(time.Until(next))
	}
}

// sampleInBackground reads the JVMs that are due, and returns when to
// look again. A failure of the whole scan (procfs cannot be listed) is
// logged, at most once per logEvery, and the scrape reports it too.
func (t *Tracker) sampleInBackground() time.Time {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	now := time.Now()
	next := t.sched.nextScan(now, t.cfg.Sampling.Discovery)
	view, made, err := t.scan(false)
	if err != nil {
		t.logOnce("refresh", now, level.Error, "msg", "background JVM sampling failed", "err", err)
		return next
	}
	if !made {
		return t.nextDue(next)
	}
	t.view, t.lastDone = view, time.Now()
	t.remember(view)
	select {
	case t.viewMade <- struct{}{}:
	default: // the native loop has one to look at already
	}
	return t.nextDue(next)
}

// nextDue is next, or sooner when a JVM due before the next discovery
// scan is.
func (t *Tracker) nextDue(next time.Time) time.Time {
	if due, ok := t.sched.earliest(); ok && due.Before(next) {
		return due
	}
	return next
}

// LastSample implements SampleSource. A nil tracker knows no JVM.
func (t *Tracker) LastSample(pid int) (Sample, bool) {
	if t == nil {
		return Sample{}, false
	}
	return t.recs.lastSample(pid)
}

// ErrorCounts returns how many times a found JVM could not be read, by
// reason, since the tracker started.
func (t *Tracker) ErrorCounts() map[string]uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]uint64, len(t.errors))
	for k, v := range t.errors {
		out[k] = v
	}
	return out
}

// Current returns what the background sampling last read, without
// waiting for a scan in progress: a scrape never waits for a slow JVM.
// Without background sampling it returns the last view if it is younger
// than MaxAge, and reads every JVM otherwise.
func (t *Tracker) Current() (View, error) {
	if t.cfg.Sampling.Slowest > 0 {
		t.mu.RLock()
		view, read := t.last, !t.last.Time.IsZero()
		t.mu.RUnlock()
		if read {
			return view, nil
		}
		return t.Refresh() // the first scan: waits for the loop's, or runs it
	}
	if t.cfg.MaxAge > 0 {
		t.refreshMu.Lock()
		view, done := t.view, t.lastDone
		t.refreshMu.Unlock()
		if !done.IsZero() && time.Since(done) < t.cfg.MaxAge {
			return view, nil
		}
	}
	return t.Refresh()
}

// LiveSamples implements SampleSource: the last sample of every JVM the
// last scan found alive. A nil tracker knows none.
func (t *Tracker) LiveSamples() []Sample {
	if t == nil {
		return nil
	}
	view := t.Last()
	out := make([]Sample, len(view.JVMs))
	for i := range view.JVMs {
		out[i] = view.JVMs[i].Sample
	}
	return out
}

// Last returns the view of the last scan, however old, without reading
// anything or waiting for a scan in progress: the status page shows what
// the exporter already knows. It is the zero View before the first scan.
func (t *Tracker) Last() View {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.last
}

// Refresh reads every JVM now. Callers that arrive while a scan runs wait
// for it and share its result instead of starting another one.
func (t *Tracker) Refresh() (View, error) {
	asked := time.Now()
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	if !t.lastDone.Before(asked) {
		return t.view, nil
	}
	view, _, err := t.scan(true)
	if err != nil {
		return View{}, err
	}
	t.view, t.lastDone = view, time.Now()
	t.remember(view)
	return view, nil
}

func (t *Tracker) remember(view View) {
	t.mu.Lock()
	t.last = view
	t.mu.Unlock()
}

func (t *Tracker) countError(reason string) {
	t.mu.Lock()
	t.errors[reason]++
	t.mu.Unlock()
}

// Reads says how many times a JVM was read since the tracker started, in
// the background and on Refresh: what sampling costs.
func (t *Tracker) Reads() uint64 {
	if t == nil {
		return 0
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.reads
}

// close releases what the scans keep open; the tracker is stopping. A
// scan after it starts afresh.
func (t *Tracker) close() {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	if t.procs != nil {
		_ = t.procs.Close()
		t.procs = nil
	}
	t.read.close()
	t.ends.close()
}

func (t *Tracker) logFailure(c Candidate, reason string, err error, now time.Time) {
	lvl := level.Warn
	if reason == ReasonStale {
		lvl = level.Debug
	}
	t.logOnce(fmt.Sprintf("%d/%s", c.PID, reason), now, lvl,
		"msg", "skipping JVM", "pid", c.PID, "nspid", c.NSPID, "dir", c.Dir, "reason", reason, "err", err)
}

// logOnce logs at most once per logEvery for a key.
func (t *Tracker) logOnce(key string, now time.Time, lvl func(log.Logger) log.Logger, keyvals ...interface{}) {
	if at, ok := t.loggedAt[key]; ok && now.Sub(at) < logEvery {
		return
	}
	t.loggedAt[key] = now
	lvl(t.logger).Log(keyvals...)
}
