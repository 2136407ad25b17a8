package procmem

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Root identifies what a process sees as "/": processes in the same mount
// namespace with the same root directory see the same /tmp.
type Root struct {
	MountNS  string
	Dev, Ino uint64
}

// Root returns pid's root, false when the process cannot be inspected. A
// process is moved into its container's root before it runs the
// container's program, so the root is looked at when the table lists the
// pid new, young or changed (recheck) and kept by the watch otherwise: a
// scan then costs no system call for a process that is not new. A table
// without a watch knows no root.
func (t *ProcessTable) Root(pid int) (Root, bool) {
	e := t.watched(pid)
	if e == nil {
		return Root{}, false
	}
	if e.rootGen != t.w.gen && (e.rootGen == 0 || t.recheck[pid]) {
		t.w.RootReads++
		e.root, e.hasRoot = processRoot(int(t.w.dir.Fd()), strconv.Itoa(pid), t.w.link[:])
		e.rootGen = t.w.gen
	}
	return e.root, e.hasRoot
}

// NSPID returns pid as the process sees itself, the name of its
// hsperfdata file: the same in procfs's own pid namespace, the innermost
// NSpid of its status otherwise. Like Root, it is read again only when
// the table rechecks the pid.
func (t *ProcessTable) NSPID(pid int) (int, error) {
	e := t.watched(pid)
	if e == nil {
		return 0, errors.New("not listed")
	}
	if e.nspidGen == t.w.gen || (e.nspidGen != 0 && !t.recheck[pid]) {
		return e.nspid, nil
	}
	if !t.w.nsKnown {
		t.w.procfsNS, t.w.nsKnown = procfsPIDNamespace(t.w.procPath), true
	}
	ns, err := pidInNamespace(t.w.procPath, t.w.procfsNS, pid)
	if err == nil {
		e.nspid, e.nspidGen = ns, t.w.gen
	}
	return ns, err
}

// watched is what the watch keeps of a pid listed in this table, nil for
// a table without a watch.
func (t *ProcessTable) watched(pid int) *watched {
	if t.w == nil || t.gone[pid] {
		return nil
	}
	return t.w.known[pid]
}

// processRoot returns the key of the process's view of the file system,
// for the pid directory name beneath the open /proc dirfd; link is scratch
// space for the namespace link. Without permission to read the mount
// namespace link, the process gets a root of its own (keyed by pid), which
// costs its callers a listing but loses nothing.
func processRoot(dirfd int, pid string, link []byte) (Root, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, pid+"/root", &st, 0); err != nil {
		return Root{}, false
	}
	var mnt string
	if n, err := unix.Readlinkat(dirfd, pid+"/ns/mnt", link); err == nil && n < len(link) {
		mnt = string(link[:n])
	} else {
		mnt = "pid:" + pid
	}
	return Root{MountNS: mnt, Dev: st.Dev, Ino: st.Ino}, true
}

// pidInNamespace returns pid as the process sees itself: the same in
// procfs's own pid namespace (procfsPIDNS), the innermost NSpid otherwise.
func pidInNamespace(procPath, procfsPIDNS string, pid int) (int, error) {
	if ns, _ := os.Readlink(filepath.Join(procPath, strconv.Itoa(pid), "ns", "pid")); ns != "" && ns == procfsPIDNS {
		return pid, nil
	}
	b, _, err := ReadProcFile(filepath.Join(procPath, strconv.Itoa(pid), "status"), nil, 64<<10)
	if err != nil {
		return 0, err
	}
	return parseNSPID(b)
}

// procfsPIDNamespace returns the pid namespace procPath shows pids of, or
// "" when it cannot tell. Its pid 1 lives there, but may not be
// inspectable (a non-dumpable init); the exporter itself lives there when
// its NSpid has a single entry.
func procfsPIDNamespace(procPath string) string {
	if ns, err := os.Readlink(filepath.Join(procPath, "1", "ns", "pid")); err == nil {
		return ns
	}
	status, _, err := ReadProcFile(filepath.Join(procPath, "self", "status"), nil, 64<<10)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok && len(strings.Fields(rest)) == 1 {
			ns, _ := os.Readlink(filepath.Join(procPath, "self", "ns", "pid"))
			return ns
		}
	}
	return ""
}

// parseNSPID returns the last number of the NSpid line of a status file.
func parseNSPID(status []byte) (int, error) {
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, errors.New("empty NSpid line")
		}
		return strconv.Atoi(fields[len(fields)-1])
	}
	return 0, errors.New("no NSpid line")
}
