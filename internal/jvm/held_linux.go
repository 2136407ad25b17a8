package jvm

import (
	"golang.org/x/sys/unix"
)

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
