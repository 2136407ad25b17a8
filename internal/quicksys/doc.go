// Package quicksys makes the system calls of the background sampling's
// reads of kernel-made files (procfs, a JVM's hsperfdata in tmpfs) without
// telling the Go scheduler, as the runtime does for its own calls that
// cannot block.
//
// A system call through package syscall or x/sys/unix is bracketed by the
// scheduler: it marks the goroutine's P as in a system call and, when the
// runtime's monitor thread (sysmon) sleeps, wakes it, to poll every 20 µs
// for a millisecond, then less and less often, for as long as the process
// is busy, so that it can hand the P to another thread if a call blocks. The sampler's calls never block: a pread of a
// file the kernel makes on the spot, a getdents of /proc, a poll that does
// not wait. Made through the scheduler, a scan of hundreds of such calls
// keeps the monitor polling for its whole length, a thread woken and put
// to sleep again each time; made raw, the process's one busy thread does
// the work alone. What it saves at a real scrape interval is in
// docs/performance.md (Decisions); BenchmarkPread compares one call each
// way.
//
// Nothing that can wait for a device or another process goes through here:
// not a smaps read (it takes the process's memory map lock, which the
// process holds while it maps), not a lookup by path on a disk's file
// system, not a socket, not an eventfd, not a poll with a timeout. The
// reads of a memory cgroup's files do: the kernel may flush the cgroup
// tree's statistics first, work on the CPU that a goroutine would do as
// well, while the P is held.
package quicksys
