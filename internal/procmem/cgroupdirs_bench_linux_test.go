package procmem

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// BenchmarkCgroupFile is each file a scan reads from a memory cgroup
// (with a process in it): opened beneath the kept directory, read to the
// end and closed, as CgroupReader does, against a pread at offset 0 of a
// descriptor kept open (cgroupfs regenerates the file on each read from
// 0). What the kernel spends producing a file is the floor of either.
func BenchmarkCgroupFile(b *testing.B) {
	cg := testenv.NewMemoryCgroup(b, 64<<20)
	cmd := exec.Command("sh", "-c", "echo $$ > "+cg.Procs()+" && exec sleep 600")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	dir, err := os.Open(cg.Dir)
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	files := v1Files
	if cg.Version == 2 {
		files = v2Files
	}
	r := &CgroupReader{buf: make([]byte, 4096)}
	d := &cgroupDir{f: dir}
	names := []string{files.limit, files.usage, files.stat, files.oom, files.peak}
	for _, name := range []string{files.failcnt, files.pressure, files.high} { // one version's each
		if name != "" {
			names = append(names, name)
		}
	}
	for _, name := range names {
		b.Run("openat-read-close/"+name, func(b *testing.B) {
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for b.Loop() {
				if data, err := r.readFile(d, name); err != nil || len(data) == 0 {
					b.Fatal(err)
				}
			}
			reportCPU()
		})
		b.Run("pread-kept/"+name, func(b *testing.B) {
			fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer unix.Close(fd)
			reportCPU := testenv.CPUPerOp(b, syscall.RUSAGE_SELF)
			for b.Loop() {
				if data, _, err := ReadFD(fd, r.buf, 64<<10); err != nil || len(data) == 0 {
					b.Fatal(err)
				}
			}
			reportCPU()
		})
	}
}
