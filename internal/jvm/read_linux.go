package jvm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// ErrUntrusted is returned for an hsperfdata path that is a symlink, not a
// regular file, or not owned by the process's user.
var ErrUntrusted = errors.New("untrusted hsperfdata file")

// ErrTooLarge is returned for a file longer than the exporter reads.
var ErrTooLarge = procmem.ErrTooLarge

// ReadHsperf reads the candidate's hsperfdata file beneath its root into
// buf (reused when large enough; scans read many files one after the
// other), refusing symlinks and anything but a regular file owned by uid
// (HotSpot checks the same ownership: another user of a shared /tmp could
// plant a file under the victim's pid), and at most MaxHsperfBytes of it.
// It uses read(2), never mmap: a file truncated under a mapping is SIGBUS.
func ReadHsperf(procPath string, c Candidate, uid uint32, buf []byte) ([]byte, error) {
	root, err := openRoot(procPath, c.PID)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	name := "tmp/" + c.Dir + "/" + strconv.Itoa(c.NSPID)
	fd, err := openBeneathFD(root, name, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return nil, fmt.Errorf("%w: %v", ErrUntrusted, err)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrUntrusted, name)
	}
	if st.Uid != uid {
		return nil, fmt.Errorf("%w: %s is owned by uid %d, the process runs as uid %d", ErrUntrusted, name, st.Uid, uid)
	}
	if st.Size > MaxHsperfBytes {
		return nil, fmt.Errorf("%w: %s has %d bytes, more than %d", ErrTooLarge, name, st.Size, MaxHsperfBytes)
	}
	return readFD(fd, buf, int(st.Size)+1, MaxHsperfBytes)
}

// readFD reads fd to its end into buf, sized for hint bytes up front, and
// fails once more than limit bytes came.
func readFD(fd int, buf []byte, hint, limit int) ([]byte, error) {
	if cap(buf) < hint {
		buf = make([]byte, hint)
	}
	data, _, err := procmem.ReadFD(fd, buf[:cap(buf)], limit)
	return data, err
}

// readHeld reads a JVM's hsperfdata through the file held open since it
// was first read (ends.held, exit_linux.go): one fstat and one read
// instead of walking to the file again beneath the process's root. It
// returns nil — read by path, as the first time — when there is no such
// file (fd -1) or the file is no longer linked (then the path decides what
// the JVM publishes).
func readHeld(fd int, buf []byte) []byte {
	if fd < 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Nlink == 0 || st.Size > MaxHsperfBytes {
		return nil
	}
	data, err := readFD(fd, buf, int(st.Size)+1, MaxHsperfBytes)
	if err != nil {
		return nil
	}
	return data
}

// readTruncated reads at most limit bytes of a file and drops the rest:
// command lines and environments are long, and their start is what counts.
func readTruncated(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// isGone reports errors that mean the process exited while being read.
func isGone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// isPermission reports errors that mean the exporter may not read a file.
func isPermission(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}
