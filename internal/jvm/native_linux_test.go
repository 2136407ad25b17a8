package jvm

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// policyJVM is a JVM of 1 GiB in a 2 GiB container, started 10 minutes
// before t0: past its start-up.
func policyJVM(t0 time.Time) JVM {
	return JVM{
		Sample: Sample{
			Identity: Identity{PID: 42}, HeapCommitted: 512 << 20, RSSJVM: 1024 << 20,
			CgroupLimit: 2048 << 20, CgroupUsage: 1024 << 20,
		},
		ProcessStart: t0.Add(-10 * time.Minute),
		Counters:     CountersHsperf,
	}
}

// policyState is the state after a breakdown of j at when.
func policyState(j *JVM, when time.Time) *nativeState {
	r := nativemem.Reading{Time: when}
	r.Regions[nativemem.Heap] = 1024 << 20
	return &nativeState{
		start: j.ProcessStart, tried: when, mem: &NativeMemory{First: r, Last: r, Checked: when},
		nonHeap: nonHeapOf(j), usage: j.CgroupUsage, band: bandOf(j),
	}
}

// The policy at its boundaries: each trigger just below and at its value.
func TestNativePolicy(t *testing.T) {
	r := newNativeReader(DefaultNativeConfig, "/proc", newRecords(), nil)
	t0 := time.Unix(1_800_000_000, 0)
	later := t0.Add(time.Minute) // past MinInterval
	for _, tc := range []struct {
		name   string
		change func(j *JVM, s *nativeState, now *time.Time)
		want   dueness
	}{
		{"nothing moved", func(*JVM, *nativeState, *time.Time) {}, notDue},
		{"never read", func(_ *JVM, s *nativeState, _ *time.Time) { s.mem, s.tried = nil, time.Time{} }, dueRead},
		{"non-heap moved 32 MiB but within MinInterval", func(j *JVM, _ *nativeState, now *time.Time) {
			j.RSSJVM += 32 << 20
			*now = t0.Add(DefaultNativeConfig.MinInterval - time.Millisecond)
		}, notDue},
		{"above 90 %: moved a fifth of MinInterval after the last", func(j *JVM, s *nativeState, now *time.Time) {
			j.CgroupUsage = 1900 << 20
			s.usage, s.band = j.CgroupUsage, 2
			j.RSSJVM += 32 << 20
			*now = t0.Add(DefaultNativeConfig.MinInterval / 5)
		}, dueRead},
		{"above 90 %: moved just under a fifth of MinInterval after the last", func(j *JVM, s *nativeState, now *time.Time) {
			j.CgroupUsage = 1900 << 20
			s.usage, s.band = j.CgroupUsage, 2
			j.RSSJVM += 32 << 20
			*now = t0.Add(DefaultNativeConfig.MinInterval/5 - time.Millisecond)
		}, notDue},
		{"non-heap moved 32 MiB - 1 (under 10 % of 512 MiB)", func(j *JVM, _ *nativeState, _ *time.Time) { j.RSSJVM += 32<<20 - 1 }, notDue},
		{"non-heap moved 32 MiB", func(j *JVM, _ *nativeState, _ *time.Time) { j.RSSJVM += 32 << 20 }, dueRead},
		{"non-heap shrank 32 MiB", func(j *JVM, _ *nativeState, _ *time.Time) { j.RSSJVM -= 32 << 20 }, dueRead},
		{"heap grew into resident memory: non-heap still", func(j *JVM, _ *nativeState, _ *time.Time) {
			j.RSSJVM += 100 << 20
			j.HeapCommitted += 100 << 20
		}, notDue},
		{"container usage moved 32 MiB (tmpfs)", func(j *JVM, _ *nativeState, _ *time.Time) { j.CgroupUsage += 32 << 20 }, dueRead},
		{"container just under 75 %", func(j *JVM, s *nativeState, _ *time.Time) {
			j.CgroupUsage = 1536<<20 - 1
			s.usage = j.CgroupUsage // moved earlier, read then
		}, notDue},
		{"container at 75 %", func(j *JVM, s *nativeState, _ *time.Time) {
			j.CgroupUsage = 1536 << 20
			s.usage = j.CgroupUsage - 1<<20
		}, dueRead},
		{"container at 90 % after a read at 75 %", func(j *JVM, s *nativeState, _ *time.Time) {
			j.CgroupUsage = 1844 << 20 // 90.04 %
			s.usage, s.band = j.CgroupUsage-1<<20, 1
		}, dueRead},
		{"back under 75 % after a read at 90 %", func(j *JVM, s *nativeState, _ *time.Time) {
			j.CgroupUsage = 1500 << 20
			s.usage, s.band = j.CgroupUsage+1<<20, 2
		}, notDue},
		{"checked just under MaxAge ago", func(_ *JVM, _ *nativeState, now *time.Time) {
			*now = t0.Add(DefaultNativeConfig.MaxAge - time.Millisecond)
		}, notDue},
		{"checked MaxAge ago", func(_ *JVM, _ *nativeState, now *time.Time) { *now = t0.Add(DefaultNativeConfig.MaxAge) }, dueCheck},
		{"starting: the base is due when the start-up is over", func(j *JVM, s *nativeState, now *time.Time) {
			j.ProcessStart = t0.Add(-30 * time.Second)
			s.mem.First.Time, s.mem.Last.Time = t0, t0
			*now = j.ProcessStart.Add(DefaultNativeConfig.Startup)
		}, dueRead},
		{"starting: not before", func(j *JVM, s *nativeState, now *time.Time) {
			j.ProcessStart = t0.Add(-30 * time.Second)
			s.mem.First.Time, s.mem.Last.Time = t0, t0
			*now = j.ProcessStart.Add(DefaultNativeConfig.Startup - time.Millisecond)
		}, notDue},
		{"started: the base is set", func(j *JVM, _ *nativeState, now *time.Time) {
			j.ProcessStart = t0.Add(-DefaultNativeConfig.Startup)
			*now = t0.Add(DefaultNativeConfig.Startup)
		}, notDue},
	} {
		j := policyJVM(t0)
		s := policyState(&j, t0)
		now := later
		tc.change(&j, s, &now)
		if got := r.due(s, &j, now); got != tc.want {
			t.Errorf("%s: due = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The base that growth is measured from is the first breakdown until the
// start-up is over, then the first breakdown after it, kept from then on.
func TestNativeBaseIsTheFirstAfterStartup(t *testing.T) {
	dir := t.TempDir()
	pidDir := filepath.Join(dir, "42")
	if err := os.Mkdir(pidDir, 0o755); err != nil {
		t.Fatal(err)
	}
	smaps := func(rss int) {
		t.Helper()
		text := "7f0000000000-7f0010000000 rw-p 00000000 00:00 0 \nRss: " + strconv.Itoa(rss) + " kB\nVmFlags: rd wr mr mw me ac\n"
		for _, name := range []string{"smaps", "maps"} {
			if err := os.WriteFile(filepath.Join(pidDir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t0 := time.Unix(1_800_000_000, 0)
	j := policyJVM(t0)
	j.ProcessStart = t0
	view := View{JVMs: []JVM{j}}
	r := newNativeReader(DefaultNativeConfig, dir, recordsOf(view.JVMs...), func(_ int, err error) { t.Errorf("read failed: %v", err) })
	for i, step := range []struct {
		at       time.Duration
		rss      int
		wantBase int // KiB of native_mmap in First
	}{
		{1 * time.Second, 1000, 1000},
		{25 * time.Second, 2000, 1000}, // still starting: growth from the first
		{40 * time.Second, 2500, 1000},
		{60 * time.Second, 3000, 3000}, // the first after the start-up: the base
		{75 * time.Second, 9000, 3000}, // the base stays
		{10 * time.Minute, 12000, 3000},
	} {
		smaps(step.rss)
		now := t0.Add(step.at)
		view.JVMs[0].RSSJVM += 64 << 20 // moved: due
		r.update(view, now)
		n := r.get(42, t0)
		if n == nil {
			t.Fatalf("step %d: no breakdown", i)
		}
		if got := n.Last.Regions[nativemem.NativeMmap] >> 10; got != uint64(step.rss) {
			t.Errorf("step %d: last native_mmap %d KiB, want %d", i, got, step.rss)
		}
		if got := n.First.Regions[nativemem.NativeMmap] >> 10; got != uint64(step.wantBase) {
			t.Errorf("step %d: base native_mmap %d KiB, want %d", i, got, step.wantBase)
		}
	}
	if g := r.get(42, t0).Growth(); g.Region != "native_mmap" || g.Bytes != 9000<<10 {
		t.Errorf("growth %+v, want native_mmap by 9000 KiB", g)
	}
	if r.get(42, t0.Add(time.Second)) != nil {
		t.Error("a breakdown was given for another process with the same pid")
	}
	r.recs.forget(&procmem.ProcessTable{}, t0.Add(2*time.Hour), time.Hour, 100)
	if r.get(42, t0) != nil {
		t.Error("a JVM whose record was forgotten kept its breakdown")
	}
}

// A read past the size bound fails with ErrTooLarge and is counted, and
// the JVM keeps no breakdown; a process gone mid-read is not counted.
func TestNativeBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "42"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Mappings of a 1 KiB path: past the size bound before the count's.
	entry := "7f0000000000-7f0000001000 r--p 00000000 08:01 42 /" + strings.Repeat("p", 1024) + "\nRss: 4 kB\n"
	big := strings.Repeat(entry, maxSmapsBytes/len(entry)+10)
	for _, name := range []string{"smaps", "maps"} {
		if err := os.WriteFile(filepath.Join(dir, "42", name), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var failures []error
	t0 := time.Unix(1_800_000_000, 0)
	j := policyJVM(t0)
	gone := policyJVM(t0)
	gone.PID = 43 // no such directory
	r := newNativeReader(DefaultNativeConfig, dir, recordsOf(j, gone), func(_ int, err error) { failures = append(failures, err) })
	r.update(View{JVMs: []JVM{j, gone}}, t0)
	if len(failures) != 1 || !errors.Is(failures[0], ErrTooLarge) {
		t.Fatalf("failures %v, want one ErrTooLarge", failures)
	}
	if r.get(42, j.ProcessStart) != nil || r.get(43, gone.ProcessStart) != nil {
		t.Error("a breakdown after a failed read")
	}
	if err := os.WriteFile(filepath.Join(dir, "42", "smaps"), []byte("7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \nRss: x kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "42", "maps"), []byte("7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.update(View{JVMs: []JVM{j}}, t0.Add(time.Minute))
	if len(failures) != 2 || !errors.Is(failures[1], nativemem.ErrMalformed) {
		t.Fatalf("failures %v, want a second, ErrMalformed", failures)
	}
}

// Every MaxAge a breakdown is checked against the process's maps: the same
// mappings confirm it without a smaps read; changed ones read it again.
func TestNativeCheck(t *testing.T) {
	dir := t.TempDir()
	pidDir := filepath.Join(dir, "42")
	if err := os.Mkdir(pidDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(header string) {
		t.Helper()
		for name, text := range map[string]string{"maps": header + "\n", "smaps": header + "\nRss: 1000 kB\n"} {
			if err := os.WriteFile(filepath.Join(pidDir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("7f0000000000-7f0010000000 rw-p 00000000 00:00 0")
	t0 := time.Unix(1_800_000_000, 0)
	view := View{JVMs: []JVM{policyJVM(t0)}}
	r := newNativeReader(DefaultNativeConfig, dir, recordsOf(view.JVMs...), func(_ int, err error) { t.Errorf("read failed: %v", err) })
	start := view.JVMs[0].ProcessStart
	view.JVMs[0].RSSJVM = 1000 << 10 // as the breakdown's resident size
	r.update(view, t0)
	if reads, checks := r.reads.Load(), r.checks.Load(); reads != 1 || checks != 0 {
		t.Fatalf("first look: %d reads, %d checks; want 1, 0", reads, checks)
	}
	checked := t0.Add(DefaultNativeConfig.MaxAge)
	r.update(view, checked)
	if reads, checks := r.reads.Load(), r.checks.Load(); reads != 1 || checks != 1 {
		t.Errorf("unchanged mappings: %d reads, %d checks; want 1, 1", reads, checks)
	}
	if got := r.get(42, start).Checked; !got.Equal(checked) {
		t.Errorf("a confirmed breakdown checked at %v, want %v", got, checked)
	}
	write("7f0000000000-7f0020000000 rw-p 00000000 00:00 0")
	r.update(view, checked.Add(DefaultNativeConfig.MaxAge))
	if reads, checks := r.reads.Load(), r.checks.Load(); reads != 2 || checks != 2 {
		t.Errorf("a mapping grew: %d reads, %d checks; want 2, 2", reads, checks)
	}
}

// More JVMs than MaxReadsPerTick are broken down in rounds, the loop
// coming back to the same view a discovery interval later: the first
// breakdowns of a node with many JVMs do not wait for new views, which a
// quiet node makes every 30 s.
func TestNativeLoopReadsWhatTheCapLeft(t *testing.T) {
	dir := t.TempDir()
	const jvms = 25
	t0 := time.Now().Add(-10 * time.Minute)
	view := View{}
	for i := range jvms {
		pid := 100 + i
		if err := os.Mkdir(filepath.Join(dir, strconv.Itoa(pid)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid), "smaps"), []byte("7f0000000000-7f0010000000 rw-p 00000000 00:00 0 \nRss: 1000 kB\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		j := policyJVM(t0)
		j.PID, j.ProcessStart = pid, t0
		view.JVMs = append(view.JVMs, j)
	}
	cfg := DefaultNativeConfig
	r := newNativeReader(cfg, dir, recordsOf(view.JVMs...), func(_ int, err error) { t.Errorf("read failed: %v", err) })
	if !r.update(View{JVMs: view.JVMs[:cfg.MaxReadsPerTick+1]}, time.Now()) {
		t.Error("a JVM left for later, and update did not say so")
	}
	if r.update(View{JVMs: view.JVMs[:cfg.MaxReadsPerTick+1]}, time.Now()) {
		t.Error("nothing left for later, and update said there was")
	}

	tr := &Tracker{
		cfg:        Config{Sampling: SamplingConfig{Discovery: 10 * time.Millisecond}, Retention: time.Hour},
		native:     newNativeReader(cfg, dir, recordsOf(view.JVMs...), func(_ int, err error) { t.Errorf("read failed: %v", err) }),
		last:       view,
		stop:       make(chan struct{}),
		viewMade:   make(chan struct{}, 1),
		nativeDone: make(chan struct{}),
	}
	go tr.nativeLoop()
	defer func() { close(tr.stop); <-tr.nativeDone }()
	tr.viewMade <- struct{}{} // one view, and only one
	deadline := time.Now().Add(10 * time.Second)
	for tr.native.reads.Load() < jvms {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d JVMs broken down from one view", tr.native.reads.Load(), jvms)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, j := range view.JVMs {
		if tr.native.get(j.PID, j.ProcessStart) == nil {
			t.Errorf("JVM %d: no breakdown", j.PID)
		}
	}
}

// recordsOf are records of the JVMs, as the scans that read them made.
func recordsOf(jvms ...JVM) records {
	rs := newRecords()
	for _, j := range jvms {
		rs.of(j.PID, j.ProcessStart)
	}
	return rs
}
