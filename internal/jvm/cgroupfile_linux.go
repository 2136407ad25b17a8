package jvm

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// cgroupKey returns the contents of p's /proc/<pid>/cgroup, kept in its
// record: they name the cgroups the per-scan memory read is shared by,
// and reading the file for every JVM on every scan cost more than the rest
// of finding its cgroup's figures once they are read for the scan. They
// are read again while the process is young, when a launcher execs java
// or moves itself into a container's cgroup, and every
// procmem.RefreshEvery after, the same policy the process watch follows
// for the stat file; a later move is seen that late.
func (r *reader) cgroupKey(p procmem.Process, now time.Time) (string, error) {
	rec := r.recs.of(p.PID, p.StartTime)
	if rec.cgroupFile != "" && now.Sub(p.StartTime) >= procmem.YoungFor && now.Sub(rec.cgroupFileAt) < procmem.RefreshEvery {
		return rec.cgroupFile, nil
	}
	b, buf, err := procmem.ReadProcFile(filepath.Join(r.procPath, strconv.Itoa(p.PID), "cgroup"), r.cgBuf, 64<<10)
	r.cgBuf = buf
	if err != nil {
		rec.cgroupFile = ""
		return "", err
	}
	if rec.cgroupFile != string(b) {
		rec.cgroupFile = string(b)
	}
	rec.cgroupFileAt = now
	return rec.cgroupFile, nil
}

// cgroupMemory reads the memory cgroup of p once per scan and cgroup: JVMs
// of one Spark worker or YARN node manager often share theirs. Equal
// /proc/<pid>/cgroup contents, read in the exporter's cgroup namespace,
// name the same cgroups.
func (r *reader) cgroupMemory(p procmem.Process, seen map[string]procmem.CgroupMemory, now time.Time) (procmem.CgroupMemory, error) {
	key, err := r.cgroupKey(p, now)
	if err != nil {
		return procmem.CgroupMemory{}, fmt.Errorf("pid %d: reading cgroup: %w", p.PID, err)
	}
	if cg, ok := seen[key]; ok {
		return cg, nil
	}
	if r.cgroups == nil {
		r.cgroups = procmem.NewCgroupReader(r.procPath, r.sysfsPath)
	}
	cg, err := r.cgroups.Read(p.PID, key)
	if err == nil {
		seen[key] = cg
	}
	return cg, err
}

// closeUnusedCgroups closes the cgroup directories of no JVM in view.
func (r *reader) closeUnusedCgroups(kept map[int]*JVM) {
	if r.cgroups != nil {
		var inUse func(string) bool
		if len(kept) > 0 {
			dirs := make(map[string]bool, len(kept))
			for _, j := range kept {
				dirs[j.Cgroup.Dir] = true
			}
			inUse = func(dir string) bool { return dirs[dir] }
		}
		r.cgroups.EndScan(inUse)
	}
}
