// Recording rules. Naming follows level:metric:operations, where the level
// says which labels a series keeps:
//   executor            one JVM: the identity labels pid, role, app_id, executor_id
//   executor_instance   the same, plus the instance labels of executor_instance_info
//   executor_node       one machine (instance), plus the instance labels
//   app                 one Spark application (app_id)
//   instance_type       provider, instance_type, lifecycle
{
  local c = $._config,
  local sel = c.selector,
  local instanceLabels = std.join(', ', c.instanceLabels),

  // The instance labels of one machine, deduplicated so that a join never
  // fails on two info series of one instance (e.g. the second a label
  // changed, before the old series is marked stale).
  local info = 'max by(%(cluster)s, instance, %(labels)s) (executor_instance_info{%(sel)s})' % {
    cluster: c.clusterLabel,
    labels: instanceLabels,
    sel: sel,
  },

  // withInstanceInfo copies the instance labels onto every series of expr.
  local withInstanceInfo(expr) = |||
    %(expr)s
    * on(%(cluster)s, instance) group_left(%(labels)s)
      %(info)s
  ||| % { expr: std.stripChars(expr, '\n'), cluster: c.clusterLabel, labels: instanceLabels, info: info },

  local perExecutor = {
    'executor:jvm_heap_used:ratio': |||
      sum without(area) (executor_jvm_memory_used_bytes{%(sel)s, area="heap"})
      /
      sum without(area) (executor_jvm_memory_max_bytes{%(sel)s, area="heap"} > 0)
    ||| % { sel: sel },
    'executor:jvm_gc_time:ratio': |||
      sum without(gc) (rate(executor_jvm_gc_collection_seconds_total{%(sel)s}[%(rate)s]))
    ||| % { sel: sel, rate: c.rateInterval },
    'executor:container_memory_working_set:ratio': |||
      executor_container_memory_working_set_bytes{%(sel)s}
      /
      (executor_container_memory_limit_bytes{%(sel)s} > 0)
    ||| % { sel: sel },
    // What the JVM process holds beyond what the JVM accounts for as heap
    // and non-heap: direct buffers, thread stacks, malloc arenas, JNI
    // libraries, the code cache's slack. This is what
    // spark.executor.memoryOverhead has to cover (with the Python workers).
    'executor:jvm_native_memory:bytes': |||
      clamp_min(
        sum without(kind) (executor_process_resident_memory_bytes{%(sel)s, kind="jvm"})
        -
        sum without(area) (executor_jvm_memory_committed_bytes{%(sel)s, area=~"heap|nonheap"}),
        0
      )
    ||| % { sel: sel },
  },

  local recordOrder = [
    'executor:jvm_heap_used:ratio',
    'executor:jvm_gc_time:ratio',
    'executor:container_memory_working_set:ratio',
    'executor:jvm_native_memory:bytes',
  ],

  local appLabels = '%s, app_id' % c.clusterLabel,
  local instanceTypeLabels = '%s, provider, instance_type, lifecycle' % c.clusterLabel,

  prometheusRules+:: {
    groups+: [
      {
        name: 'executor_exporter.rules',
        rules: [
          { record: r, expr: perExecutor[r] }
          for r in recordOrder
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
            expr: 'count by(%s) (%s)\n' % [instanceTypeLabels, info],
          },
          {
            record: 'instance_type:executor_oom_kills:increase1h',
            expr: |||
              sum by(%(labels)s, cause) (
                increase(executor_oom_kills_total{%(sel)s}[1h])
                * on(%(cluster)s, instance) group_left(%(instanceLabels)s)
                  %(info)s
              )
            ||| % { labels: instanceTypeLabels, sel: sel, cluster: c.clusterLabel, instanceLabels: instanceLabels, info: info },
          },
          {
            record: 'instance_type:executor_node_oom_kills:increase1h',
            expr: |||
              sum by(%(labels)s) (
                increase(executor_node_oom_kills_total{%(sel)s}[1h])
                * on(%(cluster)s, instance) group_left(%(instanceLabels)s)
                  %(info)s
              )
            ||| % { labels: instanceTypeLabels, sel: sel, cluster: c.clusterLabel, instanceLabels: instanceLabels, info: info },
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
            record: 'app:executor_jvm_native_memory:bytes',
            expr: 'sum by(%s) (executor:jvm_native_memory:bytes{%s, app_id!=""})\n' % [appLabels, sel],
          },
          {
            record: 'app:executor_jvm_gc_time:ratio',
            expr: 'max by(%s) (executor:jvm_gc_time:ratio{%s, app_id!=""})\n' % [appLabels, sel],
          },
          {
            record: 'app:executor_jvms:count',
            expr: 'count by(%s, role) (executor_jvm_info{%s, app_id!=""})\n' % [appLabels, sel],
          },
          {
            record: 'app:executor_oom_kills:increase1h',
            expr: 'sum by(%s, cause) (increase(executor_oom_kills_total{%s, app_id!=""}[1h]))\n' % [appLabels, sel],
          },
        ],
      },
    ],
  },
}
