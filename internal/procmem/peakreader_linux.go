package procmem

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/quicksys"
)

// PeakReader reads processes' resident peaks (VmHWM) from
// <procPath>/<pid>/status, beneath a descriptor of procPath opened at
// the first read and kept. The status file is made on the spot, never
// making the reader wait, so the calls are raw (quicksys); only VmHWM is
// parsed of it. Not safe for concurrent use.
type PeakReader struct {
	procPath string
	dir      int // -1 until the first read
	buf      []byte
}

// NewPeakReader returns a PeakReader of the processes under procPath.
func NewPeakReader(procPath string) *PeakReader {
	return &PeakReader{procPath: procPath, dir: -1}
}

// ResidentPeak returns pid's VmHWM in bytes. A process gone, or a kernel
// without the field, is an error.
func (r *PeakReader) ResidentPeak(pid int) (uint64, error) {
	if r.dir < 0 {
		fd, err := unix.Open(r.procPath, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		r.dir = fd
	}
	fd, err := quicksys.Openat(r.dir, strconv.Itoa(pid)+"/status", unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW)
	if err != nil {
		return 0, err
	}
	data, buf, err := preadAll(fd, r.buf)
	_ = quicksys.Close(fd)
	r.buf = buf
	if err != nil {
		return 0, err
	}
	return parseStatusHWM(data)
}

// Close closes the kept descriptor; a later read opens it again.
func (r *PeakReader) Close() error {
	if r.dir < 0 {
		return nil
	}
	err := unix.Close(r.dir)
	r.dir = -1
	return err
}
