package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// SIGTERM (what a kubelet or systemd sends) stops the exporter cleanly: the
// server drains, the collectors' background work ends, and it exits 0.
func TestSIGTERMStopsCleanly(t *testing.T) {
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(testenv.ExporterBinary(t), "--web.listen-address="+addr,
		"--oom.kmsg-path="+kmsg, "--no-collector.cloud", "--jvm.sample-interval=100ms")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	testenv.WaitFor(t, 20*time.Second, "exporter to serve /metrics", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exporter exited with %v after SIGTERM, want 0\n%s", err, logs.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("exporter still running a minute after SIGTERM\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "Shutting down") {
		t.Errorf("no shutdown logged:\n%s", logs.String())
	}
}
