// Fleet: every machine by provider, instance type and lifecycle; memory
// headroom and OOM kills per instance type; interruption notices. Answers
// "which instance types are too small for our executors?" and "do spot
// nodes OOM more?".
local g = import '../lib/dashboard.libsonnet';
local common = import 'common.libsonnet';

{
  local c = $._config,
  // Recorded series joined with executor_instance_info carry these labels.
  local f = '%s, %s, instance_type=~"$instance_type", lifecycle=~"$lifecycle"' % [common.job, common.cluster(c)],
  local nodesOfSelection = 'max by(%s, instance, instance_type, lifecycle) (executor_instance_info{%s})' % [c.clusterLabel, f],
  local nodes = 'instance_type:executor_nodes:count{%s}' % f,
  local interruptions = 'instance_type:executor_instance_interruption_pending:sum{%s}' % f,
  local byType = 'instance_type, lifecycle',
  // A native kill's region, "unknown" when the JVM had no breakdown
  // (executor_instance_info's own region label, the cloud's, is never
  // joined in).
  local regionOrUnknown(expr) = 'label_replace(%s, "region", "unknown", "region", "")' % expr,

  grafanaDashboards+:: {
    'executor-fleet.json':
      common.base(c,
                  'Fleet',
                  'fleet',
                  'Machines by provider, instance type and lifecycle: memory utilisation and headroom, OOM kills (native ones by the region that grew) and interruption notices per instance type.') {
        templating: {
          list: [
            g.datasourceVariable,
            common.jobVariable(c),
            common.clusterVariable(c),
            g.queryVariable('instance_type', 'Instance type', 'instance_type:executor_nodes:count{%s, %s}' % [common.job, common.cluster(c)], 'instance_type'),
            g.queryVariable('lifecycle', 'Lifecycle', 'instance_type:executor_nodes:count{%s, %s}' % [common.job, common.cluster(c)], 'lifecycle'),
          ],
        },
        annotations: {
          list: [
            g.annotation(
              'Interruption notices',
              'executor_instance_interruption_pending{%s} == 1 and on(%s, instance) %s' % [common.job, c.clusterLabel, nodesOfSelection],
              'Interruption: {{event}}',
              '{{instance}}',
              'orange'
            ),
          ],
        },
        panels: g.layout([
          g.row('Machines'),
          [
            g.stat('Nodes', 'Machines running executor_exporter.', [g.target('sum(%s)' % nodes)]),
            g.stat('Executors', 'Spark executors on them.', [
              g.target('sum(instance_type:executor_jvms:count{%s, role="executor"})' % f),
            ]),
            g.stat('Spot share', 'Fraction of the machines that are spot / preemptible.', [
              g.target('sum(%s) / sum(%s) or vector(0)' % [std.strReplace(nodes, '}', ', lifecycle="spot"}'), nodes]),
            ], 'percentunit'),
            g.stat('Interruptions pending', 'Machines with an announced spot interruption, preemption or scheduled event: their executors will be lost.', [
              g.target('sum(%s) or vector(0)' % interruptions),
            ], 'short', [[1, 'red']]),
          ],
          [
            g.table('Nodes by provider, instance type and lifecycle', 'How many machines of each kind.', [
              g.target('sum by(provider, instance_type, lifecycle, node_pool) (%s)' % nodes, instant=true, format='table'),
            ]) { height: 7 },
          ],
          g.row('Memory per instance type'),
          [
            g.timeseries('Node memory utilisation', 'Average share of memory in use (1 - MemAvailable / MemTotal) per instance type and lifecycle.', [
              g.target('avg by(%s) (executor_node:memory_utilisation:ratio{%s})' % [byType, f], '{{instance_type}} {{lifecycle}}'),
            ], 'percentunit', min=0, max=1),
            g.timeseries('Node headroom (tightest node)', 'MemAvailable of the fullest machine of each instance type: what the next executor could get.', [
              g.target('min by(%s) (executor_node:memory_available:bytes{%s})' % [byType, f], '{{instance_type}} {{lifecycle}}'),
            ], 'bytes', min=0),
          ],
          [
            g.timeseries('Executor heap used (max)', 'The fullest executor heap per instance type.', [
              g.target('max by(%s) (instance_type:executor_jvm_heap_used:max_ratio{%s, role="executor"})' % [byType, f], '{{instance_type}} {{lifecycle}}'),
            ], 'percentunit', min=0),
            g.timeseries('Container working set / limit (max)', 'The executor container closest to its memory limit, per instance type.', [
              g.target('max by(%s) (instance_type:executor_container_memory_working_set:max_ratio{%s})' % [byType, f], '{{instance_type}} {{lifecycle}}'),
            ], 'percentunit', min=0),
          ],
          g.row('OOM kills and interruptions'),
          [
            g.timeseries('Executor OOM kills per hour', 'Executors OOM-killed per hour by instance type, lifecycle and cause.', [
              g.target('sum by(%s, cause) (instance_type:executor_oom_kills:increase1h{%s})' % [byType, f], '{{instance_type}} {{lifecycle}} {{cause}}'),
            ], 'short', min=0),
            g.timeseries('Node OOM kills per node and hour', 'All kernel OOM kills (executors or not) per machine and hour: compare spot with on-demand of the same type.', [
              g.target('sum by(%(t)s) (instance_type:executor_node_oom_kills:increase1h{%(f)s}) / sum by(%(t)s) (instance_type:executor_nodes:count{%(f)s})' % { t: byType, f: f }, '{{instance_type}} {{lifecycle}}'),
            ], 'short', min=0),
          ],
          [
            g.timeseries('Executor exits per hour by reason', 'How the tracked JVMs ended, per hour: oom_killed, yarn_pmem_limit, yarn_vmem_limit, yarn_elastic_oom (YARN NodeManager kills), heap_exhausted, interrupted, killed, exited, unknown (docs/exits.md).', [
              g.target('sum by(reason) (instance_type:executor_jvm_exits:increase1h{%s})' % f, '{{reason}}'),
            ], 'short', min=0),
            g.timeseries('Executor exits per hour by instance type', 'The same by instance type and lifecycle: spot nodes losing executors to interruptions, one instance type losing them to its heap or to native memory.', [
              g.target('sum by(%s, reason) (instance_type:executor_jvm_exits:increase1h{%s})' % [byType, f], '{{instance_type}} {{lifecycle}} {{reason}}'),
            ], 'short', min=0),
          ],
          [
            g.timeseries('Interruption notices', 'Machines with a pending notice, by event.', [
              g.target('sum by(%s, event) (%s)' % [byType, interruptions], '{{instance_type}} {{lifecycle}} {{event}}'),
            ], 'short', min=0),
            g.timeseries('Memory per application (top 10)', 'Resident memory of the JVMs and their Python workers, per Spark application.', [
              g.target('topk(10, app:executor_process_resident_memory:bytes{%s, %s})' % [common.job, common.cluster(c)], '{{app_id}}'),
            ], 'bytes', min=0),
          ],
          g.row('Applications: memory as set and as recommended'),
          [
            g.table('Spark memory settings per application',
                    "Per application and instance type: each setting as set now (A), as the executors' peaks and kills over the last %s recommend (B), and the difference (C: negative, memory to give back). Empty until an application has enough executors and runs; the evidence: the Right-sizing dashboard (docs/runbook.md#right-sizing)." % c.rightsizing.window,
                    [
                      g.target('app_name:executor_memory_setting:bytes{%s, %s, instance_type=~"$instance_type"}' % [common.job, common.cluster(c)], instant=true, format='table'),
                      g.target('app_name:executor_memory_recommended:bytes{%s, %s, instance_type=~"$instance_type"}' % [common.job, common.cluster(c)], instant=true, format='table'),
                      g.target('app_name:executor_memory_recommended:bytes{%(s)s} - app_name:executor_memory_setting:bytes{%(s)s}' % { s: '%s, %s, instance_type=~"$instance_type"' % [common.job, common.cluster(c)] }, instant=true, format='table'),
                    ],
                    'bytes') { height: 9 },
          ],
          g.row('Native memory: which region the kills come from'),
          [
            g.timeseries('Native OOM kills per hour by region',
                         "Executors OOM-killed per hour with cause native, by the region of their non-heap memory (or the container's tmpfs, shmem, or the PySpark workers, python) that grew most since the JVM's first minute; unknown: no breakdown was read before the kill. What to do for each region: docs/runbook.md#native-memory-regions.",
                         [g.target('sum by(region) (%s)' % regionOrUnknown('instance_type:executor_oom_kills:increase1h{%s, cause="native"}' % f), '{{region}}')],
                         'short',
                         min=0),
            g.timeseries('Native OOM kills per hour by instance type and region',
                         'The same by instance type and lifecycle: one instance type losing executors to one region (too little memory per core for its thread stacks, malloc arenas per core) or all of them to the same leak.',
                         [g.target('sum by(%s, region) (%s)' % [byType, regionOrUnknown('instance_type:executor_oom_kills:increase1h{%s, cause="native"}' % f)], '{{instance_type}} {{lifecycle}} {{region}}')],
                         'short',
                         min=0),
          ],
          [
            g.table('Native OOM kills by application and region',
                    'Native OOM kills in the dashboard time range per Spark application and region, on the machines selected: an application whose kills all come from one region has a leak there (its UDFs, its libraries), not a sizing problem.',
                    [g.target('sort_desc(sum by(app_id, region) (%s * on(%s, instance) group_left() %s))' % [regionOrUnknown('increase(executor_oom_kills_total{%s, %s, cause="native"}[$__range])' % [common.job, common.cluster(c)]), c.clusterLabel, nodesOfSelection], instant=true, format='table')]),
            g.timeseries('Executor ends per hour by region',
                         'Executor ends that carry a region (executor_jvm_exits_total), per hour, by reason and region: the region that grew most before an end of native memory (oom_killed, yarn_pmem_limit).',
                         [g.target('sum by(reason, region) (instance_type:executor_jvm_exits:increase1h{%s, region!=""})' % f, '{{reason}} {{region}}')],
                         'short',
                         min=0),
          ],
        ]),
      },
  },
}
