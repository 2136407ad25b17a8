package jvm

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// discovery is FindCandidates with a memory. Which root and pid namespace
// a process lives in the process table keeps (ProcessTable.Root and
// NSPID, looked at again only when the table says a pid is new, young or
// due for its refresh); discovery keeps each root's listing, so a scan
// costs a stat of each root's hsperfdata directories, not two system
// calls for every process on the machine. Used under the tracker's scan
// lock.
type discovery struct {
	procPath string
	listings map[procmem.Root]*listing // kept while a process has the root
	// last is the last scan's candidates, found again only when the
	// process table changed: a JVM's hsperfdata file appears while its
	// process is young, which the table reports.
	last      []Candidate
	lastValid bool
	// relisted counts the directories listed in full, reused the scans
	// that found nothing could have changed; for tests.
	relisted, reused int
}

func newDiscovery(procPath string) *discovery {
	return &discovery{procPath: procPath, listings: map[procmem.Root]*listing{}}
}

// find returns the candidates among the processes of table, as
// FindCandidates does; kernel threads are left out.
func (d *discovery) find(table *procmem.ProcessTable) ([]Candidate, error) {
	if d.lastValid && !table.Changed() {
		d.reused++
		return slices.Clone(d.last), nil
	}
	// This scan's groups of processes by root, in the order first seen.
	groups := map[procmem.Root][]int{}
	var order []procmem.Root
	for _, pid := range table.PIDs() {
		if p, ok := table.Seen(pid); !ok || p.KernelThread {
			continue
		}
		root, ok := table.Root(pid)
		if !ok {
			continue
		}
		if _, seen := groups[root]; !seen {
			order = append(order, root)
		}
		groups[root] = append(groups[root], pid)
	}
	for root := range d.listings {
		if _, live := groups[root]; !live {
			delete(d.listings, root)
		}
	}
	sets := make([][]int, len(order))
	for i, root := range order {
		sets[i] = groups[root]
	}
	list := func(pid int) (map[int][]string, error) {
		root, _ := table.Root(pid)
		return d.list(pid, root)
	}
	d.last = candidatesIn(sets, list, table.NSPID)
	d.lastValid = true
	return slices.Clone(d.last), nil
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

// list returns pid's root's (key's) hsperfdata files by number (as the tests' FindCandidates does),
// listing /tmp and each hsperfdata_<user> directory again only when its
// modification time moved: a stat of each otherwise. A directory is
// stamped before it is listed, so a change during the listing moves the
// time again and is listed by the next scan.
func (d *discovery) list(pid int, key procmem.Root) (map[int][]string, error) {
	root, err := openRoot(d.procPath, pid)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	now := time.Now()
	tmp, err := stampOf(root, "tmp", now)
	if err != nil {
		delete(d.listings, key)
		return nil, err
	}
	l := d.listings[key]
	if l == nil || !l.tmpClean || l.tmp != tmp.stamp || tmp.recent {
		if l, err = d.listTmp(root, l); err != nil {
			delete(d.listings, key)
			return nil, err
		}
		l.tmp, l.tmpClean = tmp.stamp, !tmp.recent
		d.listings[key] = l
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
// without following a symlink.
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
