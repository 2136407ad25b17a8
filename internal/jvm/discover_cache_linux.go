package jvm

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

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
	listings map[*rootKey]*listing // by root, kept while the root is
	gen      uint64
	// last is the last scan's candidates, found again only when the
	// process table changed: a JVM's hsperfdata file appears while its
	// process is young, which the table reports.
	last      []Candidate
	lastValid bool
	// inspected counts processes whose root was looked at, relisted the
	// roots listed in full, reused the scans that found nothing could have
	// changed; for tests.
	inspected, relisted, reused int
	ids                         identityReader
}

// discovered is what discovery knows of one pid.
type discovered struct {
	root      *rootKey // nil when the process cannot be inspected
	inspected bool     // root was looked at
	nspid     int      // its pid in its own namespace; 0 until asked for
	gen       uint64   // last scan that saw it
	// id is who the process is, read once per process and program
	// (identity); nil until asked for.
	id *identityEntry
}

func newDiscovery(procPath string) *discovery {
	return &discovery{procPath: procPath, roots: map[rootKey]*rootKey{}, pids: map[int]*discovered{}, listings: map[*rootKey]*listing{},
		ids: newIdentityReader(procPath)}
}

// find returns the candidates among the processes of table, as
// FindCandidates does; kernel threads are left out.
func (d *discovery) find(table *procmem.ProcessTable) ([]Candidate, error) {
	if d.lastValid && !table.Changed() {
		d.reused++
		return slices.Clone(d.last), nil
	}
	d.gen++
	if !d.nsKnown {
		d.procfsNS, d.nsKnown = procfsPIDNamespace(d.procPath), true
	}
	dir, err := os.Open(d.procPath)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.procPath, err)
	}
	defer dir.Close()
	groups, order := d.group(table, int(dir.Fd()))
	sets := make([][]int, len(order))
	live := make(map[rootKey]*rootKey, len(order))
	for i, key := range order {
		sets[i] = groups[key]
		live[*key] = key
	}
	d.roots = live
	for key := range d.listings {
		if live[*key] != key {
			delete(d.listings, key)
		}
	}
	d.last = candidatesIn(sets, d.list, d.nspid)
	d.lastValid = true
	return slices.Clone(d.last), nil
}

// group sorts the processes of table by root (in the order first seen),
// looking at a process's root only when the table says it is new, young
// or due for its refresh, and forgets the pids the table no longer has.
func (d *discovery) group(table *procmem.ProcessTable, dirfd int) (map[*rootKey][]int, []*rootKey) {
	link := make([]byte, 64)
	groups := map[*rootKey][]int{}
	var order []*rootKey
	for _, pid := range table.PIDs() {
		if p, ok := table.Seen(pid); !ok || p.KernelThread {
			continue
		}
		e := d.pids[pid]
		if e == nil || !e.inspected || table.Recheck(pid) {
			next := &discovered{inspected: true}
			if e != nil {
				next.id = e.id // identity checks the process and program itself
			}
			e = next
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
	return groups, order
}

// identity is who the process p is: its owner, command line and
// environment, read once per process and program (pid, start time,
// command name: an exec keeps the first two): /proc/<pid>/status alone
// costs more to produce than the hsperfdata file it guards. It is kept
// with the pid, and forgotten with it.
func (d *discovery) identity(p procmem.Process) (identityEntry, error) {
	e := d.pids[p.PID]
	if e != nil && e.id != nil && e.id.start.Equal(p.StartTime) && e.id.comm == p.Comm {
		return *e.id, nil
	}
	id, keep, err := d.ids.read(p)
	if err != nil || !keep {
		return id, err
	}
	if e == nil {
		e = &discovered{gen: d.gen}
		d.pids[p.PID] = e
	}
	e.id = &id
	return id, nil
}

// root is the JVM pid's view of /tmp, nil when unknown: JVMs with the same
// root and user share a hsperfdata directory.
func (d *discovery) root(pid int) *rootKey {
	if e := d.pids[pid]; e != nil {
		return e.root
	}
	return nil
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

// listing is a root's hsperfdata files as last listed, with what tells
// whether they may have changed: the inode and modification time of its
// /tmp (a directory created or removed there) and of each
// hsperfdata_<user> directory (a JVM's file created or removed).
type listing struct {
	tmp      dirStamp
	tmpClean bool // /tmp was not modified too recently to trust its time
	dirs     map[string]*dirListing
}

type dirListing struct {
	stamp  dirStamp
	clean  bool // listed, and not modified too recently to trust its time
	pids   []int
	listed bool
}

type dirStamp struct {
	ino   uint64
	mtime unix.Timespec
}

// trustAfter is how old a modification time must be before a listing
// taken after it is reused: a change within the file system's timestamp
// granularity of the listing would not move the time.
const trustAfter = 2 * time.Second

// list returns pid's root's hsperfdata files (as listHsperfFiles does),
// listing /tmp and each hsperfdata_<user> directory again only when its
// modification time moved: a stat of each otherwise. A directory is
// stamped before it is listed, so a change during the listing moves the
// time again and is listed by the next scan.
func (d *discovery) list(pid int) (map[int][]string, error) {
	e := d.pids[pid]
	if e == nil || e.root == nil {
		return listHsperfFiles(d.procPath, pid)
	}
	root, err := openRoot(d.procPath, pid)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	now := time.Now()
	tmp, err := stampOf(root, "tmp", now)
	if err != nil {
		delete(d.listings, e.root)
		return nil, err
	}
	l := d.listings[e.root]
	if l == nil || !l.tmpClean || l.tmp != tmp.stamp || tmp.recent {
		if l, err = d.listTmp(root, l); err != nil {
			delete(d.listings, e.root)
			return nil, err
		}
		l.tmp, l.tmpClean = tmp.stamp, !tmp.recent
		d.listings[e.root] = l
	}
	files := map[int][]string{}
	for name, dl := range l.dirs {
		st, err := stampOf(root, "tmp/"+name, now)
		if err != nil {
			delete(l.dirs, name) // gone, or no longer a directory
			continue
		}
		if !dl.listed || !dl.clean || st.stamp != dl.stamp || st.recent {
			d.relisted++
			pids, err := listHsperfDir(root, name)
			if err != nil {
				delete(l.dirs, name)
				continue
			}
			dl.pids, dl.stamp, dl.clean, dl.listed = pids, st.stamp, !st.recent, true
		}
		for _, n := range dl.pids {
			files[n] = append(files[n], name)
		}
	}
	for _, dirs := range files {
		slices.Sort(dirs)
	}
	return files, nil
}

// listTmp lists a root's /tmp for its hsperfdata_<user> directories,
// keeping what was known of those already listed.
func (d *discovery) listTmp(root int, old *listing) (*listing, error) {
	tmp, err := openBeneath(root, "tmp", unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	names, err := tmp.Readdirnames(-1)
	_ = tmp.Close()
	if err != nil {
		return nil, err
	}
	l := &listing{dirs: map[string]*dirListing{}}
	for _, name := range names {
		if !strings.HasPrefix(name, "hsperfdata_") {
			continue
		}
		dl := &dirListing{}
		if old != nil && old.dirs[name] != nil {
			dl = old.dirs[name]
		}
		l.dirs[name] = dl
	}
	return l, nil
}

// listHsperfDir lists the numeric names in a root's /tmp/<name>, opened
// without following a symlink, as listHsperfFiles does.
func listHsperfDir(root int, name string) ([]int, error) {
	dir, err := openBeneath(root, "tmp/"+name, unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	entries, err := dir.Readdirnames(-1)
	_ = dir.Close()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e); err == nil && n > 0 && strconv.Itoa(n) == e {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

type stamped struct {
	stamp  dirStamp
	recent bool // modified less than trustAfter ago
}

// stampOf stats a directory beneath root without following a symlink at
// the end: a symlink is not a directory discovery lists.
func stampOf(root int, name string, now time.Time) (stamped, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(root, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return stamped{}, &os.PathError{Op: "fstatat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return stamped{}, &os.PathError{Op: "fstatat", Path: name, Err: unix.ENOTDIR}
	}
	mtime := time.Unix(st.Mtim.Unix())
	return stamped{stamp: dirStamp{ino: st.Ino, mtime: st.Mtim}, recent: now.Sub(mtime) < trustAfter}, nil
}
