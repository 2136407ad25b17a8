package procmem

import (
	"os"

	"golang.org/x/sys/unix"
)

// KeptFile is a small kernel-made file (procfs) read again and again
// through one descriptor: a pread from offset 0 makes procfs produce it
// afresh, for about half the cost of an open, read and close
// (BenchmarkStatFD), into a buffer kept from read to read.
//
// The descriptor pins what the path named when it was opened: for
// /proc/self/..., the process and its network namespace then. A process
// reading its own files can rely on both. A read that fails or comes back
// empty opens the path again, once; a path that cannot be opened is tried
// again at the next Read.
//
// A KeptFile is not safe for concurrent use.
type KeptFile struct {
	path string
	fd   int // -1 when closed
	buf  []byte
}

// NewKeptFile returns a KeptFile for path, opened at its first Read.
func NewKeptFile(path string) *KeptFile {
	return &KeptFile{path: path, fd: -1}
}

// Read returns the file's contents, valid until the next Read or Close.
func (f *KeptFile) Read() ([]byte, error) {
	if f.fd >= 0 {
		data, buf, err := preadAll(f.fd, f.buf)
		f.buf = buf
		if err == nil && len(data) > 0 {
			return data, nil
		}
		f.closeFD()
	}
	fd, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: f.path, Err: err}
	}
	f.fd = fd
	data, buf, err := preadAll(fd, f.buf)
	f.buf = buf
	if err != nil {
		f.closeFD()
		return nil, &os.PathError{Op: "read", Path: f.path, Err: err}
	}
	return data, nil
}

// Close closes the descriptor; a later Read opens the path again.
func (f *KeptFile) Close() error {
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &os.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

func (f *KeptFile) closeFD() { _ = f.Close() }
