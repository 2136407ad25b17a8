package procmem

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// BenchmarkStatFD is one read of this process's stat: opened, read and
// closed each time (what the watch does) against a pread at offset 0 of a
// descriptor kept open (procfs regenerates the file on each read from 0).
func BenchmarkStatFD(b *testing.B) {
	dir, err := os.Open("/proc")
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	name := strconv.Itoa(os.Getpid()) + "/stat"
	buf := make([]byte, 1024)
	b.Run("open-read-close", func(b *testing.B) {
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			data, reuse, err := readStatAt(int(dir.Fd()), name, buf)
			if err != nil || len(data) == 0 {
				b.Fatal(err)
			}
			buf = reuse
		}
		reportCPU()
	})
	b.Run("pread-kept", func(b *testing.B) {
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(fd)
		reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
		for b.Loop() {
			n, err := unix.Pread(fd, buf, 0)
			if err != nil || n == 0 {
				b.Fatal(err)
			}
		}
		reportCPU()
	})
}

// BenchmarkStatmFD is one pread of a kept stat against one of a kept
// statm, the file Resident reads, for this process with as many threads
// as a small and a busy JVM: the kernel makes stat by visiting every
// thread (faults, times), statm from the process's memory counters.
func BenchmarkStatmFD(b *testing.B) {
	dir, err := os.Open("/proc")
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	buf := make([]byte, 1024)
	for _, threads := range []int{16, 200} {
		release := make(chan struct{})
		started := make(chan struct{})
		for range threads {
			go func() {
				runtime.LockOSThread() // exits with its thread: never unlocked
				started <- struct{}{}
				<-release
			}()
			<-started
		}
		for _, file := range []string{"stat", "statm"} {
			b.Run(file+"/threads="+strconv.Itoa(threads), func(b *testing.B) {
				fd, err := unix.Openat(int(dir.Fd()), strconv.Itoa(os.Getpid())+"/"+file, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer unix.Close(fd)
				reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
				for b.Loop() {
					if n, err := unix.Pread(fd, buf, 0); err != nil || n == 0 {
						b.Fatal(err)
					}
				}
				reportCPU()
			})
		}
		close(release)
	}
}

// readStatAt, the open-read-close anchor, reads a small procfs file beneath dirfd into buf, growing it
// when the file does not fit, and returns the data and the buffer to reuse.
// O_NOFOLLOW: a pid directory is never a symlink.
func readStatAt(dirfd int, name string, buf []byte) (data, reuse []byte, err error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, buf, err
	}
	defer unix.Close(fd)
	return preadAll(fd, buf)
}
