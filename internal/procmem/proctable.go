// Package procmem measures memory from outside a process: the resident memory
// of a process tree split by kind (JVM, Python, other), as Spark's
// ProcfsMetricsGetter does for PySpark, and the memory cgroup that holds a
// process (cgroup v1 and v2). It reads only; it never writes to /proc or /sys.
package procmem

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

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
	// KernelThread is set for the kernel's own threads (kworker, ...).
	KernelThread bool
}

// ProcessTable is one pass over /proc: for every pid its ppid, comm, RSS bytes
// and start time. It is immutable once built and safe for concurrent use.
type ProcessTable struct {
	procPath string
	procs    map[int]Process
	children map[int][]int
}

// NewProcessTable reads the stat file of every process under procPath once.
// Processes that exit during the scan, or whose stat cannot be read or
// parsed, are left out: one odd process must not cost the whole table. It
// fails only when procPath itself cannot be listed or its stat file has no
// boot time.
//
// This runs over every process on the machine every sampling interval, so
// it reads with one openat(2) and one read(2) per process into a reused
// buffer and parses without fmt (parseStat).
func NewProcessTable(procPath string) (*ProcessTable, error) {
	boot, err := bootTime(procPath)
	if err != nil {
		return nil, err
	}
	dir, err := os.Open(procPath)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	dirfd := int(dir.Fd())
	page := uint64(os.Getpagesize())

	t := &ProcessTable{
		procPath: procPath,
		procs:    make(map[int]Process, len(names)),
		children: make(map[int][]int, len(names)/4),
	}
	buf := make([]byte, 1024)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		var data []byte
		data, buf, err = readStatAt(dirfd, name+"/stat", buf)
		if err != nil {
			// Vanished (ENOENT/ESRCH) or unreadable: skip it either way.
			continue
		}
		st, err := parseStat(data)
		if err != nil {
			continue
		}
		t.procs[pid] = Process{
			PID:       pid,
			PPID:      st.PPID,
			Comm:      st.Comm,
			RSS:       st.RSSPages * page,
			StartTime: boot.Add(time.Duration(st.StartTicks) * (time.Second / userHZ)),

			KernelThread: st.Flags&pfKthread != 0,
		}
		if st.PPID != pid {
			t.children[st.PPID] = append(t.children[st.PPID], pid)
		}
	}
	return t, nil
}

// readStatAt reads a small procfs file beneath dirfd into buf, growing it
// when the file does not fit, and returns the data and the buffer to reuse.
// O_NOFOLLOW: a pid directory is never a symlink, and "self" is not a pid.
func readStatAt(dirfd int, name string, buf []byte) (data, reuse []byte, err error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, buf, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		m, err := unix.Read(fd, buf[n:])
		if err != nil {
			return nil, buf, err
		}
		if m == 0 {
			return buf[:n], buf, nil
		}
		n += m
		if n == len(buf) {
			if len(buf) >= 64<<10 {
				return nil, buf, errors.New("stat file larger than 64 KiB")
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

// bootTimes caches the boot time per procfs mount point. It is fixed for
// the life of the kernel, while /proc/stat is costly to produce on machines
// with many CPUs and IRQs: read it once, not per scan.
var bootTimes sync.Map

func bootTime(procPath string) (time.Time, error) {
	if v, ok := bootTimes.Load(procPath); ok {
		return v.(time.Time), nil
	}
	fs, err := procfs.NewFS(procPath)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading boot time: %w", err)
	}
	kstat, err := fs.Stat()
	if err != nil {
		return time.Time{}, fmt.Errorf("reading boot time: %w", err)
	}
	if kstat.BootTime == 0 {
		return time.Time{}, fmt.Errorf("reading boot time: no btime line in stat")
	}
	boot := time.Unix(int64(kstat.BootTime), 0)
	bootTimes.Store(procPath, boot)
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
	exe, err := os.Readlink(filepath.Join(t.procPath, strconv.Itoa(p.PID), "exe"))
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
