package testenv

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
)

// StartSleepers starts n sleeping processes, as on a busy node, until the
// test or benchmark ends. They are a shell's children, not this process's,
// so what measures this process's own tree does not count them.
func StartSleepers(tb testing.TB, n int) {
	tb.Helper()
	// The subshell outlives the shell and goes to init with its sleepers.
	cmd := exec.Command("sh", "-c", fmt.Sprintf("(for i in $(seq %d); do sleep 900 & done; wait) >/dev/null & echo ready", n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	if _, err := out.Read(make([]byte, 6)); err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		tb.Fatal(err)
	}
}
