// Right-sizing: per application name and instance type, the Spark memory
// settings the executors' own peaks and kills say would have fitted
// (docs/runbook.md#right-sizing explains each figure). Unlike the other
// groups, each rule here reads the ones before it: a group evaluates its
// rules in order, each seeing this evaluation's results of the earlier.
//
// Levels, by the labels a series keeps:
//   executor   one executor JVM, with app_name and instance_type
//   app_run    one run of an application (app_id)
//   app_name   one application name on one instance type
// app_name is the Spark application's name (_config.appNameLabel on
// executor_jvm_info); a JVM without it is its own application, named by
// its app_id.
{
  local c = $._config,
  local r = c.rightsizing,
  local e = $._expr,
  local sel = c.selector,
  local cluster = c.clusterLabel,
  local nameLabel = c.appNameLabel,
  local app = '%s, job, app_name, instance_type' % cluster,
  local run = app + ', app_id',
  local executorSel = sel + ', role="executor"',

  local settingMemory = 'spark.executor.memory',
  local settingOverhead = 'spark.executor.memoryOverhead',
  local settingPython = 'spark.executor.pyspark.memory',

  local withSetting(expr, setting) = 'label_replace(%s, "setting", "%s", "", "")' % [expr, setting],
  local roundUp(expr) = 'ceil((%s) / %d) * %d' % [expr, r.roundBytes, r.roundBytes],
  local roundDown(expr) = 'floor((%s) / %d) * %d' % [expr, r.roundBytes, r.roundBytes],
  // The smaller of a and b, or a where there is no b.
  local smaller(a, b) = '(%(a)s < %(b)s or %(b)s or %(a)s)' % { a: a, b: b },

  // The application name and the instance type of an executor's series.
  // The names are looked up over the exits' retention: an ended
  // executor's peaks outlive its executor_jvm_info.
  // A name given (on YARN, the ResourceManager's, which may come a scrape
  // after the executor) wins over the application id that stood for it
  // until then: app:executor_app_name:info is 2 for a name, 1 for the id.
  local named(expr) = |||
    %(expr)s
    * on(%(cluster)s, job, app_id) group_left(app_name)
      (topk by(%(cluster)s, job, app_id) (1, max by(%(cluster)s, job, app_id, app_name) (last_over_time(app:executor_app_name:info[1h]))) ^ 0)
    * on(%(cluster)s, instance) group_left(instance_type)
      max by(%(cluster)s, job, instance, instance_type) (executor_instance_info{%(sel)s})
  ||| % { expr: expr, cluster: cluster, sel: sel },

  local peak(kind) = 'max without(kind) (app_name:executor_memory_peak:bytes{kind="%s"})' % kind,
  local recommended(setting) = 'max without(setting) (app_name:executor_memory_recommended:bytes{setting="%s"})' % setting,
  // After a kill of the matching cause: the figure raised by the bump.
  local bumped(expr) = |||
    (%(x)s * %(ratio)g > %(x)s + %(bytes)d or %(x)s + %(bytes)d)
  ||| % { x: expr, ratio: r.killBumpRatio, bytes: r.killBumpBytes },
  // Only from enough executors and runs.
  local enough(expr) = |||
    %(expr)s
    and on(%(app)s) (app_name:executors:count >= %(executors)d)
    and on(%(app)s) (app_name:executor_runs:count >= %(runs)d)
  ||| % { expr: expr, app: app, executors: r.minExecutors, runs: r.minRuns },

  // A kill counts for the setting that would have prevented it; node and
  // spot losses for none. The heap's own end (exit 52) asks for heap; a
  // container's OOM kill for what is beside the heap, whichever filled
  // the container: Spark sizes it as the heap plus the overhead, so a heap
  // at its max leaves the overhead the rest.
  local kills = std.join('\n  or ', [
    withSetting('executor_jvm_exits_total{%s, reason="heap_exhausted"}' % executorSel, settingMemory),
    withSetting('executor_oom_kills_total{%s, cause=~"heap|native", region!="python"}' % executorSel, settingOverhead),
    withSetting('executor_oom_kills_total{%s, cause="native", region="python"}' % executorSel, settingPython),
    // YARN's NodeManager kills at the allocation as the kernel at a limit:
    // overhead (or the Python workers' memory) after a pmem or elastic
    // kill; a vmem kill is the NodeManager's configuration, no setting.
    withSetting('executor_jvm_exits_total{%s, reason=~"yarn_pmem_limit|yarn_elastic_oom", region!="python"}' % executorSel, settingOverhead),
    withSetting('executor_jvm_exits_total{%s, reason=~"yarn_pmem_limit|yarn_elastic_oom", region="python"}' % executorSel, settingPython),
    withSetting('executor_jvm_exits_total{%s, reason="yarn_vmem_limit"}' % executorSel, 'none'),
    withSetting('executor_oom_kills_total{%s, cause="node"}' % executorSel, 'none'),
    withSetting('executor_jvm_exits_total{%s, reason="interrupted"}' % executorSel, 'none'),
  ]),

  local overTheWindow(fn, expr) = '%s(%s[%s])' % [fn, expr, r.window],

  local rules = [
    {
      // 2 with the application's name, 1 with its id for want of one.
      record: 'app:executor_app_name:info',
      expr: |||
        max by(%(cluster)s, job, app_id, app_name) (
          2 * label_replace(executor_jvm_info{%(sel)s, app_id!="", %(name)s!=""}, "app_name", "$1", "%(name)s", "(.*)")
          or
          label_replace(executor_jvm_info{%(sel)s, app_id!="", %(name)s=""}, "app_name", "$1", "app_id", "(.*)")
        )
      ||| % { cluster: cluster, sel: sel, name: nameLabel },
    },
    {
      record: 'executor:jvm_memory_peak:bytes',
      expr: named(|||
        (
          label_replace(executor_container_memory_peak_bytes{%(s)s}, "kind", "container", "", "")
          or label_replace(executor_process_resident_memory_peak_bytes{%(s)s}, "kind", "resident", "", "")
          or executor_jvm_memory_peak_bytes{%(s)s}
        )
      ||| % { s: executorSel }),
    },
    {
      record: 'executor:jvm_memory_setting:bytes',
      expr: named(|||
        (
          %(memory)s
          or %(overhead)s
        )
      ||| % {
        memory: withSetting(e.of(executorSel).heapMax, settingMemory),
        overhead: withSetting(e.of(executorSel).budget, settingOverhead),
      }),
    },
    {
      record: 'app_run:executor_memory_peak:bytes',
      expr: 'max by(%s, kind) (executor:jvm_memory_peak:bytes)\n' % run,
    },
    {
      record: 'app_run:executor_memory_setting:bytes',
      expr: 'max by(%s, setting) (executor:jvm_memory_setting:bytes)\n' % run,
    },
    {
      record: 'app_run:executors:count',
      expr: 'count by(%s) (executor:jvm_memory_peak:bytes{kind="resident"})\n' % run,
    },
    {
      record: 'app_run:executor_kills:count',
      expr: 'sum by(%s, setting) (\n  %s\n)\n' % [run, std.strReplace(named('sum by(%s, job, instance, app_id, setting) (\n  %s\n)' % [cluster, kills]), '\n', '\n  ')],
    },
    {
      record: 'app_name:executor_memory_peak:bytes',
      expr: 'quantile by(%s, kind) (%g, %s)\n' % [app, r.quantile, overTheWindow('max_over_time', 'app_run:executor_memory_peak:bytes')],
    },
    {
      record: 'app_name:executor_runs:count',
      expr: 'count by(%s) (%s)\n' % [app, overTheWindow('max_over_time', 'app_run:executors:count')],
    },
    {
      record: 'app_name:executors:count',
      expr: 'sum by(%s) (%s)\n' % [app, overTheWindow('max_over_time', 'app_run:executors:count')],
    },
    {
      // The settings of the runs going on; the last seen when none is.
      record: 'app_name:executor_memory_setting:bytes',
      expr: |||
        max by(%(app)s, setting) (app_run:executor_memory_setting:bytes)
        or
        max by(%(app)s, setting) (%(last)s)
      ||| % { app: app, last: overTheWindow('last_over_time', 'app_run:executor_memory_setting:bytes') },
    },
    {
      record: 'app_name:executor_kills:count',
      expr: 'sum by(%s, setting) (%s)\n' % [app, overTheWindow('max_over_time', 'app_run:executor_kills:count')],
    },
    {
      // Executors running now: the executor-hours behind a saving.
      record: 'app_name:executor_jvms:count',
      expr: 'count by(%s) (executor:jvm_memory_setting:bytes{setting="%s"})\n' % [app, settingMemory],
    },
    {
      // What the peaks say each setting needs.
      record: 'app_name:executor_memory_need:bytes',
      expr: |||
        %(memory)s
        or
        %(overhead)s
        or
        %(python)s
      ||| % {
        memory: withSetting('clamp_min(%s, %d)' % [roundUp('%s / %g' % [peak('heap_live'), r.heapLiveTarget]), r.memoryFloorBytes], settingMemory),
        overhead: withSetting('clamp_min(%s, %d)' % [roundUp('%s * %g' % [peak('nonheap'), 1 + r.margin]), r.overheadFloorBytes], settingOverhead),
        python: withSetting(roundUp('%s * %g' % [peak('python'), 1 + r.margin]), settingPython),
      },
    },
    {
      // What kills of the matching cause in the window ask for: the
      // current setting bumped (the Python workers' peak, whose setting
      // the exporter cannot see).
      record: 'app_name:executor_memory_after_kills:bytes',
      expr: |||
        (
          %(settings)s
          or
          %(python)s
        )
        and on(%(app)s, setting) (app_name:executor_kills:count > 0)
      ||| % {
        app: app,
        settings: roundUp(bumped('app_name:executor_memory_setting:bytes')),
        python: roundUp(bumped(withSetting(peak('python'), settingPython))),
      },
    },
    {
      // The smallest node of each instance type.
      record: 'instance_type:executor_node_memory_total:bytes',
      expr: |||
        min by(%(cluster)s, job, instance_type) (
          executor_node_memory_total_bytes{%(sel)s}
          * on(%(cluster)s, instance) group_left(instance_type)
            max by(%(cluster)s, job, instance, instance_type) (executor_instance_info{%(sel)s})
        )
      ||| % { cluster: cluster, sel: sel },
    },
  ] + [
    {
      record: 'app_name:executor_memory_recommended:bytes',
      labels: { setting: setting },
      expr: enough(|||
        (
          app_name:executor_memory_after_kills:bytes{setting="%(setting)s"} > app_name:executor_memory_need:bytes
          or app_name:executor_memory_need:bytes{setting="%(setting)s"}
        )
      ||| % { setting: setting }),
    }
    for setting in [settingOverhead, settingPython]
  ] + [
    {
      // The heap gives way when the three settings do not fit the node.
      record: 'app_name:executor_memory_recommended:bytes',
      labels: { setting: settingMemory },
      expr: enough(smaller(
        '(app_name:executor_memory_after_kills:bytes{setting="%(memory)s"} > app_name:executor_memory_need:bytes or app_name:executor_memory_need:bytes{setting="%(memory)s"})' % { memory: settingMemory },
        withSetting(roundDown(|||
          instance_type:executor_node_memory_total:bytes * %(fraction)g
          - on(%(cluster)s, job, instance_type) group_right %(overhead)s
          - (%(python)s or %(overhead)s * 0)
        ||| % {
          cluster: cluster,
          fraction: r.nodeFraction,
          overhead: recommended(settingOverhead),
          python: recommended(settingPython),
        }), settingMemory),
      )),
    },
  ],

  prometheusRules+:: {
    groups+: [
      {
        name: 'executor_exporter.rightsizing.rules',
        interval: r.interval,
        rules: rules,
      },
    ],
  },
}
