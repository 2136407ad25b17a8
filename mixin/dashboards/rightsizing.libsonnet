// Right-sizing: per application name and instance type, the Spark memory
// settings the executors' peaks and kills say would have fitted
// (rightsizing.libsonnet), against the current ones, with the evidence.
// Answers "what should application X set?".
local g = import '../lib/dashboard.libsonnet';
local common = import 'common.libsonnet';

{
  local c = $._config,
  local r = c.rightsizing,
  local f = '%s, %s, app_name=~"$app_name", instance_type=~"$instance_type"' % [common.job, common.cluster(c)],
  // Executor-hours over the window: running executors, counted at every
  // evaluation of the rules.
  local seconds(d) = std.parseInt(d[:std.length(d) - 1]) * { s: 1, m: 60, h: 3600 }[d[std.length(d) - 1]],
  local executorHours = 'sum_over_time(app_name:executor_jvms:count{%s}[%s]) * %d / 3600' % [f, r.window, seconds(r.interval)],
  local byApp = 'app_name, instance_type',
  // The settings table's columns: one per query, named for what it holds.
  local settingsColumns = {
    transformations+: [{
      id: 'organize',
      options: {
        excludeByName: { Time: true, job: true, [c.clusterLabel]: true },
        renameByName: { 'Value #A': 'current', 'Value #B': 'recommended', 'Value #C': 'need' },
      },
    }],
  },

  grafanaDashboards+:: {
    'executor-rightsizing.json':
      common.base(c,
                  'Right-sizing',
                  'rightsizing',
                  "Per application and instance type: spark.executor.memory, memoryOverhead and pyspark.memory as set, and as the executors' peaks over the last %s and their kills say they should be (docs/runbook.md#right-sizing)." % r.window) {
        templating: {
          list: [
            g.datasourceVariable,
            common.jobVariable(c),
            common.clusterVariable(c),
            g.queryVariable('app_name', 'Application', 'app_name:executor_memory_need:bytes{%s, %s}' % [common.job, common.cluster(c)], 'app_name'),
            g.queryVariable('instance_type', 'Instance type', 'app_name:executor_memory_need:bytes{%s, %s}' % [common.job, common.cluster(c)], 'instance_type'),
          ],
        },
        panels: g.layout([
          g.row('What to set'),
          [
            g.table('Settings: current and recommended',
                    'Per application, instance type and setting: as set now (memoryOverhead: the container limit less the heap, pyspark.memory included when set), recommended, and what the peaks alone need. No recommendation from fewer than %d executors or %d runs; kills of the matching cause raise it at least %gx (+%d MiB) over the current setting.' % [r.minExecutors, r.minRuns, r.killBumpRatio, r.killBumpBytes / 1048576],
                    [
                      g.target('app_name:executor_memory_setting:bytes{%s}' % f, instant=true, format='table'),
                      g.target('app_name:executor_memory_recommended:bytes{%s}' % f, instant=true, format='table'),
                      g.target('app_name:executor_memory_need:bytes{%s}' % f, instant=true, format='table'),
                    ],
                    'bytes') + settingsColumns { height: 9 },
          ],
          [
            g.stat('Executors behind it', 'Executors whose peaks the recommendation rests on, over the window.', [
              g.target('sum(app_name:executors:count{%s})' % f),
            ]),
            g.stat('Runs behind it', 'Runs (Spark application ids) over the window.', [
              g.target('sum(app_name:executor_runs:count{%s})' % f),
            ]),
            g.stat('Memory that would be saved', 'GiB-hours over the window: the container memory as set less the three recommended settings, times the executor-hours run. Negative: the applications need more than they have.', [
              g.target('sum((sum without(setting) (app_name:executor_memory_setting:bytes{%(f)s}) - sum without(setting) (app_name:executor_memory_recommended:bytes{%(f)s})) * on(%(cluster)s, job, %(by)s) %(hours)s) / 1073741824' % { f: f, cluster: c.clusterLabel, by: byApp, hours: executorHours }, instant=true),
            ], 'short'),
            g.stat('Node and spot losses', 'Executors lost to a machine-wide OOM kill or a spot interruption over the window: node trouble, which no setting of the application fixes.', [
              g.target('sum(app_name:executor_kills:count{%s, setting="none"}) or vector(0)' % f),
            ], 'short', [[1, 'orange']]),
          ],
          g.row('The evidence'),
          [
            g.timeseries('Peaks (quantile over runs)', "The quantile %g over the runs in the window of each run's largest executor peak: heap_live (what survived collections: spark.executor.memory holds it at %d %%), nonheap (memoryOverhead), python (pyspark.memory), container and resident (the kernel's own peaks)." % [r.quantile, r.heapLiveTarget * 100], [
              g.target('app_name:executor_memory_peak:bytes{%s}' % f, '{{app_name}} {{instance_type}} {{kind}}'),
            ], 'bytes', min=0),
            g.timeseries('Kills by the setting that would have prevented them', 'OOM kills and heap exhaustions over the window, by the setting they ask to raise; none: node OOM kills and spot interruptions.', [
              g.target('app_name:executor_kills:count{%s}' % f, '{{app_name}} {{instance_type}} {{setting}}'),
            ], 'short', min=0),
          ],
          [
            g.table('Peaks of each run', "Each run's largest executor peak by kind, over the dashboard's time range: the distribution the quantile is taken over.", [
              g.target('max_over_time(app_run:executor_memory_peak:bytes{%s}[$__range])' % f, instant=true, format='table'),
            ], 'bytes') { height: 9 },
          ],
        ]),
      },
  },
}
