package quicksys

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Each call must answer as x/sys/unix's does.
func TestCallsAnswerAsUnix(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Repeat([]byte("hsperfdata "), 1000)
	if err := os.WriteFile(filepath.Join(dir, "f"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)

	if _, err := Openat(dfd, "missing", unix.O_RDONLY|unix.O_CLOEXEC); err != unix.ENOENT {
		t.Errorf("Openat(missing) = %v, want ENOENT", err)
	}
	if _, err := Openat(dfd, "f\x00", unix.O_RDONLY); err == nil {
		t.Error("Openat of a name with a NUL succeeded")
	}
	fd, err := Openat(dfd, "f", unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for _, off := range []int64{0, 7, int64(len(content)) - 3, int64(len(content)), 1 << 40} {
		n, err := Pread(fd, buf, off)
		m, uerr := unix.Pread(fd, make([]byte, 4096), off)
		if n != m || err != uerr {
			t.Errorf("Pread at %d = %d, %v; unix.Pread = %d, %v", off, n, err, m, uerr)
		}
		if off < int64(len(content)) && !bytes.Equal(buf[:n], content[off:off+int64(n)]) {
			t.Errorf("Pread at %d read other bytes", off)
		}
	}
	if n, err := Pread(fd, nil, 0); n != 0 || err != nil {
		t.Errorf("Pread into nothing = %d, %v", n, err)
	}
	var st, ust unix.Stat_t
	if err := Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(fd, &ust); err != nil || st != ust {
		t.Errorf("Fstat = %+v, unix.Fstat = %+v, %v", st, ust, err)
	}
	if err := Close(fd); err != nil {
		t.Fatal(err)
	}
	if err := Close(fd); err != unix.EBADF {
		t.Errorf("second Close = %v, want EBADF", err)
	}
	if _, err := Pread(fd, buf, 0); err != unix.EBADF {
		t.Errorf("Pread of a closed descriptor = %v, want EBADF", err)
	}
	if _, err := Seek(fd, 0, 0); err != unix.EBADF {
		t.Errorf("Seek of a closed descriptor = %v, want EBADF", err)
	}
	if off, err := Seek(dfd, 0, 0); err != nil || off != 0 {
		t.Errorf("Seek = %d, %v", off, err)
	}
	if _, err := Seek(dfd, -1, 0); err != unix.EINVAL {
		t.Errorf("Seek to -1 = %v, want EINVAL as unix.Seek's", err)
	}

	n, err := Getdents(dfd, buf)
	if off, serr := Seek(dfd, 0, 0); serr != nil || off != 0 {
		t.Fatalf("Seek to the start = %d, %v", off, serr)
	}
	ubuf := make([]byte, 4096)
	m, uerr := unix.Getdents(dfd, ubuf)
	if err != nil || uerr != nil || n != m {
		t.Fatalf("Getdents = %d, %v; unix.Getdents = %d, %v", n, err, m, uerr)
	}
	// The records but their offset cookies, which a file system may hand
	// out afresh after a rewind.
	got, want := names(buf[:n]), names(ubuf[:m])
	if !slices.Equal(got, want) || !slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "f@") }) {
		t.Errorf("Getdents listed %q, unix.Getdents %q", got, want)
	}
}

func names(buf []byte) []string {
	var out []string
	for len(buf) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		name, _, _ := bytes.Cut(buf[19:reclen], []byte{0})
		out = append(out, fmt.Sprintf("%s@%d", name, binary.NativeEndian.Uint64(buf[0:8])))
		buf = buf[reclen:]
	}
	return out
}

func TestPollNowSaysWhatIsReady(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	fds := []unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}
	if n, err := PollNow(fds); n != 0 || err != nil || fds[0].Revents != 0 {
		t.Fatalf("PollNow of an empty pipe = %d, %v, revents %#x", n, err, fds[0].Revents)
	}
	if _, err := unix.Write(p[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := PollNow(fds); n != 1 || err != nil || fds[0].Revents&unix.POLLIN == 0 {
		t.Errorf("PollNow of a pipe with a byte = %d, %v, revents %#x", n, err, fds[0].Revents)
	}
	if n, err := PollNow(nil); n != 0 || err != nil {
		t.Errorf("PollNow(nil) = %d, %v", n, err)
	}
}

// BenchmarkPread is one read of a small procfs file kept open, raw and
// through the scheduler.
func BenchmarkPread(b *testing.B) {
	fd, err := unix.Open("/proc/self/statm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 256)
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			if _, err := Pread(fd, buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unix", func(b *testing.B) {
		for b.Loop() {
			if _, err := unix.Pread(fd, buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
