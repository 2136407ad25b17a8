package nativemem

// Region is where a resident byte of a JVM process belongs.
type Region int

// The regions, in the order of executor_jvm_native_memory_bytes' region
// label values.
const (
	Heap            Region = iota // the Java heap
	Metaspace                     // class metadata, class space included
	CodeCache                     // JIT-compiled code
	GC                            // the collector's own structures (bitmaps, card tables)
	ThreadStacks                  // every thread's stack
	Malloc                        // glibc's arenas and the main brk heap
	NativeMmap                    // other anonymous memory: large native allocations
	MappedFiles                   // file-backed data mappings
	SharedLibraries               // the JVM's binary, .so, jars, the CDS archive
	Other                         // whatever else is resident (vdso, hsperfdata)
	NumRegions
)

var regionNames = [NumRegions]string{
	"heap", "metaspace", "code_cache", "gc", "thread_stacks",
	"malloc", "native_mmap", "mapped_files", "shared_libraries", "other",
}

func (r Region) String() string {
	if r < 0 || r >= NumRegions {
		return "unknown"
	}
	return regionNames[r]
}

// RegionNames lists the region label values in order.
func RegionNames() []string { return append([]string(nil), regionNames[:]...) }

// Shmem is the name of the container's tmpfs pages when they, not one of
// the process's regions, grew most: files under /dev/shm or a
// memory-backed spill directory are charged to the container without
// being mapped by the JVM.
const Shmem = "shmem"

// Python names PySpark workers as what grew: their resident memory is the
// process tree's, outside the JVM's breakdown.
const Python = "python"
