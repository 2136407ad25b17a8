//go:build !amd64 && !arm64

package quicksys

import "golang.org/x/sys/unix"

// Where the raw calls' argument layout is not the one of raw_linux.go
// (a 64-bit offset split in two registers), the calls go through the
// scheduler as usual.

func Pread(fd int, p []byte, offset int64) (int, error) { return unix.Pread(fd, p, offset) }
func Openat(dirfd int, path string, flags int) (int, error) {
	return unix.Openat(dirfd, path, flags, 0)
}
func Close(fd int) error                       { return unix.Close(fd) }
func Fstat(fd int, st *unix.Stat_t) error      { return unix.Fstat(fd, st) }
func Getdents(fd int, buf []byte) (int, error) { return unix.Getdents(fd, buf) }
func Seek(fd int, offset int64, whence int) (int64, error) {
	return unix.Seek(fd, offset, whence)
}
func PollNow(fds []unix.PollFd) (int, error) { return unix.Poll(fds, 0) }
