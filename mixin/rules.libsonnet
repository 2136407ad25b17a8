// Recording rules, for dashboards and ad-hoc queries (the alerts inline
// what they need; see expressions.libsonnet). Naming follows
// level:metric:operations, where the level says which labels a series
// keeps:
//   executor            one JVM: the identity labels pid, role, app_id, executor_id
//   executor_instance   the same, plus the instance labels of executor_instance_info
//   executor_node       one machine (instance)
//   app                 one Spark application (app_id)
//   instance_type       provider, instance_type, lifecycle
// No rule reads another recording rule: groups are evaluated independently
// (the right-sizing group, rightsizing.libsonnet, reads its own, in order).
{
  local c = $._config,
  local e = $._expr,
  local sel = c.selector,
  local instanceLabels = std.join(', ', c.instanceLabels),
  // Aggregations keep job, so that dashboards can select by it.
  local instanceTypeLabels = '%s, job, provider, instance_type, lifecycle' % c.clusterLabel,
  local appLabels = '%s, job, app_id' % c.clusterLabel,

  // The instance labels of one machine, deduplicated so that a join never
  // fails on two info series of one instance (e.g. the second a label
  // changed, before the old series is marked stale).
  local info(labels) = 'max by(%(cluster)s, job, instance, %(labels)s) (executor_instance_info{%(sel)s})' % {
    cluster: c.clusterLabel,
    labels: labels,
    sel: sel,
  },

  // withInstanceInfo copies the labels (all instance labels by default)
  // onto every series of expr.
  local withInstanceInfo(expr, labels=instanceLabels) = |||
    %(expr)s
    * on(%(cluster)s, instance) group_left(%(labels)s)
      %(info)s
  ||| % { expr: std.stripChars(expr, '\n'), cluster: c.clusterLabel, labels: labels, info: info(labels) },

  local perExecutor = {
    'executor:jvm_heap_used:ratio': |||
      %(used)s
      /
      (%(max)s > 0)
    ||| % { used: e.heapUsed, max: e.heapMax },
    'executor:jvm_gc_time:ratio': |||
      sum without(gc) (rate(executor_jvm_gc_collection_seconds_total{%(sel)s}[%(rate)s]))
    ||| % { sel: sel, rate: c.rateInterval },
    'executor:container_memory_working_set:ratio': |||
      executor_container_memory_working_set_bytes{%(sel)s}
      /
      %(limit)s
    ||| % { sel: sel, limit: e.limit },
    // Everything the executor holds that is not heap (expressions.libsonnet).
    'executor:memory_nonheap:bytes': e.nonHeap + '\n',
    // Heap max + non-heap: what the container holds once the heap is full.
    'executor:memory_demand:bytes': e.demand + '\n',
    // Container limit - heap max: the room for the non-heap memory.
    'executor:memory_overhead_budget:bytes': e.budget + '\n',
    'executor:memory_overhead_budget_used:ratio': |||
      %(nonHeap)s
      /
      (%(budget)s > 0)
    ||| % { nonHeap: e.nonHeap, budget: e.budget },
  },

  local recordOrder = [
    'executor:jvm_heap_used:ratio',
    'executor:jvm_gc_time:ratio',
    'executor:container_memory_working_set:ratio',
    'executor:memory_nonheap:bytes',
    'executor:memory_demand:bytes',
    'executor:memory_overhead_budget:bytes',
    'executor:memory_overhead_budget_used:ratio',
  ],

  prometheusRules+:: {
    groups+: [
      {
        name: 'executor_exporter.rules',
        rules: [
          { record: r, expr: perExecutor[r] }
          for r in recordOrder
        ] + [
          {
            // How much the heaps of the node's JVMs may still grow.
            record: 'executor_node:jvm_heap_room:bytes',
            expr: 'sum by(%s, job, instance) (%s)\n' % [c.clusterLabel, e.heapRoom],
          },
          {
            // How much each region of the non-heap memory grew over the
            // window (the container's tmpfs pages as region shmem, the
            // PySpark workers as python; expressions.libsonnet).
            record: 'executor:jvm_native_memory_region_growth:delta%s' % c.nativeRegionWindow,
            expr: e.nativeRegionGrowth + '\n',
          },
          {
            // The one of them that grew most, per JVM: where a native leak
            // is (docs/runbook.md#native-memory-regions).
            record: 'executor:jvm_native_memory_fastest_region_growth:delta%s' % c.nativeRegionWindow,
            expr: e.nativeRegionFastest + '\n',
          },
        ],
      },
      {
        name: 'executor_exporter.instance.rules',
        rules: [
          {
            record: std.strReplace(r, 'executor:', 'executor_instance:'),
            expr: withInstanceInfo('(\n' + perExecutor[r] + ')'),
          }
          for r in recordOrder
        ] + [
          {
            record: 'executor_node:memory_utilisation:ratio',
            expr: withInstanceInfo(|||
              (1 - executor_node_memory_available_bytes{%(sel)s} / executor_node_memory_total_bytes{%(sel)s})
            ||| % { sel: sel }),
          },
          {
            record: 'executor_node:memory_available:bytes',
            expr: withInstanceInfo('executor_node_memory_available_bytes{%s}' % sel),
          },
          {
            record: 'instance_type:executor_nodes:count',
            expr: 'count by(%s) (%s)\n' % [instanceTypeLabels, info('provider, instance_type, lifecycle')],
          },
          {
            // region: the non-heap region that grew most before a native
            // kill (empty for other causes); executor_instance_info's own
            // region label (the cloud's) is not copied.
            record: 'instance_type:executor_oom_kills:increase1h',
            expr: |||
              sum by(%(labels)s, cause, region) (
                %(joined)s
              )
            ||| % {
              labels: instanceTypeLabels,
              joined: std.strReplace(withInstanceInfo('increase(executor_oom_kills_total{%s}[1h])' % sel, 'provider, instance_type, lifecycle'), '\n', '\n  '),
            },
          },
          {
            // How executors end, per machine kind: are spot nodes losing
            // them to interruptions, one instance type to its heap?
            record: 'instance_type:executor_jvm_exits:increase1h',
            expr: |||
              sum by(%(labels)s, reason, region) (
                %(joined)s
              )
            ||| % {
              labels: instanceTypeLabels,
              joined: std.strReplace(withInstanceInfo('increase(executor_jvm_exits_total{%s}[1h])' % sel, 'provider, instance_type, lifecycle'), '\n', '\n  '),
            },
          },
          {
            record: 'instance_type:executor_node_oom_kills:increase1h',
            expr: |||
              sum by(%(labels)s) (
                %(joined)s
              )
            ||| % {
              labels: instanceTypeLabels,
              joined: std.strReplace(withInstanceInfo('increase(executor_node_oom_kills_total{%s}[1h])' % sel, 'provider, instance_type, lifecycle'), '\n', '\n  '),
            },
          },
        ],
      },
      {
        name: 'executor_exporter.app.rules',
        rules: [
          {
            record: 'app:executor_jvm_heap_used:bytes',
            expr: 'sum by(%s) (executor_jvm_memory_used_bytes{%s, area="heap", app_id!=""})\n' % [appLabels, sel],
          },
          {
            record: 'app:executor_process_resident_memory:bytes',
            expr: 'sum by(%s, kind) (executor_process_resident_memory_bytes{%s, app_id!=""})\n' % [appLabels, sel],
          },
          {
            record: 'app:executor_memory_nonheap:bytes',
            expr: 'sum by(%s) (%s)\n' % [appLabels, e.of(sel + ', app_id!=""').nonHeap],
          },
          {
            record: 'app:executor_jvm_gc_time:ratio',
            expr: 'max by(%s) (sum without(gc) (rate(executor_jvm_gc_collection_seconds_total{%s, app_id!=""}[%s])))\n' % [appLabels, sel, c.rateInterval],
          },
          {
            record: 'app:executor_jvms:count',
            expr: 'count by(%s, role) (executor_jvm_info{%s, app_id!=""})\n' % [appLabels, sel],
          },
          {
            record: 'app:executor_jvm_exits:increase1h',
            expr: 'sum by(%s, reason, region) (increase(executor_jvm_exits_total{%s, app_id!=""}[1h]))\n' % [appLabels, sel],
          },
          {
            record: 'app:executor_oom_kills:increase1h',
            expr: 'sum by(%s, cause, region) (increase(executor_oom_kills_total{%s, app_id!=""}[1h]))\n' % [appLabels, sel],
          },
        ],
      },
    ],
  },
}
