// Package nativemem breaks a JVM's resident memory down by region from
// outside the process, with no agent: /proc/<pid>/smaps says how much of
// each mapping is resident and how it was made (permissions, the file
// behind it, MAP_NORESERVE), and what hsperfdata says of the JVM's own
// reservations (the heap's size, the class space's size, metaspace's
// committed bytes) locates them among the mappings.
//
// The regions follow the JVM's Native Memory Tracking categories where the
// outside view can tell them apart (heap, metaspace, code cache, GC, thread
// stacks) and glibc's where it cannot see into the JVM's allocations
// (malloc arenas, large allocations mmapped on their own). The rules, and
// where mappings that the kernel merged blur them, are in docs/jvm.md.
//
// Everything here is pure: parsing and classification work over bytes and
// values, so the package builds and is tested anywhere.
package nativemem
