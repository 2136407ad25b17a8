package procmem

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ReadCgroupMemory finds the memory cgroup of pid from <procPath>/<pid>/cgroup
// and reads its files under <sysfsPath>/fs/cgroup.
//
// The error wraps fs.ErrNotExist only when the process has exited; a cgroup
// missing under sysfs for a live process is reported as a plain error.
//
// The path in /proc/<pid>/cgroup is relative to the reader's cgroup namespace
// root. The exporter is assumed to run in the host cgroup namespace (a
// systemd service, or a DaemonSet pod with hostPID whose /sys/fs/cgroup is the
// host's): then that path is the host path and names a directory under
// sysfsPath. From a private cgroup namespace, other containers' paths start
// with "/.." and are rejected with an error saying so.
//
// Files are opened through an os.Root at sysfsPath, so neither ".." nor a
// symlink can lead the read outside it.
func ReadCgroupMemory(procPath, sysfsPath string, pid int) (CgroupMemory, error) {
	b, err := os.ReadFile(filepath.Join(procPath, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return CgroupMemory{}, fmt.Errorf("pid %d: reading cgroup: %w", pid, err)
	}
	r := NewCgroupReader(procPath, sysfsPath)
	defer func() { _ = r.Close() }() // read-only directories: closing reports nothing to act on
	return r.Read(pid, string(b))
}
