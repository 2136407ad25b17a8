package testenv

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// StartDaemon runs a server for the test (Prometheus, Alertmanager, the
// exporter), kills it when the test ends or the test binary dies, and
// prints its output if the test failed.
func StartDaemon(t testing.TB, bin string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	var mu sync.Mutex
	cmd := exec.Command(bin, args...)
	cmd.Stdout = LockedWriter{Mu: &mu, W: &out}
	cmd.Stderr = LockedWriter{Mu: &mu, W: &out}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
}

// LockedWriter serialises writes to W: a command's stdout and stderr are
// copied by goroutines of their own.
type LockedWriter struct {
	Mu *sync.Mutex
	W  io.Writer
}

func (l LockedWriter) Write(p []byte) (int, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.W.Write(p)
}
