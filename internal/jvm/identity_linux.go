package jvm

import (
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/procfs"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// identityCache keeps what a process's files say about who it is, read once
// per process and program.
type identityCache struct {
	procPath string
	fs       procfs.FS
	byPID    map[int]identityEntry
}

func newIdentityCache(procPath string) identityCache {
	fs, _ := procfs.NewFS(procPath) // NewTracker checked it; a bad path fails each get
	return identityCache{procPath: procPath, fs: fs, byPID: map[int]identityEntry{}}
}

type identityEntry struct {
	start time.Time
	comm  string
	euid  uint32 // the owner its hsperfdata file must have
	cmd   Command
	pod   string
	// noCounters is why the JVM's options keep it from publishing
	// hsperfdata; "" when they let it.
	noCounters string
}

// get reads what does not change while a process runs one program —
// its effective uid, command line and environment — once per process and
// program (pid, start time, command name: an exec keeps the first two):
// /proc/<pid>/status alone costs more to produce than the hsperfdata file
// it guards.
func (c *identityCache) get(p procmem.Process) (identityEntry, error) {
	pid := p.PID
	if e, ok := c.byPID[pid]; ok && e.start.Equal(p.StartTime) && e.comm == p.Comm {
		return e, nil
	}
	proc, err := c.fs.Proc(pid)
	if err != nil {
		return identityEntry{}, err
	}
	status, err := proc.NewStatus()
	if err != nil {
		return identityEntry{}, err
	}
	dir := filepath.Join(c.procPath, strconv.Itoa(pid))
	e := identityEntry{start: p.StartTime, comm: p.Comm, euid: uint32(status.UIDs[1]), cmd: Command{Role: RoleJVM}}
	b, err := readTruncated(filepath.Join(dir, "cmdline"), maxCmdlineBytes)
	if err == nil {
		e.cmd = ParseCmdline(b)
	}
	// An empty command line is a process in the middle of an exec (the
	// kernel names it after the new program before it lays out the new
	// arguments) or one that exited: what it says now is not kept, and
	// the next scan asks again.
	cache := err != nil || len(b) > 0
	// environ is readable only with ptrace access; without it the command
	// line alone decides.
	var env Environment
	if b, err := readTruncated(filepath.Join(dir, "environ"), maxEnvironBytes); err == nil {
		env = ParseEnviron(b)
		e.cmd = e.cmd.Merge(env)
		e.pod = env.PodName
	}
	e.noCounters = NoCounters(e.cmd, env)
	if cache {
		c.byPID[pid] = e
	}
	return e, nil
}

// forget drops the processes the table no longer knows (without reading:
// a pid gone is forgotten by the next listing of every process at the
// latest; a pid reused is read again by get).
func (c *identityCache) forget(table *procmem.ProcessTable) {
	for pid := range c.byPID {
		if _, ok := table.Seen(pid); !ok {
			delete(c.byPID, pid)
		}
	}
}
