package procmem

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// pfKthread is the kernel's PF_KTHREAD process flag (stat field 9).
const pfKthread = 0x00200000

// userHZ is the clock tick of /proc/<pid>/stat start times. The kernel
// reports USER_HZ, which is 100 on every architecture Linux exports to user
// space; procfs assumes the same.
const userHZ = 100

// Process is one process as seen in one pass over /proc.
type Process struct {
	PID, PPID int
	// Comm is the kernel's command name (at most 15 bytes, may be renamed by
	// the process itself).
	Comm string
	// RSS is the resident set size in bytes; VSize the address space.
	RSS, VSize uint64
	StartTime  time.Time
	// KernelThread is set for the kernel's own threads (kworker, ...):
	// discovery skips them.
	KernelThread bool
}

// ProcessTable is the processes of one scan: for every pid its ppid, comm,
// RSS bytes and start time.
//
// ProcessWatch.Scan lists every process but reads only what changed, and
// the rest when asked for (Process, TreeRSS); its table belongs to the scan
// that made it and is not safe for concurrent use. A table without a watch
// is the tests' reference (NewProcessTable, in proctable_ref_linux_test.go):
// every process read once with procfs, immutable.
type ProcessTable struct {
	procs    map[int]Process // every process (no watch); read in this scan (a watch's)
	children map[int][]int   // a watch's: built on first use from what the watch knows
	// handles keeps, without a watch, the procfs handle of every pid so
	// that the executable can be looked up later without another stat of
	// /proc/<pid>.
	handles map[int]procfs.Proc

	w    *ProcessWatch // nil for the tests' reference table
	pids []int         // listed in this scan, ascending
	// recheck: pids read in this scan because new or young, or found
	// changed by the periodic refresh (another program, another parent):
	// what is kept of a pid (its root, its pid namespace) is worth looking
	// at again exactly then.
	recheck map[int]bool
	gone    map[int]bool // listed, but its stat could not be read
	changed bool         // a watch's: see Changed
}

// bootTimes caches the boot time per procfs mount (procfs.FS is comparable).
// It is fixed for the life of the kernel, while /proc/stat is costly to
// produce on machines with many CPUs and IRQs: read it once, not per scan.
var bootTimes sync.Map

func bootTime(fs procfs.FS) (time.Time, error) {
	if v, ok := bootTimes.Load(fs); ok {
		return v.(time.Time), nil
	}
	kstat, err := fs.Stat()
	if err != nil {
		return time.Time{}, fmt.Errorf("reading boot time: %w", err)
	}
	if kstat.BootTime == 0 {
		return time.Time{}, fmt.Errorf("reading boot time: no btime line in stat")
	}
	boot := time.Unix(int64(kstat.BootTime), 0)
	bootTimes.Store(fs, boot)
	return boot, nil
}

// PIDs returns the pids in the table in ascending order.
func (t *ProcessTable) PIDs() []int {
	if t.w != nil {
		return slices.DeleteFunc(slices.Clone(t.pids), func(pid int) bool { return t.gone[pid] })
	}
	pids := make([]int, 0, len(t.procs))
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// Process returns the process with this pid, if it was seen in the scan.
// A watch's table reads the pid's stat on the first call in the scan.
func (t *ProcessTable) Process(pid int) (Process, bool) {
	if p, ok := t.procs[pid]; ok || t.w == nil {
		return p, ok
	}
	if e := t.w.known[pid]; e == nil || t.gone[pid] {
		return Process{}, false // not listed
	}
	p, ok := t.w.read(pid)
	if !ok {
		t.gone[pid] = true
		return Process{}, false
	}
	t.procs[pid] = p
	return p, true
}

// Seen returns what is known of pid without reading anything: for a
// watch's table, the last read of it, which may be up to RefreshEvery old
// for a process that is neither young nor asked for (its RSS then too).
// It is for filters over every process (kernel threads, command names),
// followed by Process for the few that pass.
func (t *ProcessTable) Seen(pid int) (Process, bool) {
	if p, ok := t.procs[pid]; ok || t.w == nil {
		return p, ok
	}
	if e := t.w.known[pid]; e != nil && e.ok && !t.gone[pid] {
		return e.p, true
	}
	return Process{}, false
}

// Changed reports whether the table can differ from the last scan's in
// anything a caller caches about its processes: a pid was listed for the
// first time, left the listing, or was read again as young or due
// (recheck). A table made without a watch has always changed. Processes
// that exited stay listed until the watch's next full listing, as in
// PIDs.
func (t *ProcessTable) Changed() bool { return t.w == nil || t.changed }

// buildChildren indexes a watch's processes by parent. Parents change only
// when a process is re-parented after its parent's exit, to an ancestor or
// a subreaper, never into a JVM's tree; the members of a tree are read
// again by TreeRSS, which drops those that left it.
func (t *ProcessTable) buildChildren() {
	if t.w == nil || t.children != nil {
		return
	}
	t.children = make(map[int][]int, len(t.pids)/4)
	for _, pid := range t.pids {
		if p, ok := t.Seen(pid); ok && p.PPID != pid {
			t.children[p.PPID] = append(t.children[p.PPID], pid)
		}
	}
}

// TreeRSS is the resident memory of a process tree by kind of process.
type TreeRSS struct {
	JVM, Python, Other uint64
	// VSize is the address space of the whole tree, what YARN's virtual
	// memory check sums.
	VSize uint64
}

// Total is the resident memory of the whole tree.
func (r TreeRSS) Total() uint64 { return r.JVM + r.Python + r.Other }

// TreeRSS sums RSS over pid and all its descendants: java processes count as
// JVM, python/python3/pythonX.Y (comm or exe basename) as Python (PySpark
// workers and daemons), anything else as Other. An unknown pid gives zeros.
//
// RSS counts shared pages in every process that maps them, so the sum can
// exceed what the tree really costs (forked PySpark workers share pages with
// their daemon); Spark's own ProcessTree metrics have the same bias.
//
// A watch's table walks the tree from what the watch knows and reads the
// stat of every member now: the cost is the tree's, not the machine's.
func (t *ProcessTable) TreeRSS(pid int) TreeRSS {
	var sum TreeRSS
	if _, ok := t.Process(pid); !ok {
		return sum
	}
	t.buildChildren()
	seen := map[int]bool{pid: true}
	stack := []int{pid}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p, ok := t.Process(cur)
		if !ok || (cur != pid && !seen[p.PPID]) {
			continue // exited, or re-parented out of the tree since last read
		}
		sum.VSize += p.VSize
		switch t.kindOf(p) {
		case kindJVM:
			sum.JVM += p.RSS
		case kindPython:
			sum.Python += p.RSS
		default:
			sum.Other += p.RSS
		}
		for _, c := range t.children[cur] {
			// The guard only matters for a corrupted snapshot: a real
			// process tree has no cycles.
			if !seen[c] {
				seen[c] = true
				stack = append(stack, c)
			}
		}
	}
	return sum
}

type processKind int

const (
	kindOther processKind = iota
	kindJVM
	kindPython
)

// kindOf classifies by comm first; only when comm says nothing does it read
// the executable's link, so the common case costs no syscall. The link is
// read, never followed.
func (t *ProcessTable) kindOf(p Process) processKind {
	if k := classifyName(p.Comm); k != kindOther {
		return k
	}
	if t.w != nil {
		return t.w.exeKind(p)
	}
	if h, ok := t.handles[p.PID]; ok {
		if exe, err := h.Executable(); err == nil {
			return classifyExe(exe)
		}
	}
	return kindOther
}

// exeKind classifies pid by its executable's basename, once per process
// and command name (the link is read, never followed).
func (w *ProcessWatch) exeKind(p Process) processKind {
	e := w.known[p.PID]
	if e != nil && e.exeDone && e.exeComm == p.Comm {
		return e.exeKind
	}
	kind := kindOther
	if exe, err := os.Readlink(path.Join(w.procPath, strconv.Itoa(p.PID), "exe")); err == nil {
		kind = classifyExe(exe)
	}
	if e != nil {
		e.exeKind, e.exeComm, e.exeDone = kind, p.Comm, true
	}
	return kind
}

// classifyExe classifies the target of an exe link by its basename.
func classifyExe(exe string) processKind {
	return classifyName(path.Base(strings.TrimSuffix(exe, " (deleted)")))
}

var pythonName = regexp.MustCompile(`^python(\d+(\.\d+)?)?$`)

// classifyName maps a comm or an executable basename to a kind.
func classifyName(name string) processKind {
	switch {
	case name == "java":
		return kindJVM
	case pythonName.MatchString(name):
		return kindPython
	default:
		return kindOther
	}
}
