// Executor memory: one application's executors (or one executor), where
// their memory goes, against the heap max and the container limit.
local g = import '../lib/dashboard.libsonnet';
local common = import 'common.libsonnet';

{
  local c = $._config,
  local s = '%s, %s, instance=~"$instance", app_id=~"$app_id", executor_id=~"$executor"' % [common.job, common.cluster(c)],
  local who = '{{app_id}} {{role}} {{executor_id}} (pid {{pid}})',

  grafanaDashboards+:: {
    'executor-memory.json':
      common.base(c,
                  'Executor memory',
                  'executor-memory',
                  'Where the memory of Spark executors goes: heap pools against the max, non-heap, native memory by region, GC, resident memory by kind against the container limit, OOM kills.') {
        templating: {
          list: [
            g.datasourceVariable,
            common.jobVariable(c),
            common.clusterVariable(c),
            common.instanceVariable(c),
            // Namespace and application name narrow the application ids:
            // the per-JVM series carry neither (executor_jvm_info does).
            g.queryVariable('namespace',
                            'Namespace',
                            'executor_jvm_info{%s, %s, instance=~"$instance"}' % [common.job, common.cluster(c)],
                            'namespace'),
            g.queryVariable('app_name',
                            'Application name',
                            'executor_jvm_info{%s, %s, instance=~"$instance", namespace=~"$namespace"}' % [common.job, common.cluster(c)],
                            c.appNameLabel),
            g.queryVariable('app_id',
                            'Application',
                            'executor_jvm_info{%s, %s, instance=~"$instance", namespace=~"$namespace", %s=~"$app_name"}' % [common.job, common.cluster(c), c.appNameLabel],
                            'app_id'),
            g.queryVariable('executor',
                            'Executor',
                            'executor_jvm_info{%s, %s, instance=~"$instance", app_id=~"$app_id"}' % [common.job, common.cluster(c)],
                            'executor_id'),
          ],
        },
        annotations: {
          list: [
            g.annotation(
              'OOM kills',
              // changes() misses a victim's first kill when its series is new.
              'changes(executor_oom_kills_total{%(s)s}[2m]) > 0 or (executor_oom_kills_total{%(s)s} unless executor_oom_kills_total{%(s)s} offset 2m)' % { s: s },
              'OOM kill: {{cause}} {{region}}',
              'executor {{executor_id}} (pid {{pid}}), {{constraint}}',
              'red'
            ),
            g.annotation(
              'Executor ends',
              'changes(executor_jvm_exits_total{%(s)s}[2m]) > 0 or (executor_jvm_exits_total{%(s)s} > 0 unless executor_jvm_exits_total{%(s)s} offset 2m)' % { s: s },
              'Ended: {{reason}}',
              'executor {{executor_id}} (pid {{pid}})',
              'purple'
            ),
          ],
        },
        panels: g.layout([
          g.row('Overview'),
          [
            g.stat('Heap used',
                   'Heap used / heap max, per JVM.',
                   [g.target('executor:jvm_heap_used:ratio{%s}' % s, who)],
                   'percentunit',
                   [[0.8, 'orange'], [0.9, 'red']]),
            g.stat('Overhead budget used',
                   'Non-heap memory / (container limit - heap max). Above 100% the container is OOM-killed when the heap fills.',
                   [g.target('executor:memory_overhead_budget_used:ratio{%s}' % s, who)],
                   'percentunit',
                   [[c.budgetThreshold, 'orange'], [1, 'red']]),
            g.stat('Time in GC',
                   'Fraction of wall-clock time spent in garbage collection.',
                   [g.target('executor:jvm_gc_time:ratio{%s}' % s, who)],
                   'percentunit',
                   [[0.1, 'orange'], [0.3, 'red']]),
            g.stat('OOM kills',
                   'OOM kills of these executors in the dashboard time range, by cause.',
                   [g.target('sum by(cause) (increase(executor_oom_kills_total{%s}[$__range]))' % s, '{{cause}}')],
                   'short',
                   [[1, 'red']]),
          ],
          g.row('Heap max + non-heap against the limit'),
          [
            g.timeseries('Memory budget of executor $executor',
                         'Committed heap, the room the heap may still grow into (up to -Xmx), and the non-heap memory (everything else the executor and its Python workers hold), stacked against the container limit (dashed). A stack above the limit is a configuration doomed to an OOM kill once the heap fills (ExecutorMemoryConfigurationDoomed); non-heap close to the gap between heap max and limit is an overhead budget running out.',
                         [
                           g.target('executor_jvm_memory_committed_bytes{%s, area="heap"}' % s, '{{executor_id}} (pid {{pid}}) heap committed'),
                           g.target('executor_jvm_memory_max_bytes{%(s)s, area="heap"} - ignoring(area) executor_jvm_memory_committed_bytes{%(s)s, area="heap"}' % { s: s }, '{{executor_id}} (pid {{pid}}) heap room to max'),
                           g.target('executor:memory_nonheap:bytes{%s}' % s, '{{executor_id}} (pid {{pid}}) non-heap'),
                           g.target('executor_container_memory_limit_bytes{%s}' % s, '{{executor_id}} (pid {{pid}}) limit'),
                         ],
                         'bytes',
                         stack=true,
                         min=0) + g.limitLine('.* limit') { repeat: 'executor', repeatDirection: 'h', maxPerRow: 2 },
          ],
          g.row('Heap'),
          [
            g.timeseries('Heap used, committed and max', 'Used below committed below max; the max is -Xmx.', [
              g.target('executor_jvm_memory_used_bytes{%s, area="heap"}' % s, '%s used' % who),
              g.target('executor_jvm_memory_committed_bytes{%s, area="heap"}' % s, '%s committed' % who),
              g.target('executor_jvm_memory_max_bytes{%s, area="heap"}' % s, '%s max' % who),
            ], 'bytes', min=0),
            g.timeseries('Heap pools vs max', 'Each heap space (eden, survivor, old) against its maximum. An old generation that stays near its max after collections is a heap too small for the live data.', [
              g.target('executor_jvm_memory_pool_used_bytes{%s, pool!~"%s"}' % [s, common.nonHeapPools], '{{executor_id}} {{pool}} used'),
              g.target('executor_jvm_memory_pool_max_bytes{%s, pool!~"%s"}' % [s, common.nonHeapPools], '{{executor_id}} {{pool}} max'),
            ], 'bytes', min=0),
          ],
          g.row('Non-heap and native'),
          [
            g.timeseries('Non-heap pools', 'Metaspace and class space, used and committed.', [
              g.target('executor_jvm_memory_pool_used_bytes{%s, pool=~"%s"}' % [s, common.nonHeapPools], '{{executor_id}} {{pool}} used'),
              g.target('executor_jvm_memory_pool_committed_bytes{%s, pool=~"%s"}' % [s, common.nonHeapPools], '{{executor_id}} {{pool}} committed'),
            ], 'bytes', min=0),
            g.timeseries('Non-heap memory and its budget', 'What the executor holds beyond its committed heap (metaspace, code cache, threads, GC structures, direct buffers, malloc, Python workers), against its budget: container limit minus heap max, what spark.executor.memoryOverhead and spark.executor.pyspark.memory buy (dashed).', [
              g.target('executor:memory_nonheap:bytes{%s}' % s, '%s non-heap' % who),
              g.target('executor:memory_overhead_budget:bytes{%s}' % s, '%s budget' % who),
            ], 'bytes', min=0) + g.limitLine('.* budget'),
          ],
          g.row('Garbage collection'),
          [
            g.timeseries('Time in GC', 'Fraction of time in each collector. Above ~30% the executor crawls; near 98% HotSpot gives up with "GC overhead limit exceeded".', [
              g.target('rate(executor_jvm_gc_collection_seconds_total{%s}[$__rate_interval])' % s, '{{executor_id}} {{gc}}'),
            ], 'percentunit', min=0),
            g.timeseries('Collections', 'Collections per second, per collector.', [
              g.target('rate(executor_jvm_gc_collections_total{%s}[$__rate_interval])' % s, '{{executor_id}} {{gc}}'),
            ], 'ops', min=0),
          ],
          g.row('Process and container'),
          [
            g.timeseries('Resident memory by kind vs container limit', 'The process tree of each executor: the JVM, Python workers (PySpark), other children, stacked against the memory limit of its container (dashed).', [
              g.target('executor_process_resident_memory_bytes{%s}' % s, '{{executor_id}} {{kind}}'),
              g.target('executor_container_memory_limit_bytes{%s}' % s, '{{executor_id}} limit'),
            ], 'bytes', stack=true, min=0) + g.limitLine('.* limit'),
            g.timeseries('Container working set vs limit', 'Working set (usage minus inactive page cache) is what the OOM killer compares with the limit.', [
              g.target('executor_container_memory_working_set_bytes{%s}' % s, '{{executor_id}} working set'),
              g.target('executor_container_memory_usage_bytes{%s}' % s, '{{executor_id}} usage'),
              g.target('executor_container_memory_limit_bytes{%s}' % s, '{{executor_id}} limit'),
            ], 'bytes', min=0) + g.limitLine('.* limit'),
          ],
          [
            g.timeseries('OOM kills', 'Kernel OOM kills of these executors, by cause: heap (raise the heap, or lower it below the limit), native (raise spark.executor.memoryOverhead), node (the machine ran out); a native kill with the region that grew most (docs/runbook.md#native-memory-regions).', [
              g.target('sum by(executor_id, cause, region) (increase(executor_oom_kills_total{%s}[$__rate_interval]))' % s, '{{executor_id}} {{cause}} {{region}}'),
            ], 'short', min=0) { height: 6 },
            g.table('How it ended', 'The reason each of these executors ended in the time range, as the exits collector judged it (docs/exits.md): oom_killed, yarn_pmem_limit, yarn_vmem_limit, yarn_elastic_oom (YARN NodeManager kills, docs/yarn.md), heap_exhausted, interrupted, killed, exited or unknown; region: for a native kill or a YARN pmem kill, the region that grew most (docs/runbook.md#native-memory-regions). The exporter log line and status page give the advice: raise spark.executor.memoryOverhead after a YARN pmem kill, the NodeManager vmem check after a vmem kill.', [
              g.target('max by(app_id, executor_id, pid, reason, region) (max_over_time(executor_jvm_exits_total{%s}[$__range])) > 0' % s, instant=true, format='table'),
            ]) { height: 6 },
          ],
          g.row('Native memory by region'),
          [
            g.timeseries('Resident memory by region of executor $executor',
                         "What the JVM holds, by region (executor_jvm_native_memory_bytes, read from /proc/PID/smaps at least every 15 minutes), and its container's tmpfs pages (shmem: /dev/shm, a memory-backed spill directory), which the limit counts though the JVM need not map them, and its children (python: the PySpark workers), stacked against the container limit (dashed). The heap is the touched part of -Xmx. What each region is and what to do when it grows: docs/runbook.md#native-memory-regions.",
                         [
                           g.target('executor_jvm_native_memory_bytes{%s}' % s, '{{executor_id}} (pid {{pid}}) {{region}}'),
                           g.target('executor_container_memory_bytes{%s, kind="shmem"}' % s, '{{executor_id}} (pid {{pid}}) shmem (tmpfs)'),
                           g.target('executor_process_resident_memory_bytes{%s, kind!="jvm"}' % s, '{{executor_id}} (pid {{pid}}) {{kind}} (children)'),
                           g.target('executor_container_memory_limit_bytes{%s}' % s, '{{executor_id}} (pid {{pid}}) limit'),
                         ],
                         'bytes',
                         stack=true,
                         min=0) + g.limitLine('.* limit') { repeat: 'executor', repeatDirection: 'h', maxPerRow: 2 },
          ],
          [
            g.timeseries('Non-heap growth by region (%s)' % c.nativeRegionWindow,
                         "How much each region outside the heap, the container's tmpfs (shmem) and the PySpark workers (python) grew over the last %s (executor:jvm_native_memory_region_growth:delta%s); below zero, it shrank. The one that grows is where a native leak is; the non-heap alerts name it." % [c.nativeRegionWindow, c.nativeRegionWindow],
                         [g.target('executor:jvm_native_memory_region_growth:delta%s{%s}' % [c.nativeRegionWindow, s], '%s {{region}}' % who)],
                         'bytes'),
            g.timeseries('Container memory by kind vs limit',
                         "The JVM's container as the kernel charges it (memory.stat): anonymous memory, file pages (page cache, mapped files; reclaimable unless dirty), shmem (tmpfs pages, part of file: they count against the limit and cannot be reclaimed without swap) and kernel memory (cgroup v2), against the limit (dashed). Lines, not a stack: shmem is counted in file too.",
                         [
                           g.target('executor_container_memory_bytes{%s}' % s, '{{executor_id}} (pid {{pid}}) {{kind}}'),
                           g.target('executor_container_memory_limit_bytes{%s}' % s, '{{executor_id}} (pid {{pid}}) limit'),
                         ],
                         'bytes',
                         min=0) + g.limitLine('.* limit'),
          ],
          [
            g.table('Fastest-growing non-heap region',
                    'Per JVM, the region (or shmem, python) that grew most over the last %s (executor:jvm_native_memory_fastest_region_growth:delta%s), and by how many bytes: docs/runbook.md#native-memory-regions says what to do about each.' % [c.nativeRegionWindow, c.nativeRegionWindow],
                    [g.target('executor:jvm_native_memory_fastest_region_growth:delta%s{%s}' % [c.nativeRegionWindow, s], instant=true, format='table')],
                    'bytes') { height: 5 },
          ],
        ]),
      },
  },
}
