// Package procmem measures memory from outside a process: the resident memory
// of a process tree split by kind (JVM, Python, other), as Spark's
// ProcfsMetricsGetter does for PySpark, and the memory cgroup that holds a
// process (cgroup v1 and v2). It reads only; it never writes to /proc or /sys.
package procmem

import (
	"fmt"
	"path"
	"regexp"
	"slices"
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
	// RSS is the resident set size in bytes.
	RSS       uint64
	StartTime time.Time
	// KernelThread is set for the kernel's own threads (kworker, ...):
	// discovery skips them.
	KernelThread bool
}

// ProcessTable is one pass over /proc: for every pid its ppid, comm, RSS bytes
// and start time. It is immutable once built and safe for concurrent use.
type ProcessTable struct {
	procs    map[int]Process
	children map[int][]int
	// handles keeps the procfs handle of every pid so that the executable
	// can be looked up later without another stat of /proc/<pid>.
	handles map[int]procfs.Proc
}

// NewProcessTable scans every process under fs once. Processes that exit
// during the scan, or whose stat cannot be read or parsed, are left out: one
// odd process must not cost the whole table. It fails only when /proc itself
// cannot be listed or /proc/stat has no boot time.
func NewProcessTable(fs procfs.FS) (*ProcessTable, error) {
	all, err := fs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	boot, err := bootTime(fs)
	if err != nil {
		return nil, err
	}

	t := &ProcessTable{
		procs:    make(map[int]Process, len(all)),
		children: make(map[int][]int, len(all)/4),
		handles:  make(map[int]procfs.Proc, len(all)),
	}
	for _, p := range all {
		st, err := p.Stat()
		if err != nil {
			// Vanished (ENOENT/ESRCH) or unreadable: skip it either way.
			continue
		}
		rss := st.ResidentMemory()
		if rss < 0 {
			rss = 0
		}
		t.procs[p.PID] = Process{
			PID:       p.PID,
			PPID:      st.PPID,
			Comm:      st.Comm,
			RSS:       uint64(rss),
			StartTime: boot.Add(time.Duration(st.Starttime) * (time.Second / userHZ)),

			KernelThread: st.Flags&pfKthread != 0,
		}
		t.handles[p.PID] = p
		if st.PPID != p.PID {
			t.children[st.PPID] = append(t.children[st.PPID], p.PID)
		}
	}
	return t, nil
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
	pids := make([]int, 0, len(t.procs))
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// Process returns the process with this pid, if it was seen in the scan.
func (t *ProcessTable) Process(pid int) (Process, bool) {
	p, ok := t.procs[pid]
	return p, ok
}

// Children returns the direct children of pid seen in the scan, in no
// particular order.
func (t *ProcessTable) Children(pid int) []int {
	return slices.Clone(t.children[pid])
}

// TreeRSS is the resident memory of a process tree by kind of process.
type TreeRSS struct{ JVM, Python, Other uint64 }

// Total is the resident memory of the whole tree.
func (r TreeRSS) Total() uint64 { return r.JVM + r.Python + r.Other }

// TreeRSS sums RSS over pid and all its descendants: java processes count as
// JVM, python/python3/pythonX.Y (comm or exe basename) as Python (PySpark
// workers and daemons), anything else as Other. An unknown pid gives zeros.
//
// RSS counts shared pages in every process that maps them, so the sum can
// exceed what the tree really costs (forked PySpark workers share pages with
// their daemon); Spark's own ProcessTree metrics have the same bias.
func (t *ProcessTable) TreeRSS(pid int) TreeRSS {
	var sum TreeRSS
	if _, ok := t.procs[pid]; !ok {
		return sum
	}
	seen := map[int]bool{pid: true}
	stack := []int{pid}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p := t.procs[cur]
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
	h, ok := t.handles[p.PID]
	if !ok {
		return kindOther
	}
	exe, err := h.Executable()
	if err != nil || exe == "" {
		return kindOther
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	return classifyName(path.Base(exe))
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
