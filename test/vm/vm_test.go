// Package vm_test runs the built exporter on the kernels users run,
// inside a VM: Debian's own kernel under qemu, with only cgroup v2 (as on
// most Kubernetes nodes), real JVMs, real OOM kills in containers and one
// machine-wide OOM kill, which cannot be caused safely on the machine
// that runs the tests. docs/testing-kernels.md explains the harness.
//
// The host builds the initramfs and the guest program (./guest, a Go test
// binary), boots the VM with the host's root shared read-only and a work
// directory shared read-write, and judges what the guest left there: its
// report (vmreport) and the exporter's scrapes.
package vm_test

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// The VM: enough memory for every container case at once, little enough
// that filling it (the machine-wide OOM case) takes seconds.
const (
	vmMemMiB = 1280
	vmCPUs   = 2
)

// runScript is what the guest runs (initScript chroots into the host's
// root and runs it from the work share).
const runScript = `#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
export VM_OUT=/run/vm/out VM_CLASSES=/run/vm/classes VM_EXPORTER=/run/vm/executor_exporter
cd /run/vm
# The guest and the exporter in a group of their own, protected from the
# machine's reclaim as every case's group is (see makeCgroup in ./guest).
mkdir /sys/fs/cgroup/vm-guest && echo max >/sys/fs/cgroup/vm-guest/memory.min && echo $$ >/sys/fs/cgroup/vm-guest/cgroup.procs
exec >out/guest.log 2>&1
./guest.test -test.v -test.timeout=12m
echo $? >out/guest.exit
`

// guestRun is what one boot left behind.
type guestRun struct {
	Report vmreport.Report
	Out    string // the output directory
}

// TestVM boots the VM once and judges each case from what the guest saw.
func TestVM(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a VM that runs real JVMs under emulation")
	}
	testenv.RequireRoot(t)
	testjvm.RequireJava(t)
	for _, tool := range []string{"qemu-system-x86_64", "busybox", "python3", "unshare", "dpkg-deb", "apt-get"} {
		testenv.RequireTool(t, tool)
	}
	k := debianKernel(t)
	work := t.TempDir()
	initrd := buildInitramfs(t, k, work)
	prepareWork(t, work)

	start := time.Now()
	boot(t, vmConfig{Kernel: k, Initrd: initrd, Work: work, MemMiB: vmMemMiB, CPUs: vmCPUs, Timeout: 15 * time.Minute})
	t.Logf("boot to power-off: %.0fs", time.Since(start).Seconds())
	r := readRun(t, filepath.Join(work, "out"))
	saveArtifacts(t, r.Out)

	t.Run("cgroup-v2", func(t *testing.T) { checkCgroupV2(t, r) })
	t.Run("oom-native", func(t *testing.T) { checkContainerOOM(t, r, "oom-native", "native") })
	t.Run("oom-heap", func(t *testing.T) { checkContainerOOM(t, r, "oom-heap", "heap") })
	t.Run("exits", func(t *testing.T) { checkExits(t, r) })
	t.Run("kubernetes-systemd", func(t *testing.T) {
		checkKubernetes(t, r, "k8s-systemd", vmreport.SystemdPodUID, "containerd://"+vmreport.SystemdContainerID)
	})
	t.Run("kubernetes-cgroupfs", func(t *testing.T) {
		checkKubernetes(t, r, "k8s-cgroupfs", vmreport.CgroupfsPodUID, vmreport.CgroupfsContainerID)
	})
	t.Run("pyspark-child", func(t *testing.T) { checkPySpark(t, r) })
	t.Run("oom-slow", func(t *testing.T) { checkContainerOOM(t, r, "oom-slow", "native") })
	t.Run("signals", func(t *testing.T) {
		for _, name := range []string{"oom-native", "oom-heap", "oom-slow", "pyspark"} {
			t.Run(name, func(t *testing.T) { checkSignals(t, r, name) })
		}
	})
	t.Run("fast-leak", func(t *testing.T) { checkFastLeak(t, r) })
	t.Run("node-oom", func(t *testing.T) { checkNodeOOM(t, r) })
}

// prepareWork fills the work share: the guest binary, the exporter, the
// stand-ins' classes and run.sh. The guest's /tmp is its own, so nothing
// it needs may be under the host's.
func prepareWork(t *testing.T, work string) {
	t.Helper()
	for _, d := range []string{"out", "classes"} {
		if err := os.Mkdir(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "test", "-c", "-tags", "vmguest", "-o", filepath.Join(work, "guest.test"), "./test/vm/guest")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the guest: %v\n%s", err, out)
	}
	copyFile(t, testenv.ExporterBinary(t), filepath.Join(work, "executor_exporter"), 0o755)
	classes := testjvm.Classpath(t)
	err := filepath.Walk(classes, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(work, "classes", strings.TrimPrefix(p, classes))
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		copyFile(t, p, dst, 0o644)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "run.sh"), []byte(runScript), 0o755); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// readRun reads the guest's report; a guest that failed or left none
// fails the test with its log.
func readRun(t *testing.T, out string) guestRun {
	t.Helper()
	log, _ := os.ReadFile(filepath.Join(out, "guest.log"))
	exit, err := os.ReadFile(filepath.Join(out, "guest.exit"))
	if err != nil || strings.TrimSpace(string(exit)) != "0" {
		t.Errorf("the guest program ended with %q (%v):\n%s", strings.TrimSpace(string(exit)), err, tail(string(log), 8000))
	}
	b, err := os.ReadFile(filepath.Join(out, vmreport.File))
	if err != nil {
		t.Fatalf("no report from the guest: %v", err)
	}
	r := guestRun{Out: out}
	if err := json.Unmarshal(b, &r.Report); err != nil {
		t.Fatalf("the guest's report: %v", err)
	}
	for _, e := range r.Report.Errors {
		t.Errorf("guest: %s", e)
	}
	return r
}

// saveArtifacts keeps what the guest left (report, scrapes, the
// exporter's log, the guest's log) and the serial console as the test's
// artifacts (go test -artifacts; make test keeps them in .artifacts/),
// and prints the exporter's log when a case failed.
func saveArtifacts(t *testing.T, out string) {
	t.Helper()
	dir := t.ArtifactDir()
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	files = append(files, filepath.Join(out, "..", "console.log"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			copyFile(t, f, filepath.Join(dir, filepath.Base(f)), 0o644)
		}
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if log, err := os.ReadFile(filepath.Join(out, vmreport.ExporterLog)); err == nil {
			t.Logf("the exporter's log in the VM:\n%s", tail(string(log), 12000))
		}
	})
}
