package jvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// MaxHsperfBytes bounds how much of an hsperfdata file is read. HotSpot's
// default is 32 KiB (-XX:PerfDataMemorySize); anything near this cap is
// not a file a JVM wrote.
const MaxHsperfBytes = 4 << 20

// Candidate is a process that has an hsperfdata file in its own /tmp whose
// name is the process's pid in its own pid namespace.
type Candidate struct {
	PID   int    // pid in procfs's pid namespace
	NSPID int    // innermost pid: the file name
	Dir   string // hsperfdata_<user> directory under the process's /tmp
}

// candidatesIn lists the hsperfdata files of every group of processes that
// share a root (list, through any member), and returns the processes that
// have one: nspid says what a process's own pid is, the name its file has.
func candidatesIn(groups [][]int, list func(pid int) (map[int][]string, error), nspid func(pid int) (int, error)) []Candidate {
	var found []Candidate
	for _, pids := range groups {
		var files map[int][]string
		var err error
		for _, pid := range pids {
			// Any member's root gives the same listing; the first one
			// that is still there and readable does.
			if files, err = list(pid); err == nil {
				break
			}
		}
		if len(files) == 0 {
			continue
		}
		for _, pid := range pids {
			ns, err := nspid(pid)
			if err != nil {
				continue
			}
			for _, dir := range files[ns] {
				found = append(found, Candidate{PID: pid, NSPID: ns, Dir: dir})
			}
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].PID != found[j].PID {
			return found[i].PID < found[j].PID
		}
		return found[i].Dir < found[j].Dir
	})
	return found
}

func openRoot(procPath string, pid int) (int, error) {
	// The root link itself is procfs's to resolve (it is how one enters the
	// process's root); everything beneath it is resolved by openBeneath.
	path := filepath.Join(procPath, strconv.Itoa(pid), "root")
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// openat2Unsupported is set when the kernel has no openat2 (before 5.6);
// tests set it to exercise the fallback.
var openat2Unsupported atomic.Bool

// openBeneath opens name (one path component or several joined with "/",
// never "..") beneath dir without following symlinks, so a container user
// cannot point the exporter at a file outside the container: an absolute
// symlink planted in the container's /tmp would otherwise resolve on the
// host.
func openBeneath(dirfd int, name string, flags int) (*os.File, error) {
	fd, err := openBeneathFD(dirfd, name, flags)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

func openBeneathFD(dirfd int, name string, flags int) (int, error) {
	for _, comp := range strings.Split(name, "/") {
		if comp == "" || comp == "." || comp == ".." {
			return -1, fmt.Errorf("open %q: invalid path component", name)
		}
	}
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_RDONLY | unix.O_NONBLOCK // NONBLOCK: a planted FIFO must not hang the scan
	}
	if !openat2Unsupported.Load() {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{
			Flags:   uint64(flags),
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == nil {
			return fd, nil
		}
		if !errors.Is(err, unix.ENOSYS) {
			return -1, &os.PathError{Op: "openat2", Path: name, Err: err}
		}
		openat2Unsupported.Store(true)
	}
	// Fallback: one component at a time, each with O_NOFOLLOW, which
	// refuses a symlink at every step; ".." was rejected above.
	cur := dirfd
	comps := strings.Split(name, "/")
	for i, comp := range comps {
		f := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(comps)-1 {
			f = flags
		}
		fd, err := unix.Openat(cur, comp, f, 0)
		if cur != dirfd {
			_ = unix.Close(cur)
		}
		if err != nil {
			if err == unix.ENOTDIR && i < len(comps)-1 {
				// O_PATH|O_NOFOLLOW opened a symlink (or a file) where a
				// directory must be: what openat2 reports as ELOOP.
				err = unix.ELOOP
			}
			return -1, &os.PathError{Op: "openat", Path: name, Err: err}
		}
		cur = fd
	}
	return cur, nil
}
