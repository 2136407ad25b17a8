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
// The tests hold a watch's table to one read the plain way, every process
// once with procfs (NewProcessTable, in a test file).
//
// # Reading what changed
//
// A ProcessWatch reads per scan what changed in /proc and what is asked
// about, not every process (its comment and Scan's say how); Seen(pid) is
// a process's last read without reading it, Recheck(pid) whether it was
// read in this scan as new, young or changed. The stat parser
// (parseStat) is held to procfs's by TestParseStatAgreesWithProcfs and
// TestWatchAgreesWithProcfsLive.
//
// # Process tree resident memory
//
// One /proc/<pid>/stat read per process gives the PPID,
// comm, RSS, start time, and the PF_KTHREAD flag that marks the kernel's own
// threads, which JVM discovery then skips without looking at their files.
// The boot time comes from /proc/stat once per procfs mount and is cached: it
// never changes, and /proc/stat is costly on machines with many CPUs.
// Processes that exit during the scan, or whose stat cannot be parsed, are
// left out; the scan fails only when /proc cannot be listed or has no btime.
//
// Kind: comm "java" is jvm; "python", "pythonN", "pythonN.M" are python
// (PySpark daemon and workers); anything else is other. When comm says
// nothing, the basename of the exe link is checked (the link is read, not
// followed), which catches renamed Python processes.
//
// RSS counts shared pages in every process mapping them, so forked PySpark
// workers make the sum higher than the real cost. Spark's own
// ProcessTreeMetrics have the same bias; the cgroup working set is the
// unbiased number.
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
// The working set, floored at 0, is the cAdvisor / kubelet definition. When the OOM-kill
// line or file is missing, HasOOMKills is false (not an error); so are a
// missing memory.failcnt, memory.pressure or memory.high, and a
// memory.pressure that reads EOPNOTSUPP (PSI off at boot): their figures
// are absent, and no version's figure stands in for the other's. Co-mounted v1
// controllers (cpu,memory) are looked up under their joint directory, then
// under memory.
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
// Cgroup paths that are not absolute, contain ".." or NUL, or are longer than
// 4096 bytes are rejected. Files are opened through an os.Root at the sysfs
// root, so no symlink can lead a read out of it (a symlink inside sysfs, like
// systemd's memory -> cpu,memory, is fine). A bad value in a cgroup file is an
// error naming the file.
//
// A scanner that reads the same cgroups again and again (on Kubernetes
// each executor has its own) keeps a CgroupReader: it parses the /proc/<pid>/cgroup contents the caller already holds
// (parseMemoryLine, held to procfs's parser by a differential test and a
// fuzz target), keeps each cgroup's directory open between scans (at most
// 1024; opened through the os.Root, so the same symlink rule holds) and
// opens only the files beneath it on each read (six on v1, seven on v2,
// memory.events serving both the OOM kills and the events). A kept
// directory whose cgroup was removed reads ENOENT (ENODEV, ESTALE) and is
// looked up again by its path, which finds a cgroup made again under the
// same name. What is left is the kernel producing the files, memory.stat
// the most of it (BenchmarkCgroupFile). A caller should still read each
// distinct cgroup once per scan when several processes share one.
// Benchmark figures are in docs/performance.md.
package procmem
