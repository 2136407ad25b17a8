package jvm

import (
	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/hsperf"
	"github.com/executor-exporter/executor_exporter/internal/quicksys"
)

// readHeld reads a JVM's hsperfdata through the file held open since it
// was first read (ends.held, exit_linux.go): one fstat and one pread
// instead of walking to the file again beneath the process's root. It
// returns nil — read by path, as the first time — when there is no such
// file (fd -1) or the file is no longer linked (then the path decides what
// the JVM publishes).
//
// HotSpot maps a file of fixed size (PerfDataMemorySize) and fills it from
// the start; the prologue's used field says how far, and nothing past it
// is parsed. used is the last read's (0: none): the read asks for that
// much, rounded up to a page, and reads on only when the file says more
// is used now. An idle executor's file is a third used.
func readHeld(fd int, buf []byte, used int) []byte {
	if fd < 0 {
		return nil
	}
	var st unix.Stat_t
	if err := quicksys.Fstat(fd, &st); err != nil || st.Nlink == 0 || st.Size > MaxHsperfBytes {
		return nil
	}
	size := int(st.Size)
	want := -1 // the whole file
	if used > 0 && used < size {
		want = min(size, (used+heldPage-1)&^(heldPage-1))
	}
	if cap(buf) < size+1 {
		buf = make([]byte, 0, size+1)
	}
	buf, ok := preadTo(fd, buf[:0], want)
	if !ok {
		return nil
	}
	if want > 0 && len(buf) == want && want < size {
		if n := hsperf.UsedBytes(buf); n > len(buf) {
			if buf, ok = preadTo(fd, buf, min(n, size)); !ok {
				return nil
			}
		}
	}
	return buf
}

const heldPage = 4096

// preadTo reads fd from len(buf) on until buf holds want bytes, or,
// with want < 0, until the file ends (growing buf up to MaxHsperfBytes).
func preadTo(fd int, buf []byte, want int) ([]byte, bool) {
	for want < 0 || len(buf) < want {
		if len(buf) == cap(buf) {
			if len(buf) > MaxHsperfBytes {
				return nil, false
			}
			buf = append(buf, 0)[:len(buf)]
		}
		end := cap(buf)
		if want >= 0 {
			end = min(end, want)
		}
		n, err := quicksys.Pread(fd, buf[len(buf):end], int64(len(buf)))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, true
}
