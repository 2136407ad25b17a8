package testjvm

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestStartExecutorStandIn(t *testing.T) {
	j := Start(t, Options{JVMArgs: []string{"-Xmx32m"}, Args: []string{"--executor-id", "1", "--app-id", "app-x", "--exit-after-s", "30"}})
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", j.PID))
	if err != nil {
		t.Fatal(err)
	}
	if want := ExecutorClass; !strings.Contains(string(cmdline), want) {
		t.Fatalf("cmdline %q lacks %s", cmdline, want)
	}
	if j.NSPID != j.PID {
		t.Fatalf("same namespace: NSPID %d != PID %d", j.NSPID, j.PID)
	}
}
