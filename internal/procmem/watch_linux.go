package procmem

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// A process's stat is read again on every scan while it is young, so that
// an exec (a launcher script becoming java) or a container runtime's
// pivot_root right after the fork is seen; and every RefreshEvery for all
// processes, a safety net for an exec or a new parent later in a process's
// life. A process is flagged for callers to look at again (recheck) when it
// is new or young, or when the refresh finds it changed: a refresh that
// finds nothing changed costs the stat reads alone.
const (
	YoungFor     = 30 * time.Second
	RefreshEvery = 5 * time.Minute
)

// ProcessWatch follows the processes under a procfs mount from one scan to
// the next, so that a scan costs what changed and what is asked about
// (the JVMs and their trees) instead of a read of every process: a process
// table that reads every stat file costs ~10 µs per process, JVM or not,
// and a busy Kubernetes node has hundreds of processes that are not JVMs.
//
// Every scan lists /proc (getdents: the pid and the inode number of its
// directory, which changes when a pid is reused) and reads the stat of new
// processes and those younger than YoungFor; the rest is read when asked
// for (ProcessTable.Process, TreeRSS). A ProcessWatch is not safe for
// concurrent use; the tables it makes are used within one scan.
type ProcessWatch struct {
	procPath string
	dir      *os.File // procPath, held open for the *at calls and getdents
	boot     time.Time
	page     uint64
	known    map[int]*watched
	gen      uint64 // scan number: entries not listed in this scan are gone
	lastFull time.Time
	statBuf  []byte
	dentBuf  []byte
	// Reads counts stat files read, RootReads roots looked at (Root), for
	// tests and benchmarks.
	Reads, RootReads uint64
	// The pid namespace procPath shows pids of, looked up once (NSPID);
	// link is scratch space for namespace links (Root).
	procfsNS string
	nsKnown  bool
	link     [64]byte

	// Listing only what is new (Scan).
	seekable  bool         // procPath is procfs, in this process's pid namespace
	listedTo  int          // the last pid allocated when /proc was last listed; 0 to list all
	sinceFull int          // scans since every pid was listed
	pids      []int        // known pids, ascending
	young     map[int]bool // pids of processes younger than YoungFor
}

// procTGIDOffset is where pids start among the offsets of procfs's root
// directory (FIRST_PROCESS_ENTRY + 2 in fs/proc/base.c, unchanged since
// Linux 2.6): lseek to procTGIDOffset+n lists pids from n on.
const procTGIDOffset = 256 + 2

// watched is what the watch keeps about one pid.
type watched struct {
	ino uint64  // inode number of /proc/<pid>
	gen uint64  // last scan that listed it
	p   Process // as last read
	ok  bool    // p holds a successful read
	// exeKind is the kind from the executable's link, valid while the
	// command name is still exeComm.
	exeKind processKind
	exeComm string
	exeDone bool
	// root and nspid as read in scan rootGen and nspidGen (0: never), the
	// tables' Root and NSPID.
	root              Root
	hasRoot           bool
	nspid             int
	rootGen, nspidGen uint64
}

// NewProcessWatch opens procPath and reads its boot time.
func NewProcessWatch(procPath string) (*ProcessWatch, error) {
	fs, err := procfs.NewFS(procPath)
	if err != nil {
		return nil, fmt.Errorf("open procfs: %w", err)
	}
	boot, err := bootTime(fs)
	if err != nil {
		return nil, err
	}
	dir, err := os.Open(procPath)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	w := &ProcessWatch{
		procPath: procPath,
		dir:      dir,
		boot:     boot,
		page:     uint64(os.Getpagesize()),
		known:    map[int]*watched{},
		statBuf:  make([]byte, 1024),
		dentBuf:  make([]byte, 32<<10),
		young:    map[int]bool{},
	}
	w.seekable = ownProcfs(dir, procPath) && w.seekWorks()
	return w, nil
}

// seekWorks checks once that listing from a pid lists that pid first:
// this process's.
func (w *ProcessWatch) seekWorks() bool {
	self, first := os.Getpid(), 0
	err := w.listFrom(self, 0, func(pid int, _ uint64) {
		if first == 0 {
			first = pid
		}
	})
	return err == nil && first == self
}

// ownProcfs reports whether dir is a procfs whose pids are this process's:
// its "self" is this process (/proc/loadavg then names the last pid of the
// same namespace).
func ownProcfs(dir *os.File, procPath string) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(int(dir.Fd()), &st) != nil || st.Type != unix.PROC_SUPER_MAGIC {
		return false
	}
	self, err := os.Readlink(path.Join(procPath, "self"))
	return err == nil && self == strconv.Itoa(os.Getpid())
}

// Scan lists the processes now and returns the table of this scan. It fails
// only when procPath cannot be listed.
//
// Listing /proc costs about a microsecond per process in the kernel. When
// procPath is this process's own procfs, pids are allocated upwards and
// /proc/loadavg names the last one, so a scan lists only the pids made
// since the last one seen (an lseek to that pid, then getdents up to the
// last pid made: after the pids wrapped around, those above it are old).
// A process that exited stays known until the full listing every
// listEvery scans (or sooner, when the pids wrapped around), and costs
// nothing but a failed read when it is asked for.
func (w *ProcessWatch) Scan(now time.Time) (*ProcessTable, error) {
	w.gen++
	refresh := now.Sub(w.lastFull) >= RefreshEvery
	if refresh {
		w.lastFull = now
	}
	t := &ProcessTable{w: w, procs: map[int]Process{}, recheck: map[int]bool{}, gone: map[int]bool{}}
	last, lastOK := w.lastPID()
	partial := w.seekable && lastOK && !refresh && w.listedTo > 0 && last >= w.listedTo && w.sinceFull < listEvery
	seen := func(pid int, ino uint64) {
		e := w.known[pid]
		if e == nil || e.ino != ino {
			if e == nil && partial {
				w.pids = append(w.pids, pid)
			}
			e = &watched{ino: ino}
			w.known[pid] = e
			t.changed = true
		}
		e.gen = w.gen
		if !partial {
			w.pids = append(w.pids, pid)
		}
		// A kernel thread never execs: the refresh passes it by.
		due := refresh && (!e.ok || !e.p.KernelThread)
		if due || !e.ok || now.Sub(e.p.StartTime) < YoungFor {
			before, had := e.p, e.ok && now.Sub(e.p.StartTime) >= YoungFor
			p, ok := t.Process(pid)
			if ok && now.Sub(p.StartTime) < YoungFor {
				w.young[pid] = true
			}
			// The refresh of a settled process that reads as before
			// (no exec, no new parent) leaves what callers keep of it.
			if !had || !ok || !sameLife(before, p) {
				t.recheck[pid] = true
			}
		}
	}
	var err error
	if partial {
		w.sinceFull++
		err = w.listFrom(w.listedTo+1, last, seen)
		for pid := range w.young {
			if t.recheck[pid] {
				continue
			}
			if p, ok := t.Process(pid); ok && now.Sub(p.StartTime) < YoungFor {
				t.recheck[pid] = true
			} else {
				delete(w.young, pid)
			}
		}
	} else {
		w.sinceFull = 0
		w.pids = w.pids[:0]
		clear(w.young)
		err = w.listFrom(0, 0, seen)
		for pid, e := range w.known {
			if e.gen != w.gen {
				delete(w.known, pid)
				t.changed = true
			}
		}
	}
	if err != nil {
		w.listedTo = 0 // the next scan lists everything
		return nil, err
	}
	if lastOK {
		w.listedTo = last
	}
	t.changed = t.changed || len(t.recheck) > 0
	// /proc lists pids in ascending order; the sort is for other procfs
	// implementations and costs nothing on a sorted slice.
	slices.Sort(w.pids)
	w.pids = slices.Compact(w.pids)
	t.pids = w.pids
	return t, nil
}

// sameLife says whether two reads of a pid's stat are of the same process
// running the same program under the same parent.
func sameLife(a, b Process) bool {
	return a.StartTime.Equal(b.StartTime) && a.Comm == b.Comm && a.PPID == b.PPID
}

// listEvery is how many scans list only new pids between two listings of
// every pid (which forget the processes that exited).
const listEvery = 12

// lastPID returns the last pid allocated, from procPath's loadavg.
func (w *ProcessWatch) lastPID() (int, bool) {
	if !w.seekable {
		return 0, false
	}
	data, buf, err := ReadProcFile(path.Join(w.procPath, "loadavg"), w.statBuf, 4096)
	w.statBuf = buf
	if err != nil {
		return 0, false
	}
	fields := bytes.Fields(data)
	if len(fields) < 5 {
		return 0, false
	}
	return parsePID(fields[4])
}

// listFrom calls f for every pid directory under procPath with its inode
// number, which getdents(2) gives without a stat per directory: every one
// when from is 0, else (procfs only) those from pid from on — procfs's
// directory offset of pid n is procTGIDOffset+n — and, when to is not 0,
// up to pid to: the pids made since the last scan, if they did not wrap
// around.
func (w *ProcessWatch) listFrom(from, to int, f func(pid int, ino uint64)) error {
	// The directory is rewound for each listing: it is listed afresh from
	// any offset.
	fd := int(w.dir.Fd())
	offset := int64(0)
	if from > 0 {
		offset = int64(procTGIDOffset + from)
	}
	if _, err := unix.Seek(fd, offset, 0); err != nil {
		return fmt.Errorf("listing processes from %d: %w", from, err)
	}
	buf := w.dentBuf
	if to > 0 {
		// The kernel fills the whole buffer with what follows: after the
		// pids wrapped around, every process started before the wrap.
		buf = buf[:min(len(buf), boundedDentBuf)]
	}
	past := false
	for !past {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("listing processes: %w", err)
		}
		if n <= 0 {
			return nil
		}
		forEachDirent(buf[:n], func(name []byte, ino uint64) {
			pid, ok := parsePID(name)
			switch {
			case !ok || pid < from: // procfs lists no pid below; a check costs nothing
			case to > 0 && pid > to:
				past = true
			default:
				f(pid, ino)
			}
		})
	}
	return nil
}

// boundedDentBuf is the getdents buffer of a listing up to a pid: room for
// about 30 processes a call, as many as usually start between two scans.
const boundedDentBuf = 1 << 10

// forEachDirent walks the linux_dirent64 records of a getdents(2) buffer:
// d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), then the name,
// NUL-terminated.
func forEachDirent(buf []byte, f func(name []byte, ino uint64)) {
	for len(buf) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < 19 || reclen > len(buf) {
			return
		}
		name := buf[19:reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		f(name, binary.NativeEndian.Uint64(buf[0:8]))
		buf = buf[reclen:]
	}
}

// parsePID accepts the canonical decimal form of a positive pid only.
func parsePID(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 || b[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= 1<<31-1
}

// read reads pid's stat now and updates what the watch knows of it.
func (w *ProcessWatch) read(pid int) (Process, bool) {
	e := w.known[pid]
	w.Reads++
	data, err := w.readStat(pid)
	if err != nil {
		return Process{}, false
	}
	st, err := parseStat(data)
	if err != nil {
		return Process{}, false
	}
	p := Process{
		PID:          pid,
		PPID:         st.PPID,
		Comm:         st.Comm,
		RSS:          st.RSSPages * w.page,
		VSize:        st.VSize,
		StartTime:    w.boot.Add(time.Duration(st.StartTicks) * (time.Second / userHZ)),
		KernelThread: st.Flags&pfKthread != 0,
	}
	if e != nil {
		if e.ok && !e.p.StartTime.Equal(p.StartTime) {
			// Another process under the same pid and inode: start afresh.
			*e = watched{ino: e.ino, gen: e.gen}
		}
		e.p, e.ok = p, true
	}
	return p, true
}

// Close releases the directory the watch holds open. The watch is not
// used after it.
func (w *ProcessWatch) Close() error {
	return w.dir.Close()
}
