//go:build vmguest

package guest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/executor-exporter/executor_exporter/test/vm/vmreport"
)

// fastLeakCase: the sampling policy's promise on cgroup v2, where no
// usage thresholds exist: an executor in a 512 MiB container, half of it
// already taken by tmpfs, leaks 64 MiB/s of direct buffers until the
// kernel kills it. It is judged on a second exporter with the default
// sampling flags (the first reads every JVM every 500 ms), whose OOM
// report says how old its last sample of the JVM was. It runs alone, so
// that the emulated CPUs are the sampler's and not the other cases'.
func (g *guest) fastLeakCase() {
	const name, limit = "fast-leak", 512 << 20
	c := g.newCase(name, "app-vm-fast-leak", "13")
	if err := startExporter(g, defaultExporterAddr, vmreport.DefaultExporterLog, "--no-collector.cloud"); err != nil {
		g.errorf("%s: %v", name, err)
		return
	}
	j := g.start(name, c, "vm-"+name, limit, jvmOptions{
		JVMArgs: []string{"-Xmx64m", "-XX:MaxDirectMemorySize=4g", "-XX:+UseSerialGC"},
		Args: []string{"--leak", "--kind", "direct-large", "--target-mb", "4096", "--rate-mb-s", "64", "--step-mb", "4",
			"--after-s", "40"},
	})
	if j == nil {
		return
	}
	// Half of the container, before the leak starts: tmpfs written by a
	// process in it is charged to it, and stays charged after the kill
	// until the file is removed.
	shm := filepath.Join("/dev/shm", "vm-"+name)
	defer os.Remove(shm)
	fill := exec.Command("sh", "-c", `echo $$ > "$1" && exec dd if=/dev/zero of="$2" bs=1M count=224 status=none`,
		"sh", filepath.Join(c.CgroupDir, "cgroup.procs"), shm)
	if out, err := fill.CombinedOutput(); err != nil {
		g.errorf("%s: filling the container: %v: %s", name, err, out)
		return
	}
	waitFor(c, "the default-flags exporter to list the JVM", time.Minute, func() bool {
		text, err := getFrom(defaultExporterAddr, "/metrics")
		return err == nil && strings.Contains(text, `pid="`+strconv.Itoa(c.PID)+`"`)
	})
	ended(c, j, 3*time.Minute)
	c.CgroupOOMKills = oomKills(c.CgroupDir)
	waitFor(c, "the default-flags exporter's report of the OOM kill", time.Minute, func() bool {
		log, _ := os.ReadFile(filepath.Join(g.out, vmreport.DefaultExporterLog))
		return strings.Contains(string(log), ` pid=`+strconv.Itoa(c.PID)+` task=java`)
	})
}
