package jvm

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/jvmend"
	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// Exit is a JVM the tracker saw alive and then found gone, with what could
// still be observed about its end.
type Exit struct {
	Last Sample // the last sample: who it was, and its memory
	End  jvmend.End
}

// life is what the tracker keeps about a JVM it has read, until it is
// gone. What can be observed of a JVM after its process is gone is little:
// /proc/<pid> and with it the JVM's root (and its /tmp, often in a mount
// namespace that dies with it) are gone. So the tracker holds the JVM's
// hsperfdata file open while the JVM lives: after the end, the open file
// still says whether the JVM unlinked it (an orderly exit) or not (a
// SIGKILL), and still holds the counters as the JVM last wrote them. It
// costs one file descriptor per JVM, and keeps a dead JVM's file (32 KiB)
// and its mount referenced until the next scan.
type life struct {
	start     time.Time
	last      Sample
	lastAlive time.Time
	counters  string // CountersHsperf, or why there are none
	fd        int    // the hsperfdata file held open; -1 without one
	// pidfd refers to the process itself (-1 without one: a kernel before
	// 5.3): it becomes readable when the process has ended, which a scan
	// asks of every JVM it does not read, in one poll, instead of reading
	// their stat files.
	pidfd    int
	fileNote string // why the file cannot tell the end, when it cannot
	// unlinkedSince is when a scan first found the JVM alive and its file
	// already unlinked. An orderly exit unlinks the file moments before
	// the process goes, so a scan may land in between; a JVM that runs on
	// for unlinkedGrace after it had its file deleted by something else.
	unlinkedSince time.Time
	marks         [2]gcMark
	fullRead      gcMark // the last read that found the heap full
	// root (the JVM's view of /tmp; zero when unknown) and euid say which
	// JVMs share its hsperfdata directory: one of them starting deletes its
	// file once it is gone.
	root procmem.Root
	euid uint32
}

// unlinkedGrace is how long a JVM may still run after its hsperfdata file
// is unlinked for the unlink to count as its own orderly exit: HotSpot
// deletes the file late in its shutdown, after the shutdown hooks.
const unlinkedGrace = 2 * time.Second

// gcMark is the JVM's own clock and GC time at one sample: the GC share of
// the final window is measured on them, unaffected by when scans ran.
type gcMark struct {
	ticks     int64
	gcSeconds float64
	liveShare float64 // jvmend.Heap.LiveShare at this read
	afterFull bool    // jvmend.Heap.LiveAfterFull
	fullGCs   uint64  // full collections so far
}

func (l *life) close() {
	if l.fd >= 0 {
		_ = unix.Close(l.fd)
		l.fd = -1
	}
	if l.pidfd >= 0 {
		_ = unix.Close(l.pidfd)
		l.pidfd = -1
	}
}

// openPIDFD returns a pidfd for the process pid, or -1. It is opened
// right after the process was read, so the pid is still that process's:
// a pid is reused only once the pid space wrapped around.
func openPIDFD(pid int) int {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return -1
	}
	return fd
}

// ended polls the pidfds of the lives followed in one system call and
// returns the pids whose process has ended (a zombie or reaped).
func ended(rs records) map[int]bool {
	fds := make([]unix.PollFd, 0, len(rs.m))
	pids := make([]int, 0, len(rs.m))
	for pid, r := range rs.m {
		if l := r.life; l != nil && l.pidfd >= 0 {
			fds = append(fds, unix.PollFd{Fd: int32(l.pidfd), Events: unix.POLLIN})
			pids = append(pids, pid)
		}
	}
	out := map[int]bool{}
	if len(fds) == 0 {
		return out
	}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil // the stat files decide
		}
		break
	}
	for i, f := range fds {
		if f.Revents != 0 {
			out[pids[i]] = true
		}
	}
	return out
}

// OnScan adds a function the tracker calls after every scan with the view
// it serves and the JVMs found gone since the scan before (often none: the
// call is also the scan's heartbeat). It runs on the scanning goroutine
// with the scan's lock held: it must be quick and must not call back into
// the tracker.
func (t *Tracker) OnScan(f func(now time.Time, view View, gone []Exit)) {
	t.hooksMu.Lock()
	defer t.hooksMu.Unlock()
	var hooks []func(time.Time, View, []Exit)
	if old := t.hooks.Load(); old != nil {
		hooks = append(hooks, *old...)
	}
	hooks = append(hooks, f)
	t.hooks.Store(&hooks)
}

// scanned calls the OnScan functions.
func (t *Tracker) scanned(now time.Time, view View, gone []Exit) {
	if hooks := t.hooks.Load(); hooks != nil {
		for _, f := range *hooks {
			f(now, view, gone)
		}
	}
}

// ends follows every JVM read from its first reading until a scan finds
// it gone (its record's life), and says what can still be said of how it
// ended. Used under the tracker's scan lock.
type ends struct {
	procPath string
	recs     records
}

func newEnds(procPath string, recs records) *ends { return &ends{procPath: procPath, recs: recs} }

// anyEnded: a JVM followed has ended, or one may have and only a scan can
// tell (no pidfd: a kernel before 5.3).
func (e *ends) anyEnded() bool {
	for _, r := range e.recs.m {
		if r.life != nil && r.life.pidfd < 0 {
			return true
		}
	}
	done := ended(e.recs)
	return done == nil || len(done) > 0
}

// close releases the files held; a scan after it follows the JVMs afresh.
func (e *ends) close() {
	for _, r := range e.recs.m {
		if r.life != nil {
			r.life.close()
			r.life = nil
		}
	}
}

// held returns the hsperfdata file held open for the JVM pid that started
// at start, or -1.
func (e *ends) held(pid int, start time.Time) int {
	if r, ok := e.recs.get(pid, start); ok && r.life != nil {
		return r.life.fd
	}
	return -1
}

// observe records a JVM read in this scan. c is nil for a JVM without
// hsperfdata; root is the JVM's view of /tmp, zero when unknown.
func (e *ends) observe(c *Candidate, p procmem.Process, euid uint32, root procmem.Root, j *JVM, mark gcMark, now time.Time) {
	r := e.recs.of(p.PID, p.StartTime)
	l := r.life
	if l == nil {
		l = &life{start: p.StartTime, counters: j.Counters, fd: -1, pidfd: openPIDFD(p.PID), euid: euid, root: root}
		r.life = l
		if c != nil {
			if fd, err := openHsperf(e.procPath, *c, euid); err == nil {
				l.fd = fd
			} else {
				l.fileNote = "the hsperfdata file could not be held open: " + err.Error()
			}
		} else {
			l.fileNote = "no hsperfdata file (" + j.Counters + ")"
		}
	}
	l.last, l.lastAlive = j.Sample, now
	if c != nil {
		l.marks[1], l.marks[0] = l.marks[0], mark
		if mark.liveShare >= jvmend.HeapFullShare {
			l.fullRead = mark
		}
	}
	l.checkUnlinked(now)
}

// checkUnlinked notes, on a scan that finds the JVM alive, whether its file
// has been unlinked for longer than an orderly exit takes: then a /tmp
// cleaner or a hand deleted it, and its absence at the end proves nothing.
func (l *life) checkUnlinked(now time.Time) {
	if l.fd < 0 || l.fileNote != "" {
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil || st.Nlink > 0 {
		return
	}
	if l.unlinkedSince.IsZero() {
		l.unlinkedSince = now
	}
	if now.Sub(l.unlinkedSince) >= unlinkedGrace {
		l.fileNote = "the hsperfdata file was deleted while the JVM ran"
	}
}

// find returns the JVMs that are gone: their pid is not in the table,
// is another process now, or is a zombie. A JVM not read this scan but
// still running (not due, a read error, the cap) is not gone. ids says
// who the JVMs that share a dead one's /tmp are.
func (e *ends) find(table *procmem.ProcessTable, ids identityReader, now time.Time) []Exit {
	var gone []Exit
	done := ended(e.recs)
	for pid, r := range e.recs.m {
		l := r.life
		if l == nil || l.lastAlive.Equal(now) {
			continue
		}
		if done != nil && l.pidfd >= 0 && !done[pid] {
			l.checkUnlinked(now) // alive, not read this scan: its file may be what went
			continue
		}
		if p, ok := table.Process(pid); ok && p.StartTime.Equal(l.start) && (p.RSS > 0 || !e.dead(pid)) {
			// Alive but not read this scan: its file may be what went.
			l.checkUnlinked(now)
			continue
		}
		d := death(pid, l, now)
		if d.File == jvmend.FileDeleted {
			if other, ok := cleaner(table, ids, e.recs, pid, l); ok {
				d.File = jvmend.FileUnknown
				d.FileNote = fmt.Sprintf("deleted, but JVM %d of the same user started in the same /tmp since, and a JVM deletes the files of dead JVMs when it starts", other)
			}
		}
		gone = append(gone, Exit{Last: l.last, End: d})
		l.close()
		e.recs.end(r, l.last, now)
	}
	return gone
}

// cleanerSlack: a JVM that started this long before the dead one was last
// seen alive has cleaned its hsperfdata directory long before (HotSpot does
// it while it initialises).
const cleanerSlack = 5 * time.Second

// cleaner returns a java process that may have deleted the dead JVM's file
// after it was gone, if there is one: started since it was last seen alive
// (less cleanerSlack), in the same root, as the same user. HotSpot, when it
// starts, deletes the files in its hsperfdata directory whose process is
// gone, so the file's absence no longer says the JVM exited on its own.
// Such a JVM that has already exited again is not seen.
func cleaner(table *procmem.ProcessTable, ids identityReader, recs records, dead int, l *life) (int, bool) {
	if l.root == (procmem.Root{}) {
		return 0, false
	}
	since := l.lastAlive.Add(-cleanerSlack)
	for _, pid := range table.PIDs() {
		p, ok := table.Seen(pid)
		if !ok || pid == dead || p.Comm != javaComm || p.StartTime.Before(since) {
			continue
		}
		if root, _ := table.Root(pid); root != l.root {
			continue
		}
		r, _ := recs.get(pid, p.StartTime)
		if id, err := ids.identity(r, p); err == nil && id.euid == l.euid {
			return pid, true
		}
	}
	return 0, false
}

// dead reports whether a process whose memory is gone has ended (a zombie
// its parent has not reaped yet), rather than still exiting.
func (e *ends) dead(pid int) bool {
	b, _, err := procmem.ReadProcFile(filepath.Join(e.procPath, strconv.Itoa(pid), "stat"), nil, 4096)
	if err != nil {
		return true
	}
	state, ok := procState(b)
	return !ok || state == 'Z' || state == 'X'
}

// procState returns the state letter of a /proc/<pid>/stat line: the field
// after the command name, which may itself hold spaces and parentheses.
func procState(stat []byte) (byte, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0, false
	}
	return stat[i+2], true
}

// death puts together what is known of a JVM's end.
func death(pid int, l *life, now time.Time) jvmend.End {
	d := jvmend.End{PID: pid, Start: l.start, LastAlive: l.lastAlive, Noticed: now, FileNote: l.fileNote}
	d.Heap = jvmend.Heap{Known: l.last.HeapMax > 0, Source: "last sample", Used: l.last.HeapUsed, Max: l.last.HeapMax}
	if l.fd < 0 {
		return d
	}
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		d.FileNote = "the held hsperfdata file cannot be inspected: " + err.Error()
		return d
	}
	if l.fileNote == "" {
		d.File = jvmend.FileDeleted
		if st.Nlink > 0 {
			d.File = jvmend.FileLeftBehind
		}
	}
	if final, err := finalHeap(l.fd, st.Size, l.marks, l.fullRead); err == nil {
		d.Heap = final
	}
	return d
}

// openHsperf opens the candidate's hsperfdata file the way ReadHsperf does,
// to be held.
func openHsperf(procPath string, c Candidate, uid uint32) (int, error) {
	root, err := openRoot(procPath, c.PID)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	name := "tmp/" + c.Dir + "/" + strconv.Itoa(c.NSPID)
	fd, err := openBeneathFD(root, name, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uid {
		_ = unix.Close(fd)
		return -1, errors.New("not the JVM's regular file")
	}
	return fd, nil
}
