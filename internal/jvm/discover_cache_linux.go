package jvm

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// discovery is FindCandidates with a memory. Which root and pid namespace
// a process lives in is settled once it runs (a container runtime moves a
// process there before exec'ing the container's program), so they are
// looked at when the process table says a pid is new, young or due for its
// refresh (ProcessTable.Recheck), not on every scan: a scan then costs a
// listing of each root's hsperfdata directories, not two system calls for
// every process on the machine. Used under the tracker's scan lock.
type discovery struct {
	procPath string
	procfsNS string
	nsKnown  bool
	roots    map[rootKey]*rootKey // interned, so groups are keyed by pointer
	pids     map[int]*discovered
	gen      uint64
	// inspected counts processes whose root was looked at, for tests.
	inspected int
}

// discovered is what discovery knows of one pid.
type discovered struct {
	root  *rootKey // nil when the process cannot be inspected
	nspid int      // its pid in its own namespace; 0 until asked for
	gen   uint64   // last scan that saw it
}

func newDiscovery(procPath string) *discovery {
	return &discovery{procPath: procPath, roots: map[rootKey]*rootKey{}, pids: map[int]*discovered{}}
}

// find returns the candidates among the processes of table, as
// FindCandidates does; kernel threads are left out.
func (d *discovery) find(table *procmem.ProcessTable) ([]Candidate, error) {
	d.gen++
	if !d.nsKnown {
		d.procfsNS, d.nsKnown = procfsPIDNamespace(d.procPath), true
	}
	dir, err := os.Open(d.procPath)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.procPath, err)
	}
	defer dir.Close()
	dirfd := int(dir.Fd())
	link := make([]byte, 64)

	groups := map[*rootKey][]int{}
	var order []*rootKey
	for _, pid := range table.PIDs() {
		if p, ok := table.Seen(pid); !ok || p.KernelThread {
			continue
		}
		e := d.pids[pid]
		if e == nil || table.Recheck(pid) {
			e = &discovered{}
			d.inspected++
			if key, ok := processRoot(dirfd, strconv.Itoa(pid), link); ok {
				e.root = d.intern(key)
			}
			d.pids[pid] = e
		}
		e.gen = d.gen
		if e.root == nil {
			continue
		}
		if _, seen := groups[e.root]; !seen {
			order = append(order, e.root)
		}
		groups[e.root] = append(groups[e.root], pid)
	}
	for pid, e := range d.pids {
		if e.gen != d.gen {
			delete(d.pids, pid)
		}
	}
	sets := make([][]int, len(order))
	live := make(map[rootKey]*rootKey, len(order))
	for i, key := range order {
		sets[i] = groups[key]
		live[*key] = key
	}
	d.roots = live
	return candidatesIn(d.procPath, sets, d.nspid), nil
}

func (d *discovery) intern(key rootKey) *rootKey {
	if k, ok := d.roots[key]; ok {
		return k
	}
	k := &key
	d.roots[key] = k
	return k
}

// nspid is pidInNamespace, once per process.
func (d *discovery) nspid(pid int) (int, error) {
	e := d.pids[pid]
	if e != nil && e.nspid > 0 {
		return e.nspid, nil
	}
	ns, err := pidInNamespace(d.procPath, d.procfsNS, pid)
	if err == nil && e != nil {
		e.nspid = ns
	}
	return ns, err
}

// readInto reads a small file into buf (grown when needed) with plain
// system calls: no os.File, no poller registration, no allocation once
// buf is large enough. Files longer than limit are an error.
func readInto(path string, buf []byte, limit int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return readFD(fd, buf, 4096, limit)
}
