package procmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// CgroupMemory is the state of the memory cgroup that holds a process.
type CgroupMemory struct {
	// Path is the cgroup's path as /proc/<pid>/cgroup gives it.
	Path string
	// Dir is the cgroup's directory beneath the sysfs root (CgroupReader
	// only), where the kernel's notifications about it are asked for.
	Dir string
	// Version is 1 or 2.
	Version int
	// Limit is the hard limit in bytes; 0 means unlimited.
	Limit uint64
	// Usage is memory.usage_in_bytes (v1) or memory.current (v2).
	Usage uint64
	// WorkingSet is Usage minus inactive file pages, floored at 0.
	WorkingSet uint64
	// OOMKills counts processes the kernel OOM killer killed in this cgroup;
	// valid only when HasOOMKills (kernels before 4.13 lack it in v1).
	OOMKills    uint64
	HasOOMKills bool
	// Peak is the highest Usage the kernel has seen for the cgroup: v1
	// memory.max_usage_in_bytes, v2 memory.peak (Linux 5.19+). Unlike a
	// sample, it sees between reads. Valid only when HasPeak.
	Peak    uint64
	HasPeak bool

	// Anon, File, Shmem and Kernel are the memory charged to the cgroup
	// and its descendants by kind, from the memory.stat read for
	// WorkingSet, as executor_container_memory_bytes's kinds in
	// docs/metrics.md; statKey has the keys each version sums.
	// Each is valid only when its Has flag is set.
	Anon, File, Shmem, Kernel             uint64
	HasAnon, HasFile, HasShmem, HasKernel bool

	// What the kernel says of the cgroup running short, before usage
	// shows it. v2: Events (memory.events, whose oom_kill is OOMKills),
	// Pressure (memory.pressure; absent when the kernel has no PSI) and
	// High (memory.high, 0 when "max": Kubernetes sets it with MemoryQoS).
	// v1: FailCnt (memory.failcnt), the charges that hit the limit.
	Events     MemoryEvents
	HasEvents  bool
	Pressure   Pressure
	High       uint64
	FailCnt    uint64
	HasFailCnt bool
}

// cgroupFiles names the files to read for one cgroup version.
type cgroupFiles struct {
	limit, usage, stat, oom, peak string
	failcnt                       string // v1 only
	pressure, high                string // v2 only
	v2                            bool   // memory.stat's keys are v2's, oom is memory.events
	parseLimit                    func([]byte) (uint64, error)
	parseOOM                      func([]byte) (MemoryEvents, error)
}

var (
	v1Files = cgroupFiles{
		limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes",
		stat: "memory.stat", oom: "memory.oom_control", peak: "memory.max_usage_in_bytes",
		failcnt: "memory.failcnt", parseLimit: parseV1Limit, parseOOM: parseOOMControl,
	}
	v2Files = cgroupFiles{
		limit: "memory.max", usage: "memory.current",
		stat: "memory.stat", oom: "memory.events", peak: "memory.peak",
		pressure: "memory.pressure", high: "memory.high", v2: true, parseLimit: parseV2Max, parseOOM: parseMemoryEvents,
	}
)

// parseOOMControl takes v1's memory.oom_control as the one event it counts.
func parseOOMControl(data []byte) (MemoryEvents, error) {
	n, found, err := parseKeyedUint(data, "oom_kill")
	return MemoryEvents{OOMKill: n, HasOOMKill: found}, err
}

// missingMeansGone keeps fs.ErrNotExist in err only when the process itself
// has exited (its cgroup may go with it). A missing cgroup directory or file
// while the process lives means a misconfiguration (not the host's sysfs or
// cgroup namespace, no memory controller): callers that drop "gone" errors
// quietly must still see it.
func missingMeansGone(procPath string, pid int, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Stat(filepath.Join(procPath, strconv.Itoa(pid))); errors.Is(serr, fs.ErrNotExist) {
		return fmt.Errorf("pid %d exited: %w", pid, serr)
	}
	return errors.New(err.Error())
}

// findCgroupDir returns the first mount candidate under which the cgroup
// directory exists.
func findCgroupDir(root *os.Root, mounts []string, rel string) (string, error) {
	var firstErr error
	for _, m := range mounts {
		dir := path.Join(m, rel)
		fi, err := root.Stat(dir)
		if err == nil && fi.IsDir() {
			return dir, nil
		}
		if err == nil {
			err = fmt.Errorf("%s is not a directory", dir)
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if errors.Is(firstErr, fs.ErrNotExist) {
		return "", fmt.Errorf("no such cgroup under sysfs (%s); is the exporter outside the host cgroup namespace, or did the cgroup go away? %w", path.Join(mounts[0], rel), firstErr)
	}
	return "", firstErr
}

// readFiles reads and parses one cgroup's files beneath its directory
// into m; each file is parsed before the next is read into the same buffer.
func (r *CgroupReader) readFiles(d *cgroupDir, f cgroupFiles, m *CgroupMemory) error {
	read := func(name string) ([]byte, error) { return r.readFile(d, name) }
	var err error
	if m.Limit, err = parseFile(read, f.limit, f.parseLimit); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// v2 root cgroups, and children of a parent whose
			// cgroup.subtree_control lacks "memory", have no memory files.
			return fmt.Errorf("%s missing: no memory controller for this cgroup: %w", f.limit, err)
		}
		return err
	}
	if m.Usage, err = parseFile(read, f.usage, parseSingleUint); err != nil {
		return err
	}
	st, err := parseFile(read, f.stat, func(b []byte) (memoryStat, error) { return parseMemoryStat(b, f.v2) })
	if err != nil {
		return err
	}
	m.WorkingSet = workingSet(m.Usage, st.inactiveFile)
	m.Anon, m.HasAnon = st.anon, st.hasAnon
	m.File, m.HasFile = st.file, st.hasFile
	m.Shmem, m.HasShmem = st.shmem, st.hasShmem
	m.Kernel, m.HasKernel = st.kernel, st.hasKernel

	// Kernels before 5.19 have no memory.peak in v2: then no peak.
	if m.Peak, m.HasPeak, err = parseOptional(read, f.peak, parseSingleUint); err != nil {
		return err
	}

	// The OOM kills; v2's memory.events has more, all of which are kept.
	ev, found, err := parseOptional(read, f.oom, f.parseOOM)
	if err != nil {
		return err
	}
	m.OOMKills, m.HasOOMKills = ev.OOMKill, ev.HasOOMKill
	if f.v2 {
		m.Events, m.HasEvents = ev, found
	}

	// The files only one version has, each of which a kernel may lack (no
	// PSI, an older controller), costing only its own figure: v2's
	// pressure and high, v1's failcnt.
	if f.failcnt != "" {
		if m.FailCnt, m.HasFailCnt, err = parseOptional(read, f.failcnt, parseSingleUint); err != nil {
			return err
		}
	}
	if f.pressure != "" {
		if m.Pressure, _, err = parseOptional(read, f.pressure, parsePressure); err != nil {
			return err
		}
	}
	if f.high != "" {
		if m.High, _, err = parseOptional(read, f.high, parseV2Max); err != nil {
			return err
		}
	}
	return nil
}

// parseFile reads the file name and parses it, naming the file in a parse
// error.
func parseFile[T any](read func(name string) ([]byte, error), name string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := read(name)
	if err != nil {
		return zero, err
	}
	v, err := parse(b)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// parseOptional is parseFile for a file that older kernels lack: found is
// false, without error, when it is missing, or when the kernel has it but
// not the feature behind it (memory.pressure reads EOPNOTSUPP with PSI off
// at boot).
func parseOptional[T any](read func(name string) ([]byte, error), name string, parse func([]byte) (T, error)) (v T, found bool, err error) {
	v, err = parseFile(read, name, parse)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.EOPNOTSUPP) {
		return v, false, nil
	}
	return v, err == nil, err
}
