package procmem

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrTooLarge is ReadFD's error for a file longer than its limit.
var ErrTooLarge = errors.New("file too large")

// readStat reads pid's stat by its path beneath the watch's directory.
func (w *ProcessWatch) readStat(pid int) ([]byte, error) {
	fd, err := unix.Openat(int(w.dir.Fd()), strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(fd) }()
	data, buf, err := ReadFD(fd, w.statBuf, 64<<10)
	w.statBuf = buf
	return data, err
}

// ReadProcFile reads a small procfs file by path into buf, grown when the
// file does not fit, to no more than limit bytes (a buffer given or made
// larger is not cut), and returns the data and the buffer to reuse. A
// symbolic link as the file itself is refused, as beneath a watch's
// directory.
func ReadProcFile(path string, buf []byte, limit int) (data, reuse []byte, err error) {
	fd, err := unix.Openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, buf, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer func() { _ = unix.Close(fd) }()
	data, reuse, err = ReadFD(fd, buf, limit)
	if err != nil {
		err = &os.PathError{Op: "read", Path: path, Err: err}
	}
	return data, reuse, err
}

// ReadFD is the exporter's one read-to-end loop: fd's content from offset
// 0 into buf, grown when the file does not fit, to no more than limit
// bytes; it returns the data and the buffer to reuse. A file that fills
// the whole buffer at limit is an error wrapping ErrTooLarge.
func ReadFD(fd int, buf []byte, limit int) (data, reuse []byte, err error) {
	if len(buf) == 0 {
		buf = make([]byte, 4096)
	}
	n := 0
	for {
		m, err := unix.Pread(fd, buf[n:], int64(n))
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
				return nil, buf, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

// PeakReader reads processes' resident peaks (VmHWM) from
// <procPath>/<pid>/status; only VmHWM is parsed of it. Not safe for
// concurrent use.
type PeakReader struct {
	procPath string
	buf      []byte
}

// NewPeakReader returns a PeakReader of the processes under procPath.
func NewPeakReader(procPath string) *PeakReader {
	return &PeakReader{procPath: procPath}
}

// ResidentPeak returns pid's VmHWM in bytes. A process gone, or a kernel
// without the field, is an error.
func (r *PeakReader) ResidentPeak(pid int) (uint64, error) {
	data, buf, err := ReadProcFile(filepath.Join(r.procPath, strconv.Itoa(pid), "status"), r.buf, 64<<10)
	r.buf = buf
	if err != nil {
		return 0, err
	}
	return parseStatusHWM(data)
}
