package jvm

import (
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/procfs"

	"github.com/executor-exporter/executor_exporter/internal/procmem"
)

// identityReader reads what a process's files say about who it is;
// the JVM's record keeps it (identity).
type identityReader struct {
	procPath string
	fs       procfs.FS
}

func newIdentityReader(procPath string) identityReader {
	fs, _ := procfs.NewFS(procPath) // NewTracker checked it; a bad path fails each read
	return identityReader{procPath: procPath, fs: fs}
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

// identity is who the process p is: its owner, command line and
// environment, read once per process and program (pid, start time,
// command name: an exec keeps the first two): /proc/<pid>/status alone
// costs more to produce than the hsperfdata file it guards. It is kept in
// r, p's live record, and read each time for a process without one (nil
// r).
func (c identityReader) identity(r *record, p procmem.Process) (identityEntry, error) {
	if r != nil && r.id != nil && r.id.comm == p.Comm {
		return *r.id, nil
	}
	id, keep, err := c.read(p)
	if err == nil && keep && r != nil {
		r.id = &id
	}
	return id, err
}

// read reads what does not change while a process runs one program — its
// effective uid, command line and environment. keep says whether it may
// be kept for the process and program (pid, start time, command name: an
// exec keeps the first two).
func (c identityReader) read(p procmem.Process) (e identityEntry, keep bool, err error) {
	pid := p.PID
	proc, err := c.fs.Proc(pid)
	if err != nil {
		return identityEntry{}, false, err
	}
	status, err := proc.NewStatus()
	if err != nil {
		return identityEntry{}, false, err
	}
	dir := filepath.Join(c.procPath, strconv.Itoa(pid))
	e = identityEntry{start: p.StartTime, comm: p.Comm, euid: uint32(status.UIDs[1]), cmd: Command{Role: RoleJVM}}
	b, err := readTruncated(filepath.Join(dir, "cmdline"), maxCmdlineBytes)
	if err == nil {
		e.cmd = ParseCmdline(b)
	}
	// An empty command line is a process in the middle of an exec (the
	// kernel names it after the new program before it lays out the new
	// arguments) or one that exited: what it says now is not kept, and
	// the next scan asks again.
	keep = err != nil || len(b) > 0
	// environ is readable only with ptrace access; without it the command
	// line alone decides.
	var env Environment
	if b, err := readTruncated(filepath.Join(dir, "environ"), maxEnvironBytes); err == nil {
		env = ParseEnviron(b)
		e.cmd = e.cmd.Merge(env)
		e.pod = env.PodName
	}
	e.noCounters = NoCounters(e.cmd, env)
	return e, keep, nil
}
