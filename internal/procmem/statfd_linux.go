package procmem

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/quicksys"
)

// maxStatFDs caps the stat files a watch keeps open: the JVMs and their
// tree members, which a caller asks about at each of their readings.
// Beyond it they are opened for each read, as everything else is.
const maxStatFDs = 1024

// readStat reads pid's stat. A process the caller asked about (asked: not
// the watch's own rereading of new, young or due processes) in an earlier
// scan, no longer than KeepAskedFor ago or in the last one, and again in
// this one keeps its file open: a pread from offset 0 makes procfs produce
// it afresh, for half the cost of an open, read and close
// (BenchmarkStatFD). A caller that asks about a JVM at each of its
// readings, which are further apart than scans, sets KeepAskedFor to the
// longest time between two. The descriptor refers to the process, not to
// the pid: once the process is gone it reads an error or nothing, and the
// pid is read by its path again, where another process may have it now.
func (w *ProcessWatch) readStat(pid int, e *watched, asked, keep bool) ([]byte, error) {
	if e != nil && e.statFD > 0 {
		data, buf, err := preadAll(e.statFD-1, w.statBuf)
		w.statBuf = buf
		if err == nil && len(data) > 0 {
			if asked {
				e.asked, e.askedAt = w.gen, w.now
			}
			return data, nil
		}
		w.releaseStat(pid, e)
	}
	if asked && e != nil {
		e.asked, e.askedAt = w.gen, w.now
	}
	fd, err := quicksys.Openat(int(w.dir.Fd()), strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	data, buf, err := preadAll(fd, w.statBuf)
	w.statBuf = buf
	if err != nil || !keep {
		_ = quicksys.Close(fd)
		return data, err
	}
	e.statFD = fd + 1
	w.statFDs[pid] = e
	return data, nil
}

// keepable says whether a read of e that a caller asks for may keep its
// file open: e was asked about in an earlier scan, recently enough, and
// the cap on kept files leaves room. Asked before the read marks e asked.
func (w *ProcessWatch) keepable(e *watched) bool {
	return e != nil && e.asked != 0 && e.asked < w.gen && w.recentlyAsked(e) && len(w.statFDs) < w.maxStatFDs
}

// readResident reads e's resident memory through its kept statm file, and
// gives the rest of the process as e's last stat read had it: the caller
// needs only the memory up to date, and the process is the one of that
// read, which the descriptor pins (once it exits the read fails). A
// failure closes the file and leaves the caller to read stat by path.
func (w *ProcessWatch) readResident(pid int, e *watched) (Process, bool) {
	if e.statmFD == 0 {
		return Process{}, false
	}
	data, buf, err := preadAll(e.statmFD-1, w.statBuf)
	w.statBuf = buf
	var pages uint64
	if err == nil {
		pages, err = parseStatmResident(data)
	}
	if err != nil {
		w.releaseStat(pid, e)
		return Process{}, false
	}
	w.StatmReads++
	e.asked, e.askedAt = w.gen, w.now
	e.p.RSS = pages * w.page
	return e.p, true
}

// keepStatm opens e's statm file and keeps it, for its next Resident
// reads; the stat just read is the process's as the file will be.
func (w *ProcessWatch) keepStatm(pid int, e *watched) {
	if e.statmFD > 0 {
		return
	}
	fd, err := quicksys.Openat(int(w.dir.Fd()), strconv.Itoa(pid)+"/statm", unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW)
	if err != nil {
		return
	}
	e.statmFD = fd + 1
	w.statFDs[pid] = e
}

// recentlyAsked says whether e was asked about in the last scan or
// within KeepAskedFor.
func (w *ProcessWatch) recentlyAsked(e *watched) bool {
	return e.asked+1 >= w.gen || w.now.Sub(e.askedAt) <= w.KeepAskedFor
}

// releaseStatFDs closes the stat files of processes no one asked about
// lately (recentlyAsked): they left a tree, stopped being a JVM, or are
// gone.
func (w *ProcessWatch) releaseStatFDs() {
	for pid, e := range w.statFDs {
		if !w.recentlyAsked(e) {
			w.releaseStat(pid, e)
		}
	}
}

func (w *ProcessWatch) releaseStat(pid int, e *watched) {
	if e.statFD > 0 {
		_ = quicksys.Close(e.statFD - 1)
		e.statFD = 0
	}
	if e.statmFD > 0 {
		_ = quicksys.Close(e.statmFD - 1)
		e.statmFD = 0
	}
	if w.statFDs[pid] == e {
		delete(w.statFDs, pid)
	}
}

// Close releases the files the watch holds open. The watch is not used
// after it.
func (w *ProcessWatch) Close() error {
	for pid, e := range w.statFDs {
		w.releaseStat(pid, e)
	}
	_ = w.loadavg.Close()
	w.closeListing()
	return w.dir.Close()
}

// preadAll reads a small procfs file from offset 0 into buf, growing it
// when the file does not fit, up to 64 KiB, and returns the data and the
// buffer to reuse. Such a file is made anew by a read at offset 0, so a
// descriptor can be kept and read again. procfs makes it on the spot,
// never making the reader wait: the reads are raw (quicksys).
func preadAll(fd int, buf []byte) (data, reuse []byte, err error) {
	return preadAllWith(quicksys.Pread, fd, buf, 64<<10)
}

// ReadProcFile reads a small procfs file by path into buf, grown when the
// file does not fit, to no more than limit bytes (a buffer given or made
// larger is not cut), and returns the data and the
// buffer to reuse. The calls are raw, as for every procfs read here, and
// a symbolic link as the file itself is refused, as beneath a watch's
// directory.
func ReadProcFile(path string, buf []byte, limit int) (data, reuse []byte, err error) {
	fd, err := quicksys.Openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW)
	if err != nil {
		return nil, buf, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer func() { _ = quicksys.Close(fd) }()
	data, reuse, err = preadAllWith(quicksys.Pread, fd, buf, limit)
	if err != nil {
		err = &os.PathError{Op: "read", Path: path, Err: err}
	}
	return data, reuse, err
}

// preadCgroup is preadAll for a cgroup's file, up to limit bytes. The
// kernel may flush the cgroup tree's statistics before it answers: work
// on the CPU that grows with the tree, never a wait for a device or
// another process, so the reads are raw as well (quicksys).
func preadCgroup(fd int, buf []byte, limit int) (data, reuse []byte, err error) {
	return preadAllWith(quicksys.Pread, fd, buf, limit)
}

func preadAllWith(pread func(fd int, p []byte, offset int64) (int, error), fd int, buf []byte, limit int) (data, reuse []byte, err error) {
	if len(buf) == 0 {
		buf = make([]byte, 4096)
	}
	n := 0
	for {
		m, err := pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, buf, err
		}
		if m == 0 {
			return buf[:n], buf, nil
		}
		n += m
		if n == len(buf) {
			if len(buf) >= limit {
				return nil, buf, fmt.Errorf("file larger than %d bytes", limit)
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}
