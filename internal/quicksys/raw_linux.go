//go:build amd64 || arm64

package quicksys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pread is unix.Pread for a file that never makes a reader wait.
func Pread(fd int, p []byte, offset int64) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(ptr), uintptr(len(p)), uintptr(offset), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Openat is unix.Openat beneath a procfs directory.
func Openat(dirfd int, path string, flags int) (int, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	fd, _, errno := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(flags), 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// Close is unix.Close for a descriptor of a file that never makes a
// reader wait.
func Close(fd int) error {
	if _, _, errno := unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// Fstat is unix.Fstat.
func Fstat(fd int, st *unix.Stat_t) error {
	if _, _, errno := unix.RawSyscall(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0); errno != 0 {
		return errno
	}
	return nil
}

// Seek is unix.Seek of a procfs directory, which moves the listing's
// offset without looking at anything.
func Seek(fd int, offset int64, whence int) (int64, error) {
	off, _, errno := unix.RawSyscall(unix.SYS_LSEEK, uintptr(fd), uintptr(offset), uintptr(whence))
	if errno != 0 {
		return 0, errno
	}
	return int64(off), nil
}

// Getdents is unix.Getdents of a procfs directory.
func Getdents(fd int, buf []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(buf) > 0 {
		ptr = unsafe.Pointer(&buf[0])
	}
	n, _, errno := unix.RawSyscall(unix.SYS_GETDENTS64, uintptr(fd), uintptr(ptr), uintptr(len(buf)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// PollNow is unix.Poll(fds, 0): which of fds are ready now, without
// waiting.
func PollNow(fds []unix.PollFd) (int, error) {
	if len(fds) == 0 {
		return 0, nil
	}
	var zero unix.Timespec
	n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
