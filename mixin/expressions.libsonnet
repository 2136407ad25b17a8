// PromQL of the per-executor memory quantities the rules, alerts and
// dashboards share. Each is written once here and inlined where it is
// used, so an alert never depends on a recording rule of another group
// having been evaluated first.
//
// An executor's memory in its container is its heap plus everything else
// it holds (its "non-heap"): metaspace and class space, the code cache,
// thread stacks, the GC's own structures, direct and mapped buffers,
// malloc arenas, JNI libraries, and its Python workers (PySpark) and other
// children. The heap cannot grow past its max, and a Spark heap fills in
// the end, so the container needs heap max + non-heap: when that is more
// than the limit, the executor is doomed to an OOM kill.
//
// The non-heap is measured as what the process tree holds beyond the
// committed heap, the hsperfdata non-heap counters seeing only metaspace
// (about 1 % of it, see ../docs/runbook.md#non-heap-memory). What the tree
// holds is the smaller of its resident memory (which counts shared file
// pages, such as libjvm.so, that another cgroup may have paid for) and its
// container's working set (which counts page cache, and every process of a
// shared container).
{
  local c = $._config,

  // of(s) builds the expressions over the series selected by s.
  local of(s) = {
    local x = self,
    heapMax: 'sum without(area) (executor_jvm_memory_max_bytes{%s, area="heap"})' % s,
    heapCommitted: 'sum without(area) (executor_jvm_memory_committed_bytes{%s, area="heap"})' % s,
    heapUsed: 'sum without(area) (executor_jvm_memory_used_bytes{%s, area="heap"})' % s,
    resident: 'sum without(kind) (executor_process_resident_memory_bytes{%s})' % s,
    workingSet: 'executor_container_memory_working_set_bytes{%s}' % s,
    limit: '(executor_container_memory_limit_bytes{%s} > 0)' % s,

    // The smaller of resident memory and working set; resident memory
    // alone when the JVM's cgroup has no memory controller.
    charged: '(%(r)s < %(w)s or %(w)s or %(r)s)' % { r: x.resident, w: x.workingSet },

    nonHeap: 'clamp_min(%(charged)s - %(committed)s, 0)' % { charged: x.charged, committed: x.heapCommitted },

    // What the container will hold once the heap is full.
    demand: '(%(max)s + %(nonHeap)s)' % { max: x.heapMax, nonHeap: x.nonHeap },

    // The room the limit leaves beside the heap max: what
    // spark.executor.memoryOverhead (+ spark.executor.pyspark.memory) buys.
    budget: '(%(limit)s - %(max)s)' % { limit: x.limit, max: x.heapMax },

    // How much the heap may still grow: max minus committed.
    heapRoom: 'clamp_min(%(max)s - %(committed)s, 0)' % { max: x.heapMax, committed: x.heapCommitted },

    // The non-heap memory by region: executor_jvm_native_memory_bytes
    // (the JVM's resident memory by region, from /proc/<pid>/smaps) without
    // the heap; the container's tmpfs pages (kind shmem of
    // executor_container_memory_bytes: /dev/shm, a memory-backed spill
    // directory), which the process need not map but the limit counts, as
    // region "shmem"; and the PySpark workers' resident memory as region
    // "python", as the exporter names a native kill's region
    // (docs/oom.md#which-native-memory). One series per region and JVM.
    local regions(f) =
      '(%(f1)s or label_replace(sum without(kind) (%(f2)s), "region", "shmem", "", "") or label_replace(sum without(kind) (%(f3)s), "region", "python", "", ""))' % {
        f1: f('executor_jvm_native_memory_bytes{%s, region!="heap"}' % s),
        f2: f('executor_container_memory_bytes{%s, kind="shmem"}' % s),
        f3: f('executor_process_resident_memory_bytes{%s, kind="python"}' % s),
      },
    nativeRegions: regions(function(v) v),

    // How much each of those grew over nativeRegionWindow. The breakdown is
    // a sparse gauge: read every 15 minutes at least and constant between
    // readings, so delta() (last minus first sample of the window, a gauge's
    // increase) and not rate(); a region that shrank is negative. Only
    // shmem and python for a JVM without a breakdown.
    nativeRegionGrowth: x.nativeRegionGrowthOver(c.nativeRegionWindow),
    nativeRegionGrowthOver(w):: regions(function(v) 'delta(%s[%s])' % [v, w]),

    // The region that grew most over the window, one per JVM.
    nativeRegionFastest: 'topk by(%(cluster)s, job, instance, pid) (1, %(growth)s)' % { cluster: c.clusterLabel, growth: x.nativeRegionGrowth },

    // The largest region, one per JVM that has a breakdown (shmem and
    // python alone are none: every JVM in a memory cgroup has the one, every
    // JVM the other).
    nativeRegionLargest: 'topk by(%(cluster)s, job, instance, pid) (1, %(regions)s) and on(%(cluster)s, instance, pid) executor_jvm_native_memory_timestamp_seconds{%(s)s}' % { cluster: c.clusterLabel, regions: x.nativeRegions, s: s },

    // Whole MiB, rounded up, for descriptions that name a setting's change.
    mib(expr):: 'ceil((%s) / 1048576)' % expr,
  },

  _expr+:: of(c.selector) + { of:: of },
}
