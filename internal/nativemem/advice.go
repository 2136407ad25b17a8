package nativemem

// Advice is what to change when a region (or the container's shmem) grew
// until the container was killed; docs/runbook.md#native-memory-regions
// explains each. It is "" for a name it does not know.
func Advice(region string) string {
	return advice[region]
}

var advice = map[string]string{
	"heap":             "raise spark.executor.memory (and the container with it) or use less heap",
	"metaspace":        "look for a class-loader leak (UDFs, REPL, generated code); cap it with -XX:MaxMetaspaceSize",
	"code_cache":       "cap -XX:ReservedCodeCacheSize or raise spark.executor.memoryOverhead",
	"gc":               "the collector's structures grow with -Xmx: raise spark.executor.memoryOverhead",
	"thread_stacks":    "a thread leak: take a thread dump (jstack) and find the pool that is never shut down",
	"malloc":           "glibc arenas: set spark.executorEnv.MALLOC_ARENA_MAX=2 (or use jemalloc), or raise spark.executor.memoryOverhead",
	"native_mmap":      "large native allocations (direct buffers, Netty/Arrow pools): cap -XX:MaxDirectMemorySize, set spark.shuffle.io.preferDirectBufs=false and spark.network.io.preferDirectBufs=false, or raise spark.executor.memoryOverhead",
	"mapped_files":     "mapped files count against the limit while dirty: read fewer files through mmap or raise spark.executor.memoryOverhead",
	"shared_libraries": "libraries and jars rarely grow: raise spark.executor.memoryOverhead",
	"other":            "raise spark.executor.memoryOverhead",
	Python:             "raise spark.executor.pyspark.memory (or spark.executor.memoryOverhead) or use less memory in Python UDFs",
	Shmem:              "tmpfs pages count against the limit: move spill to disk (spark.kubernetes.local.dirs.tmpfs=false, a disk-backed emptyDir) or raise the limit",
}
