// Node: one machine's memory (meminfo, PSI, OOM kills) and the JVMs on it.
local g = import '../lib/dashboard.libsonnet';
local common = import 'common.libsonnet';

{
  local c = $._config,
  local n = '%s, %s, instance=~"$instance"' % [common.job, common.cluster(c)],
  local who = '{{app_id}} {{role}} {{executor_id}} (pid {{pid}})',

  grafanaDashboards+:: {
    'executor-node.json':
      common.base(c,
                  'Node',
                  'node',
                  'One machine: its memory, memory pressure and OOM kills, and every JVM on it.') {
        templating: {
          list: [
            g.datasourceVariable,
            common.jobVariable(c),
            common.clusterVariable(c),
            g.queryVariable('instance', 'Instance', 'executor_node_memory_total_bytes{%s, %s}' % [common.job, common.cluster(c)], 'instance', multi=false, includeAll=false),
          ],
        },
        panels: g.layout([
          g.row('Machine'),
          [
            g.table('Instance', 'Provider, instance type, lifecycle, zone and node of this machine.', [
              g.target('executor_instance_info{%s}' % n, instant=true, format='table'),
            ]) { height: 5 },
          ],
          [
            g.stat('Memory available', 'MemAvailable.', [g.target('executor_node_memory_available_bytes{%s}' % n)], 'bytes'),
            g.stat('Memory used', '1 - MemAvailable / MemTotal.', [
              g.target('1 - executor_node_memory_available_bytes{%(n)s} / executor_node_memory_total_bytes{%(n)s}' % { n: n }),
            ], 'percentunit', [[0.8, 'orange'], [0.9, 'red']]),
            g.stat('JVMs', 'JVMs the exporter tracks on this machine.', [g.target('executor_jvm_processes{%s}' % n)]),
            g.stat('OOM kills', 'Kernel OOM kills on this machine in the dashboard time range.', [
              g.target('increase(executor_node_oom_kills_total{%s}[$__range])' % n),
            ], 'short', [[1, 'red']]),
          ],
          g.row('Memory'),
          [
            g.timeseries('Memory', 'From /proc/meminfo.', [
              g.target('executor_node_memory_total_bytes{%s}' % n, 'total'),
              g.target('executor_node_memory_available_bytes{%s}' % n, 'available'),
              g.target('executor_node_memory_free_bytes{%s}' % n, 'free'),
              g.target('executor_node_memory_cached_bytes{%s}' % n, 'cached'),
              g.target('executor_node_memory_buffers_bytes{%s}' % n, 'buffers'),
              g.target('executor_node_memory_anon_bytes{%s}' % n, 'anonymous'),
              g.target('executor_node_memory_slab_unreclaimable_bytes{%s}' % n, 'slab unreclaimable'),
            ], 'bytes', min=0),
            g.timeseries('Heap room vs available memory', 'How much the heaps of the JVMs here may still grow (heap max - committed, summed) against the memory the node has available: above it, the node runs out when the heaps fill (ExecutorNodeMemoryOvercommitted).', [
              g.target('executor_node:jvm_heap_room:bytes{%s}' % n, 'heap room'),
              g.target('executor_node_memory_available_bytes{%s}' % n, 'available'),
            ], 'bytes', min=0),
            g.timeseries('Memory pressure (PSI)', 'Share of time some (or all, full) tasks stalled waiting for memory.', [
              g.target('rate(executor_node_memory_pressure_stall_seconds_total{%s}[$__rate_interval])' % n, '{{kind}}'),
            ], 'percentunit', min=0),
          ],
          [
            g.timeseries('OOM kills', 'Kernel OOM kills on this machine (/proc/vmstat oom_kill).', [
              g.target('increase(executor_node_oom_kills_total{%s}[$__rate_interval])' % n, 'kills'),
            ], 'short', min=0),
            g.timeseries('Resident memory per JVM vs node memory', 'Each JVM with its Python workers and other children, stacked against MemTotal (dashed).', [
              g.target('sum by(pid, role, app_id, executor_id) (executor_process_resident_memory_bytes{%s})' % n, who),
              g.target('executor_node_memory_total_bytes{%s}' % n, 'MemTotal'),
            ], 'bytes', stack=true, min=0) + g.limitLine('MemTotal'),
          ],
          g.row('JVMs'),
          [
            g.table('JVMs on this node', 'Every JVM the exporter reads here.', [
              g.target('executor_jvm_info{%s}' % n, instant=true, format='table'),
            ]) { height: 7 },
          ],
          [
            g.timeseries('Heap used per JVM', 'Heap used / heap max.', [
              g.target('executor:jvm_heap_used:ratio{%s}' % n, who),
            ], 'percentunit', min=0),
            g.timeseries('Time in GC per JVM', 'Fraction of wall-clock time in garbage collection.', [
              g.target('executor:jvm_gc_time:ratio{%s}' % n, who),
            ], 'percentunit', min=0),
          ],
        ]),
      },
  },
}
