// Recording rules that the dashboards read. Naming follows
// level:metric:operations, where the level says which labels a series
// keeps:
//   executor            one JVM: the identity labels pid, role, app_id, executor_id
//   executor_node       one machine (instance)
//   app                 one Spark application (app_id)
//   instance_type       provider, instance_type, lifecycle
// A group evaluates its rules in order, at one timestamp, each seeing this
// evaluation's results of the ones before it; a recording rule reads
// recorded series of its own group only, never another group's (groups are
// evaluated independently: it would see them one evaluation late, or not
// at all, as the groups happen to run).
// The fleet panels read instance-type rules: a few series per instance
// type over their range, not one per executor that ever ran. Those are
// made from the raw series rather than from the per-executor rules, so
// that `promtool tsdb create-blocks-from rules`, which evaluates each rule
// alone, backfills them too. The per-executor memory quantities
// the memory alerts read are recorded in executor_exporter.memory.rules
// (alerts.libsonnet), which the alerts read as of its last evaluation.
{
  local c = $._config,
  local e = $._expr,
  local sel = c.selector,
  local instanceLabels = std.join(', ', c.instanceLabels),
  local typeLabels = 'provider, instance_type, lifecycle',
  // Aggregations keep job, so that dashboards can select by it.
  local instanceTypeLabels = '%s, job, %s' % [c.clusterLabel, typeLabels],
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

  // byInstanceType(op, by, expr) aggregates expr's series per instance
  // type (and the extra labels by), joined with the machine's labels.
  local byInstanceType(op, by, expr) = |||
    %(op)s by(%(labels)s) (
      %(joined)s
    )
  ||| % {
    op: op,
    labels: std.join(', ', [instanceTypeLabels] + by),
    joined: std.strReplace(std.stripChars(withInstanceInfo(expr, typeLabels), '\n'), '\n', '\n  '),
  },

  // expr in parentheses, indented, for an operand of a join.
  local paren(expr) = '(\n  %s\n)' % std.strReplace(std.stripChars(expr, '\n'), '\n', '\n  '),
  local heapUsedRatio = |||
    %(used)s
    /
    (%(max)s > 0)
  ||| % { used: e.heapUsed, max: e.heapMax },
  local gcTimeRatio = |||
    sum without(gc) (rate(executor_jvm_gc_collection_seconds_total{%(sel)s}[%(rate)s]))
  ||| % { sel: sel, rate: c.rateInterval },
  local growth = 'executor:jvm_native_memory_region_growth:delta%s' % c.nativeRegionWindow,

  prometheusRules+:: {
    groups+: [
      {
        name: 'executor_exporter.rules',
        rules: [
          { record: 'executor:jvm_heap_used:ratio', expr: heapUsedRatio },
          { record: 'executor:jvm_gc_time:ratio', expr: gcTimeRatio },
          {
            // How much the heaps of the node's JVMs may still grow.
            record: 'executor_node:jvm_heap_room:bytes',
            expr: 'sum by(%s, job, instance) (%s)\n' % [c.clusterLabel, e.heapRoom],
          },
          {
            record: 'instance_type:executor_jvms:count',
            expr: byInstanceType('count', ['role'], 'executor_jvm_info{%s}' % sel),
          },
          {
            // The fullest heap.
            record: 'instance_type:executor_jvm_heap_used:max_ratio',
            expr: byInstanceType('max', ['role'], paren(heapUsedRatio)),
          },
          {
            // The container closest to its limit.
            record: 'instance_type:executor_container_memory_working_set:max_ratio',
            expr: byInstanceType('max', [], paren('%s\n/\n%s' % [e.workingSet, e.limit])),
          },
        ],
      },
      {
        // A growth over nativeRegionWindow moves little in a minute, and
        // the delta over every region of every JVM is the costliest read
        // of the per-executor rules: evaluated every minute, on its own.
        name: 'executor_exporter.native.rules',
        interval: c.nativeRegionInterval,
        rules: [
          {
            // How much each region of the non-heap memory grew over the
            // window (the container's tmpfs pages as region shmem, the
            // PySpark workers as python; expressions.libsonnet).
            record: growth,
            expr: e.nativeRegionGrowth + '\n',
          },
          {
            // The one of them that grew most, per JVM: where a native leak
            // is (docs/runbook.md#native-memory-regions). It is
            // e.nativeRegionFastest over the growth just recorded, the
            // group's costliest read, rather than a second reading of it;
            // a rule backfill must run twice for it.
            record: 'executor:jvm_native_memory_fastest_region_growth:delta%s' % c.nativeRegionWindow,
            expr: 'topk by(%s, job, instance, pid) (1, %s{%s})\n' % [c.clusterLabel, growth, sel],
          },
        ],
      },
      {
        name: 'executor_exporter.instance.rules',
        rules: [
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
            expr: 'count by(%s, node_pool) (%s)\n' % [instanceTypeLabels, info(typeLabels + ', node_pool')],
          },
          {
            // Machines with a pending interruption notice, by event.
            record: 'instance_type:executor_instance_interruption_pending:sum',
            expr: byInstanceType('sum', ['event'], 'executor_instance_interruption_pending{%s}' % sel),
          },
          {
            // region: the non-heap region that grew most before a native
            // kill (empty for other causes); executor_instance_info's own
            // region label (the cloud's) is not copied.
            record: 'instance_type:executor_oom_kills:increase1h',
            expr: byInstanceType('sum', ['cause', 'region'], 'increase(executor_oom_kills_total{%s}[1h])' % sel),
          },
          {
            // How executors end, per machine kind: are spot nodes losing
            // them to interruptions, one instance type to its heap?
            record: 'instance_type:executor_jvm_exits:increase1h',
            expr: byInstanceType('sum', ['reason', 'region'], 'increase(executor_jvm_exits_total{%s}[1h])' % sel),
          },
          {
            record: 'instance_type:executor_node_oom_kills:increase1h',
            expr: byInstanceType('sum', [], 'increase(executor_node_oom_kills_total{%s}[1h])' % sel),
          },
        ],
      },
      {
        // Per application, what the fleet dashboard reads; other
        // per-application questions are ad-hoc sums of the raw series, not
        // rules every server evaluates whether anyone asks.
        name: 'executor_exporter.app.rules',
        rules: [
          {
            // The JVMs and their children together, one series per
            // application: the fleet's top-10 panel reads it over its
            // whole range, for every application that ran.
            record: 'app:executor_process_resident_memory:bytes',
            expr: 'sum by(%s) (executor_process_resident_memory_bytes{%s, app_id!=""})\n' % [appLabels, sel],
          },
        ],
      },
    ],
  },
}
