package vm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// vmConfig is one boot.
type vmConfig struct {
	Kernel  kernel
	Initrd  string
	Work    string // shared read-write as /run/vm; run.sh in it is what the guest runs
	MemMiB  int
	CPUs    int
	Timeout time.Duration
}

// boot runs the VM until it powers off and returns its serial console.
// The accelerator is VM_ACCEL if set, else KVM when /dev/kvm can be
// opened, falling back to TCG when KVM cannot start the guest (nested
// virtualisation that /dev/kvm offers but cannot run).
func boot(t *testing.T, c vmConfig) string {
	t.Helper()
	accels := []string{"tcg"}
	switch a := os.Getenv("VM_ACCEL"); {
	case a != "":
		accels = []string{a}
	case kvmUsable():
		accels = []string{"kvm", "tcg"}
	}
	var console string
	for i, accel := range accels {
		start := time.Now()
		var err error
		console, err = runQEMU(t, c, accel)
		up := strings.Contains(console, "vm: up")
		t.Logf("VM (%s, %d MiB, %d CPUs, %s) ran for %.1fs", accel, c.MemMiB, c.CPUs, c.Kernel.Package, time.Since(start).Seconds())
		if err == nil && up {
			return console
		}
		if !up && i+1 < len(accels) {
			first, _, _ := strings.Cut(strings.TrimSpace(console), "\n")
			t.Logf("the guest did not come up under %s (%v: %s); trying %s", accel, err, first, accels[i+1])
			continue
		}
		t.Fatalf("VM: %v\nserial console:\n%s", err, tail(console, 8000))
	}
	return console
}

func kvmUsable() bool {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func runQEMU(t *testing.T, c vmConfig, accel string) (string, error) {
	t.Helper()
	qemu := testenv.RequireTool(t, "qemu-system-x86_64")
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	args := []string{
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-accel", accel, "-cpu", cpuModel(accel),
		"-m", strconv.Itoa(c.MemMiB), "-smp", strconv.Itoa(c.CPUs),
		"-kernel", c.Kernel.Image, "-initrd", c.Initrd,
		// quiet: the OOM killer's reports go to /dev/kmsg, where the
		// exporter reads them, without also crawling over the emulated
		// serial line while the machine is out of memory.
		"-append", "console=ttyS0 quiet loglevel=1 panic=-1 oops=panic",
		"-serial", "stdio",
		// The host's root, read-only: the guest runs the host's java,
		// python3 and the built binaries from it.
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
		"-virtfs", "local,path=" + c.Work + ",mount_tag=work,security_model=none,multidevs=remap",
	}
	cmd := exec.CommandContext(ctx, qemu, args...)
	out := &testenv.Buffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.Stdin = nil
	if err := cmd.Start(); err != nil {
		return "", err
	}
	// A guest that KVM accepts but cannot run spins without a word on its
	// console: give up on it as soon as it should have come up, not at
	// the end of the whole run's timeout.
	var notUp atomic.Bool
	bootDone := make(chan struct{})
	go func() {
		select {
		case <-time.After(bootDeadline):
			if !strings.Contains(out.String(), "vm: up") {
				notUp.Store(true)
				cancel()
			}
		case <-bootDone:
		}
	}()
	err := cmd.Wait()
	close(bootDone)
	switch {
	case notUp.Load():
		err = fmt.Errorf("the guest did not come up within %v", bootDeadline)
	case ctx.Err() != nil:
		err = fmt.Errorf("no power-off within %v", c.Timeout)
	}
	console := out.String()
	_ = os.WriteFile(filepath.Join(c.Work, "console.log"), []byte(console), 0o644)
	return console, err
}

// bootDeadline is how long a guest may take to say it is up: seconds
// under KVM, well under a minute under TCG.
const bootDeadline = 2 * time.Minute

// cpuModel: under TCG "max" emulates what the JVM's code generator looks
// for (SSE4, AVX); under KVM the host's own CPU.
func cpuModel(accel string) string {
	if accel == "kvm" {
		return "host"
	}
	return "max"
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
