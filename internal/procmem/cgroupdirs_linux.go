package procmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// maxCgroupDirs caps the cgroup directories a CgroupReader keeps open:
// one per executor pod on Kubernetes. Beyond it a cgroup is looked up and
// opened for each read.
const maxCgroupDirs = 1024

// maxCgroupFileSize bounds a cgroup file read into the reader's buffer;
// memory.stat, the largest, is a few KiB.
const maxCgroupFileSize = 1 << 20

// CgroupReader reads processes' memory cgroups scan after scan: it parses
// the /proc/<pid>/cgroup contents its caller already holds, and keeps each
// cgroup's directory open between scans, so that a scan costs only the
// opening and reading of the cgroup's files. Finding and opening a
// directory costs more than reading it, and on Kubernetes each executor
// has a cgroup of its own.
//
// Directories are opened through an os.Root at the sysfs root, so neither
// ".." nor a symlink leads out of it; files are opened beneath a kept
// directory by their plain names without following a symlink (a symlinked
// file, which cgroupfs never has, is read through an os.Root at the
// directory, which follows it only if it stays beneath).
//
// A CgroupReader is not safe for concurrent use.
type CgroupReader struct {
	procPath, sysfsPath string
	sysfs               *os.Root // opened by the first read
	dirs                map[cgroupDirKey]*cgroupDir
	maxDirs             int
	gen                 uint64 // scans ended, for cgroupDir.used
	buf                 []byte
}

// cgroupDirKey names a cgroup directory by what /proc/<pid>/cgroup says:
// its hierarchy and its path.
type cgroupDirKey struct {
	v2          bool
	controllers string
	rel         string
}

type cgroupDir struct {
	f    *os.File
	dir  string // relative to sysfs
	used uint64 // the scan that last read it
}

func (d *cgroupDir) close() { _ = d.f.Close() }

// NewCgroupReader returns a reader of the memory cgroups of the processes
// under procPath, in the cgroup hierarchies under sysfsPath/fs/cgroup.
func NewCgroupReader(procPath, sysfsPath string) *CgroupReader {
	return &CgroupReader{
		procPath: procPath, sysfsPath: sysfsPath,
		dirs: map[cgroupDirKey]*cgroupDir{}, maxDirs: maxCgroupDirs,
		buf: make([]byte, 4096),
	}
}

// Read returns the memory cgroup of pid, whose /proc/<pid>/cgroup holds
// cgroupFile. The error wraps fs.ErrNotExist only when the
// process has exited.
func (r *CgroupReader) Read(pid int, cgroupFile string) (CgroupMemory, error) {
	line, err := parseMemoryLine(cgroupFile)
	if errors.Is(err, errNoMemoryCgroup) {
		return CgroupMemory{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	if err != nil {
		return CgroupMemory{}, fmt.Errorf("pid %d: reading cgroup: %w", pid, err)
	}
	rel, err := cleanCgroupPath(line.path)
	if err != nil {
		return CgroupMemory{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	m := CgroupMemory{Path: line.path, Version: 1}
	files := v1Files
	if line.v2 {
		m.Version, files = 2, v2Files
	}
	named := func(err error) error {
		return fmt.Errorf("pid %d: memory cgroup %q: %w", pid, truncate(line.path, 128), err)
	}

	key := cgroupDirKey{v2: line.v2, controllers: line.controllers, rel: rel}
	if d := r.dirs[key]; d != nil {
		err := r.readFiles(d, files, &m)
		if err == nil {
			d.used = r.gen
			m.Dir = d.dir
			return m, nil
		}
		if !dirGone(err) {
			return CgroupMemory{}, missingMeansGone(r.procPath, pid, named(err))
		}
		// Removed, and perhaps made again under the same path (a pod
		// restarted with the same uid): look it up afresh.
		r.drop(key)
		m = CgroupMemory{Path: m.Path, Version: m.Version}
	}

	if r.sysfs == nil {
		root, err := os.OpenRoot(r.sysfsPath)
		if err != nil {
			return CgroupMemory{}, fmt.Errorf("opening sysfs: %w", err)
		}
		r.sysfs = root
	}
	dir, err := findCgroupDir(r.sysfs, line.mounts(), rel)
	if err != nil {
		return CgroupMemory{}, missingMeansGone(r.procPath, pid, named(err))
	}
	f, err := r.sysfs.Open(dir)
	if err != nil {
		return CgroupMemory{}, named(err)
	}
	d := &cgroupDir{f: f, dir: dir, used: r.gen}
	if err := r.readFiles(d, files, &m); err != nil {
		d.close()
		return CgroupMemory{}, missingMeansGone(r.procPath, pid, named(err))
	}
	m.Dir = dir
	if len(r.dirs) < r.maxDirs {
		r.dirs[key] = d
	} else {
		d.close()
	}
	return m, nil
}

// dirGone reports the errors of a kept directory whose cgroup was
// removed: a removed kernfs directory has no entries (ENOENT), and a file
// opened just before the removal reads ENODEV; ESTALE is for a sysfs
// reached over a network filesystem.
func dirGone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESTALE) || errors.Is(err, unix.ENODEV)
}

// EndScan closes the directories no Read used since the last EndScan and
// that inUse (nil: none) does not name by their Dir: their processes are
// gone or no longer asked about.
func (r *CgroupReader) EndScan(inUse func(dir string) bool) {
	for k, d := range r.dirs {
		if d.used != r.gen && (inUse == nil || !inUse(d.dir)) {
			r.drop(k)
		}
	}
	r.gen++
}

// Close closes what the reader keeps open. It may be used again after,
// and opens anew what it needs.
func (r *CgroupReader) Close() error {
	for k := range r.dirs {
		r.drop(k)
	}
	if r.sysfs == nil {
		return nil
	}
	err := r.sysfs.Close()
	r.sysfs = nil
	return err
}

func (r *CgroupReader) drop(k cgroupDirKey) {
	if d := r.dirs[k]; d != nil {
		d.close()
		delete(r.dirs, k)
	}
}

// readFile reads a file of the directory into the reader's buffer, valid
// until the next read. A file of a removed cgroup reads ENODEV, which the
// caller takes as the directory gone, as it does an open that finds no
// file.
func (r *CgroupReader) readFile(d *cgroupDir, name string) ([]byte, error) {
	fd, err := unix.Openat(int(d.f.Fd()), name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err == unix.ELOOP {
		return r.readFileFollowing(d, name)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	defer func() { _ = unix.Close(fd) }()
	data, buf, err := ReadFD(fd, r.buf, maxCgroupFileSize)
	r.buf = buf
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return data, nil
}

// readFileFollowing reads a file that is a symlink through an os.Root at
// its directory, which follows it only if it stays beneath.
func (r *CgroupReader) readFileFollowing(d *cgroupDir, name string) ([]byte, error) {
	root, err := r.sysfs.OpenRoot(d.dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(name)
}
