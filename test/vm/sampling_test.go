package vm_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// checkFastLeak: judged as the other container OOM kills, and on cgroup
// v2 the last sample of an exporter with the default sampling flags of an
// executor leaking 64 MiB/s from half of its container's limit is at most
// 2 s older than the kill: the container's headroom sets how often it is
// read (docs/jvm.md#sampling).
func checkFastLeak(t *testing.T, r guestRun) {
	c := checkContainerOOM(t, r, "fast-leak", "native")
	log, err := os.ReadFile(filepath.Join(r.Out, vmreport.DefaultExporterLog))
	if err != nil {
		t.Fatal(err)
	}
	line := oomReport(string(log), c.PID)
	if line == "" {
		t.Fatalf("the default-flags exporter reported no OOM kill of pid %d; its log:\n%s", c.PID, tail(string(log), 6000))
	}
	t.Logf("its report: %s", line)
	m := regexp.MustCompile(` sample_age_seconds=([0-9.]+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no sample_age_seconds in the report")
	}
	age, _ := strconv.ParseFloat(m[1], 64)
	if age > 2 {
		t.Errorf("the last sample was %.1fs older than the kill, want at most 2s", age)
	}
	if !strings.Contains(line, " cause=native ") {
		t.Errorf("want cause=native for direct buffers, as the first exporter said")
	}
}

// oomReport is the exporter's log line of the OOM kill of pid.
func oomReport(log string, pid int) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `msg="OOM kill`) && strings.Contains(line, " pid="+strconv.Itoa(pid)+" task=java ") {
			return line
		}
	}
	return ""
}
