package jvm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"
	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// NativeConfig says when a JVM's native memory is broken down. A smaps
// read costs milliseconds, a thousand times a hsperfdata read, so it is
// made when it can change the answer, never on the scrape path.
type NativeConfig struct {
	// MinInterval is the least time between two breakdowns of one JVM.
	MinInterval time.Duration
	// MaxAge is the longest a breakdown goes unchecked; a check that finds
	// the mappings and the resident size unchanged costs a maps read only.
	MaxAge time.Duration
	// MoveBytes and MoveShare: a breakdown is due when the JVM's memory
	// outside the heap, or its container's usage, moved by either.
	MoveBytes uint64
	MoveShare float64
	// MaxReadsPerTick spreads the first breakdowns of many JVMs.
	MaxReadsPerTick int
	// Startup is the JVM's start-up (class loading and the JIT grow its
	// memory): the first breakdown after it is the base that later growth
	// is measured from.
	Startup time.Duration
}

// DefaultNativeConfig is the policy of docs/jvm.md#native-memory-by-region.
var DefaultNativeConfig = NativeConfig{
	MinInterval:     10 * time.Second,
	MaxAge:          15 * time.Minute,
	MoveBytes:       32 << 20,
	MoveShare:       0.10,
	MaxReadsPerTick: 10,
	Startup:         time.Minute,
}

const (
	// maxSmapsBytes and maxSmapsTime bound one read: about 40,000
	// mappings, far past any JVM's, and a kernel that takes long to walk
	// a huge address space.
	maxSmapsBytes = 32 << 20
	maxSmapsTime  = 2 * time.Second
)

// ErrSmapsTooSlow is returned for a smaps read that took longer than the
// bound.
var ErrSmapsTooSlow = errors.New("smaps read took too long")

// nativeReader breaks each JVM's memory down by region in its own loop,
// from the tracker's last view, when the policy says it is due.
type nativeReader struct {
	cfg      NativeConfig
	procPath string
	failed   func(pid int, err error)

	smaps nativemem.SmapsReader

	// recs are the tracker's: a JVM's state is its record's native, which
	// mu guards (scans read it).
	recs records
	mu   sync.Mutex

	// reads and checks count smaps and maps reads, what the breakdowns cost.
	reads, checks atomic.Uint64
}

type nativeState struct {
	start   time.Time // process start: a reused pid starts afresh
	mem     *NativeMemory
	tried   time.Time // last read or check, successful or not
	nonHeap uint64    // at the last breakdown
	usage   uint64
	band    int
	layout  uint64 // nativemem.Fingerprint of the mappings at the last breakdown
}

func newNativeReader(cfg NativeConfig, procPath string, recs records, failed func(int, error)) *nativeReader {
	return &nativeReader{cfg: cfg, procPath: procPath, recs: recs, failed: failed}
}

// get returns the last breakdown of the JVM pid that started at start.
// Scans call it, and own the records.
func (r *nativeReader) get(pid int, start time.Time) *NativeMemory {
	rec, ok := r.recs.get(pid, start)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.native != nil {
		return rec.native.mem
	}
	return nil
}

// state is the breakdown state of j, in its record; nil when the tracker
// keeps no record of j's process (gone since the view was made).
func (r *nativeReader) state(j *JVM) *nativeState {
	r.recs.mu.RLock()
	rec := r.recs.m[j.PID]
	r.recs.mu.RUnlock()
	if rec == nil || !rec.start.Equal(j.ProcessStart) {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.native == nil {
		rec.native = &nativeState{start: j.ProcessStart}
	}
	return rec.native
}

// update reads the breakdowns that are due among view's JVMs. capped says
// that some due were left for the next update (MaxReadsPerTick). A JVM's
// state goes with its record.
func (r *nativeReader) update(view View, now time.Time) (capped bool) {
	reads := 0
	for i := range view.JVMs {
		j := &view.JVMs[i]
		if j.Counters != CountersHsperf || j.ProcessStart.IsZero() {
			continue // no layout to find the JVM's reservations with
		}
		s := r.state(j)
		if s == nil {
			continue
		}
		switch r.due(s, j, now) {
		case dueRead:
			if reads >= r.cfg.MaxReadsPerTick {
				capped = true
				continue
			}
			reads++
			r.read(s, j, now)
		case dueCheck:
			r.check(s, j, now)
		}
	}
	return capped
}

type dueness int

const (
	notDue dueness = iota
	dueCheck
	dueRead
)

// due applies the policy: a first breakdown at once, another when the
// start-up is over (the base), then when its memory outside
// the heap or its container's usage moved, when its container crosses 75 %
// or 90 % of its limit, and a check every MaxAge.
func (r *nativeReader) due(s *nativeState, j *JVM, now time.Time) dueness {
	// Above 90 % of its limit a JVM that moves is read five times as
	// often: a fast leak there is seconds from the kill, whose verdict
	// needs the last breakdown to have seen it grow.
	minInterval := r.cfg.MinInterval
	if bandOf(j) == 2 {
		minInterval /= 5
	}
	if !s.tried.IsZero() && now.Sub(s.tried) < minInterval {
		return notDue
	}
	if s.mem == nil {
		return dueRead
	}
	if !based(s.mem, j, r.cfg.Startup) && now.Sub(j.ProcessStart) >= r.cfg.Startup {
		return dueRead // the base
	}
	// A container's usage counts only for a JVM with a limit of its own:
	// a cgroup without one (a systemd service, the root) is shared with
	// other processes whose memory moves all the time.
	if r.moved(s.nonHeap, nonHeapOf(j)) || j.CgroupLimit > 0 && r.moved(s.usage, j.CgroupUsage) || bandOf(j) > s.band {
		return dueRead
	}
	if now.Sub(s.mem.Checked) >= r.cfg.MaxAge {
		return dueCheck
	}
	return notDue
}

// moved: by MoveBytes, or by MoveShare and a quarter of MoveBytes, so
// that a small JVM's few MiB of noise do not read it every MinInterval.
func (r *nativeReader) moved(was, is uint64) bool {
	d := max(was, is) - min(was, is)
	return d >= r.cfg.MoveBytes || d >= r.cfg.MoveBytes/4 && float64(d) >= r.cfg.MoveShare*float64(was)
}

// based: the base growth is measured from is set, being the first
// breakdown taken once the JVM's start-up was over.
func based(m *NativeMemory, j *JVM, startup time.Duration) bool {
	return m != nil && m.First.Time.Sub(j.ProcessStart) >= startup
}

// nonHeapOf is the JVM's resident memory outside its committed heap, the
// cheap figure every scan has.
func nonHeapOf(j *JVM) uint64 { return j.RSSJVM - min(j.RSSJVM, j.HeapCommitted) }

// bandOf is 0 below 75 % of the container's limit, 1 below 90 %, 2 above.
func bandOf(j *JVM) int {
	if j.CgroupLimit == 0 {
		return 0
	}
	switch u := float64(j.CgroupUsage) / float64(j.CgroupLimit); {
	case u >= 0.9:
		return 2
	case u >= 0.75:
		return 1
	}
	return 0
}

func (r *nativeReader) read(s *nativeState, j *JVM, now time.Time) {
	s.tried = now
	r.reads.Add(1)
	ms, err := r.readMappings(j.PID, "smaps")
	if err != nil {
		if !isGone(err) {
			r.failed(j.PID, err)
		}
		return
	}
	reading := nativemem.Reading{
		Time:     now,
		Regions:  nativemem.Classify(ms, nativemem.LayoutOf(&j.Stats)),
		Shmem:    j.Cgroup.Shmem,
		HasShmem: j.HasCgroup && j.Cgroup.HasShmem,
	}
	mem := &NativeMemory{First: reading, Last: reading, Checked: now}
	// The base stays once set. Until then growth is measured from the
	// first breakdown, so that a JVM killed in its first minute is judged
	// by what grew since; the first breakdown after the start-up replaces
	// it.
	if s.mem != nil && (based(s.mem, j, r.cfg.Startup) || !based(mem, j, r.cfg.Startup)) {
		mem.First = s.mem.First
	}
	r.mu.Lock()
	s.mem, s.nonHeap, s.usage, s.band, s.layout = mem, nonHeapOf(j), j.CgroupUsage, bandOf(j), nativemem.Fingerprint(ms)
	r.mu.Unlock()
}

// check confirms an old breakdown when the process's mappings are the same
// as then (a maps read, a twentieth of a smaps read) and its resident size
// has not moved; anything else reads the breakdown again.
func (r *nativeReader) check(s *nativeState, j *JVM, now time.Time) {
	r.checks.Add(1)
	ms, err := r.readMappings(j.PID, "maps")
	if err == nil && nativemem.Fingerprint(ms) == s.layout && !r.moved(s.mem.Last.Regions.Total(), j.RSSJVM) {
		s.tried = now
		mem := *s.mem
		mem.Checked = now
		r.mu.Lock()
		s.mem = &mem
		r.mu.Unlock()
		return
	}
	r.read(s, j, now)
}

// readMappings parses /proc/<pid>/smaps, or maps (the same mappings
// without their sizes), opened without following a symlink and read a
// page at a time through a reader bounded in size and time: the kernel
// writes them a page at a time, so no one read call takes long, and a
// process with many mappings costs its mappings, not its file. The
// mappings are valid until the next read.
func (r *nativeReader) readMappings(pid int, file string) ([]nativemem.Mapping, error) {
	f, err := os.OpenFile(r.procPath+"/"+strconv.Itoa(pid)+"/"+file, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return r.smaps.Read(&boundedReader{f: f, left: maxSmapsBytes, deadline: time.Now().Add(maxSmapsTime)})
}

// boundedReader fails a read past maxSmapsBytes or past its deadline.
type boundedReader struct {
	f        *os.File
	left     int
	deadline time.Time
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%s: %w: more than %d bytes", b.f.Name(), ErrTooLarge, maxSmapsBytes)
	}
	if time.Now().After(b.deadline) {
		return 0, fmt.Errorf("%s: %w (%v)", b.f.Name(), ErrSmapsTooSlow, maxSmapsTime)
	}
	n, err := b.f.Read(p)
	b.left -= n
	return n, err
}

// nativeLoop looks at each new view the background sampling makes: what
// it decides from does not change between. Breakdowns left for later by
// MaxReadsPerTick (the first ones of a node with many JVMs) are read a
// discovery interval later from the same view, so that they do not wait
// for the JVMs' next readings: a quiet node makes a view every 30 s.
func (t *Tracker) nativeLoop() {
	defer close(t.nativeDone)
	var again <-chan time.Time
	for {
		select {
		case <-t.stop:
			return
		case <-t.viewMade:
		case <-again:
		}
		again = nil
		if t.native.update(t.Last(), time.Now()) {
			again = time.After(t.cfg.Sampling.Discovery)
		}
	}
}

// nativeFailed counts and logs a breakdown that could not be read.
func (t *Tracker) nativeFailed(pid int, err error) {
	t.countError(ReasonNativeMemory)
	now := time.Now()
	t.refreshMu.Lock()
	t.logOnce("native:"+strconv.Itoa(pid), now, level.Warn, "msg", "cannot break a JVM's memory down by region", "pid", pid, "err", err)
	t.refreshMu.Unlock()
}

// NativeReads says how many breakdowns were read (smaps) and how many
// checks found one still true (maps only) since the tracker started.
func (t *Tracker) NativeReads() (reads, checks uint64) {
	if t == nil || t.native == nil {
		return 0, 0
	}
	return t.native.reads.Load(), t.native.checks.Load()
}
