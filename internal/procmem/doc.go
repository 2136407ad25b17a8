// Package procmem measures memory from outside a process: the resident memory
// of a process tree split by kind (JVM, Python, other), as Spark's
// ProcfsMetricsGetter does for PySpark, and the memory cgroup that holds a
// process (cgroup v1 and v2). It reads files under the procfs and sysfs
// roots it is given, never writes to them and never runs anything.
//
//	w, err := procmem.NewProcessWatch(procPath) // once, kept from scan to scan
//	table, err := w.Scan(time.Now())             // what changed in /proc since the last scan
//	p, ok := table.Process(pid)                  // PID, PPID, Comm, RSS (bytes), StartTime
//	rss := table.TreeRSS(pid)                    // {JVM, Python, Other} bytes over pid + descendants
//
//	r := procmem.NewCgroupReader(procPath, sysfsPath) // once, kept from scan to scan
//	cg, err := r.Read(pid, cgroupFile)                // cgroupFile: /proc/<pid>/cgroup as the caller holds it
//	r.EndScan(nil)                                    // closes the cgroups no Read asked for in this scan
//
// # Processes
//
// What a scan reads is ProcessWatch's and Scan's comments; how a tree is
// summed and classified, TreeRSS's. One /proc/<pid>/stat read per process
// gives all of Process, including the PF_KTHREAD flag that lets JVM
// discovery skip the kernel's threads without looking at their files.
// Processes that exit during the scan, or whose stat cannot be parsed, are
// left out; the scan fails only when /proc cannot be listed or has no
// btime. The tests hold a watch's table, and parseStat, to procfs's reads
// of every process (NewProcessTable, in a test file;
// TestWatchAgreesWithProcfsLive, TestParseStatAgreesWithProcfs).
//
// # Memory cgroup
//
// The memory cgroup of a pid comes from /proc/<pid>/cgroup: the line with the
// v1 memory controller if there is one (also in hybrid mode), otherwise the
// v2 "0::" line.
//
//	               cgroup v1 (fs/cgroup/memory/<path>)          cgroup v2 (fs/cgroup/<path>)
//	limit          memory.limit_in_bytes; ≥ 2^62 = unlimited (0) memory.max; "max" = unlimited (0)
//	usage          memory.usage_in_bytes                         memory.current
//	working set    usage − total_inactive_file (memory.stat)     usage − inactive_file
//	OOM kills      oom_kill in memory.oom_control (≥ 4.13)       oom_kill in memory.events
//	events         —                                             memory.events: low, high, max, oom, oom_kill
//	pressure       —                                             memory.pressure (PSI): some/full total (µs), avg10
//	high           —                                             memory.high; "max" = none (0)
//	failcnt        memory.failcnt                                —
//
// The working set, floored at 0, is the cAdvisor / kubelet definition. A
// missing OOM-kill line or file, memory.failcnt, memory.pressure or
// memory.high, and a memory.pressure that reads EOPNOTSUPP (PSI off at
// boot), cost only their own figure (its Has flag false), never an error;
// no version's figure stands in for the other's. Co-mounted v1 controllers
// (cpu,memory) are looked up under their joint directory, then under
// memory. A bad value in a cgroup file is an error naming the file.
//
// The caller must run in the host cgroup namespace. Paths in /proc/<pid>/cgroup
// are relative to the reader's cgroup namespace: a systemd service, or a
// DaemonSet pod with hostPID and the host's /sys/fs/cgroup mounted, sees host
// paths that exist under the sysfs root. From a private cgroup namespace,
// other containers' paths start with "/.." and are rejected; paths that do
// not exist under sysfs give "no such cgroup under sysfs"; a v2 cgroup
// without the memory controller gives "memory.max missing". The error wraps
// fs.ErrNotExist only when the process itself has exited, so a caller that
// drops "gone" errors quietly still sees these misconfigurations.
//
// What CgroupReader keeps between scans, and why, is its comment; its
// costs are in docs/performance.md. A caller should still read each
// distinct cgroup once per scan when several processes share one.
package procmem
