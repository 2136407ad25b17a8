package procmem

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// A real process in a real memory cgroup holding 64 MiB of anonymous
// memory and 32 MiB of shared anonymous memory (mmap(-1) is MAP_SHARED in
// Python): the kernel keeps the latter as shmem in the page cache, so it
// must show in Shmem and File and stay out of Anon.
func TestLiveCgroupMemoryByKind(t *testing.T) {
	requireLive(t, true, "python3")
	cg := testenv.NewMemoryCgroup(t, 256<<20)
	const program = `import mmap, sys, time
b = bytearray(64 << 20)
for i in range(0, len(b), 4096): b[i] = 1
m = mmap.mmap(-1, 32 << 20)
for i in range(0, len(m), 4096): m[i] = 1
sys.stdout.write("ready\n"); sys.stdout.flush()
time.sleep(120)
`
	cmd := exec.Command("sh", "-c", fmt.Sprintf("echo $$ > %s && exec python3 -c '%s'", cg.Procs(), program))
	startUntilReady(t, cmd)

	m, err := ReadCgroupMemory("/proc", "/sys", cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("v%d: usage %d, anon %d, file %d, shmem %d, kernel %d (%v)", m.Version, m.Usage, m.Anon, m.File, m.Shmem, m.Kernel, m.HasKernel)
	if !m.HasAnon || !m.HasFile || !m.HasShmem {
		t.Fatalf("kinds missing: %+v", m)
	}
	if m.Anon < 64<<20 || m.Anon >= 96<<20 {
		t.Errorf("anon = %d, want the 64 MiB bytearray and the interpreter, without the 32 MiB of shmem", m.Anon)
	}
	if m.Shmem < 32<<20 || m.Shmem > m.File {
		t.Errorf("shmem = %d, want >= 32 MiB and within file %d", m.Shmem, m.File)
	}
	if m.Anon+m.Shmem > m.Usage+1<<20 {
		t.Errorf("anon + shmem = %d, above usage %d", m.Anon+m.Shmem, m.Usage)
	}
	// v1's memory.stat has no kernel figure; v2's always has one.
	if m.HasKernel != (cg.Version == 2) || (m.HasKernel && m.Kernel == 0) {
		t.Errorf("kernel = %d (known %v) on cgroup v%d", m.Kernel, m.HasKernel, cg.Version)
	}
}
