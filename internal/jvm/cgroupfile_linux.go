package jvm

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// cgroupFile is a process's /proc/<pid>/cgroup as last read. Its contents
// name the cgroups the per-scan memory read is shared by; reading the file
// for every JVM on every scan cost more than the rest of finding its
// cgroup's figures once they are read for the scan.
type cgroupFile struct {
	start time.Time // the process's start: a reused pid is another process
	at    time.Time // when it was read
	key   string
}

// cgroupFiles keeps the JVMs' /proc/<pid>/cgroup contents.
type cgroupFiles struct {
	procPath string
	buf      []byte
	byPID    map[int]*cgroupFile
}

func newCgroupFiles(procPath string) cgroupFiles {
	return cgroupFiles{procPath: procPath, byPID: map[int]*cgroupFile{}}
}

// cgroupKey returns the contents of p's /proc/<pid>/cgroup. They are read
// again while the process is young, when a launcher execs java or moves
// itself into a container's cgroup, and every procmem.RefreshEvery after,
// the same policy the process watch follows for the stat file; a later
// move is seen that late.
func (f *cgroupFiles) key(p procmem.Process, now time.Time) (string, error) {
	e := f.byPID[p.PID]
	if e != nil && e.start.Equal(p.StartTime) && now.Sub(p.StartTime) >= procmem.YoungFor && now.Sub(e.at) < procmem.RefreshEvery {
		return e.key, nil
	}
	b, buf, err := procmem.ReadProcFile(filepath.Join(f.procPath, strconv.Itoa(p.PID), "cgroup"), f.buf, 64<<10)
	f.buf = buf
	if err != nil {
		delete(f.byPID, p.PID)
		return "", err
	}
	if e == nil {
		e = &cgroupFile{}
		f.byPID[p.PID] = e
	}
	if e.key != string(b) {
		e.key = string(b)
	}
	e.start, e.at = p.StartTime, now
	return e.key, nil
}

// cgroupMemory reads the memory cgroup of p once per scan and cgroup: JVMs
// of one Spark worker or YARN node manager often share theirs. Equal
// /proc/<pid>/cgroup contents, read in the exporter's cgroup namespace,
// name the same cgroups.
func (r *reader) cgroupMemory(p procmem.Process, seen map[string]procmem.CgroupMemory, now time.Time) (procmem.CgroupMemory, error) {
	key, err := r.cgFiles.key(p, now)
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

// forgetCgroupFiles drops the entries of processes that are gone or whose
// pid another process now has, and closes the cgroup directories of no
// JVM in view.
func (r *reader) forgetCgroupFiles(table *procmem.ProcessTable, kept map[int]*JVM) {
	for pid, e := range r.cgFiles.byPID {
		if p, ok := table.Seen(pid); !ok || !p.StartTime.Equal(e.start) {
			delete(r.cgFiles.byPID, pid)
		}
	}
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
