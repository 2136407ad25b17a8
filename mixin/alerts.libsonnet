// Alerts that warn before the OOM kill, report the kill itself, and watch
// the exporter. Each has a section in docs/runbook.md (runbook_url).
{
  local c = $._config,
  local sel = c.selector,

  // withInstanceType adds instance_type and lifecycle from
  // executor_instance_info, so the notification says what machine it was;
  // without the info series (cloud collector off) the alert still fires,
  // just without them.
  local withInstanceType(expr, keys) = |||
    (
      %(expr)s
    )
    * on(%(cluster)s, instance) group_left(instance_type, lifecycle)
      max by(%(cluster)s, instance, instance_type, lifecycle) (executor_instance_info{%(sel)s})
    or on(%(keys)s)
    (
      %(expr)s
    )
  ||| % {
    expr: std.strReplace(std.stripChars(expr, '\n'), '\n', '\n  '),
    cluster: c.clusterLabel,
    sel: sel,
    keys: std.join(', ', [c.clusterLabel, 'instance'] + keys),
  },

  // Text naming the JVM, for descriptions.
  local jvm = '{{ with $labels.app_id }}application {{ . }} {{ end }}{{ $labels.role }}{{ with $labels.executor_id }} {{ . }}{{ end }} (pid {{ $labels.pid }}) on {{ $labels.instance }}{{ with $labels.instance_type }} ({{ . }}{{ with $labels.lifecycle }}, {{ . }}{{ end }}){{ end }}',
  local node = '{{ $labels.instance }}{{ with $labels.instance_type }} ({{ . }}{{ with $labels.lifecycle }}, {{ . }}{{ end }}){{ end }}',

  local alert(name, severity, forDuration, expr, summary, description) = {
    alert: name,
    expr: expr,
    'for': forDuration,
    labels: { severity: severity },
    annotations: {
      summary: summary,
      description: description,
      runbook_url: '%s#%s' % [c.runbookURL, std.asciiLower(name)],
    },
  },

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'executor_exporter.jvm',
        rules: [
          alert(
            'ExecutorJVMHeapNearlyFull',
            'warning',
            c.heapAfterGCFor,
            withInstanceType(|||
              sum without(area) (min_over_time(executor_jvm_memory_used_bytes{%(sel)s, area="heap"}[%(window)s]))
                / sum without(area) (executor_jvm_memory_max_bytes{%(sel)s, area="heap"}) > %(threshold)g
              and on(%(cluster)s, instance, pid)
                sum by(%(cluster)s, instance, pid) (increase(executor_jvm_gc_collections_total{%(sel)s}[%(window)s])) > 0
            ||| % { sel: sel, window: c.heapAfterGCWindow, threshold: c.heapAfterGCThreshold, cluster: c.clusterLabel }, ['pid']),
            'JVM heap nearly full after garbage collection.',
            'The heap of %s has not dropped below {{ $value | humanizePercentage }} of its maximum in %s although the garbage collector runs: the live data does not fit. Expect GC overhead, then java.lang.OutOfMemoryError (exit code 52).' % [jvm, c.heapAfterGCWindow],
          ),
          alert(
            'ExecutorJVMGCOverhead',
            'critical',
            c.gcOverheadFor,
            withInstanceType(|||
              sum without(gc) (rate(executor_jvm_gc_collection_seconds_total{%(sel)s}[%(rate)s])) > %(threshold)g
            ||| % { sel: sel, rate: c.rateInterval, threshold: c.gcOverheadThreshold }, ['pid']),
            'JVM spends most of its time collecting garbage.',
            '%s spends {{ $value | humanizePercentage }} of its time in garbage collection. "GC overhead limit exceeded" (OutOfMemoryError, exit code 52) is imminent, and tasks are crawling meanwhile.' % jvm,
          ),
        ],
      },
      {
        name: 'executor_exporter.memory',
        rules: [
          alert(
            'ExecutorContainerMemoryNearLimit',
            'critical',
            c.workingSetFor,
            withInstanceType(|||
              executor_container_memory_working_set_bytes{%(sel)s}
                / (executor_container_memory_limit_bytes{%(sel)s} > 0) > %(threshold)g
            ||| % { sel: sel, threshold: c.workingSetThreshold }, ['pid']),
            'Executor container memory near its limit.',
            'The working set of the container of %s is {{ $value | humanizePercentage }} of its memory limit. The kernel OOM-kills it (exit code 137) when it reaches the limit.' % jvm,
          ),
          alert(
            'ExecutorContainerMemoryExhaustionPredicted',
            'warning',
            c.exhaustionFor,
            withInstanceType(|||
              predict_linear(executor_container_memory_working_set_bytes{%(sel)s}[%(window)s], %(seconds)d)
                > executor_container_memory_limit_bytes{%(sel)s}
              and
              executor_container_memory_working_set_bytes{%(sel)s}
                / (executor_container_memory_limit_bytes{%(sel)s} > 0) > %(minRatio)g
            ||| % { sel: sel, window: c.exhaustionWindow, seconds: c.exhaustionMinutes * 60, minRatio: c.exhaustionMinRatio }, ['pid']),
            'Executor container memory predicted to run out.',
            'At the rate of the last %s, the container of %s reaches its memory limit within %d minutes, and is OOM-killed (exit code 137) then.' % [c.exhaustionWindow, jvm, c.exhaustionMinutes],
          ),
          alert(
            'ExecutorNodeMemoryExhaustionPredicted',
            'warning',
            c.exhaustionFor,
            withInstanceType(|||
              predict_linear(executor_node_memory_available_bytes{%(sel)s}[%(window)s], %(seconds)d) < 0
              and
              executor_node_memory_available_bytes{%(sel)s} / executor_node_memory_total_bytes{%(sel)s} < 1 - %(minRatio)g
            ||| % { sel: sel, window: c.exhaustionWindow, seconds: c.exhaustionMinutes * 60, minRatio: c.exhaustionMinRatio }, []),
            'Node memory predicted to run out.',
            'At the rate of the last %s, node %s runs out of available memory within %d minutes; the kernel OOM killer will then pick a victim, most likely the largest executor.' % [c.exhaustionWindow, node, c.exhaustionMinutes],
          ),
          alert(
            'ExecutorNodeMemoryPressure',
            'warning',
            c.memoryPressureFor,
            withInstanceType(|||
              rate(executor_node_memory_pressure_stall_seconds_total{%(sel)s, kind="some"}[%(rate)s]) > %(threshold)g
            ||| % { sel: sel, rate: c.rateInterval, threshold: c.memoryPressureThreshold }, []),
            'Node under memory pressure.',
            'Tasks on node %s were stalled waiting for memory {{ $value | humanizePercentage }} of the time (PSI): the kernel is reclaiming hard, and an OOM kill may follow.' % node,
          ),
          alert(
            'ExecutorOOMKilled',
            'warning',
            '0m',
            // A victim's series may start at 1 (its labels were not known
            // before the kill): the second operand catches that first kill,
            // which increase() alone cannot see.
            withInstanceType(|||
              increase(executor_oom_kills_total{%(sel)s}[%(window)s]) > 0
              or
              (executor_oom_kills_total{%(sel)s} > 0 unless executor_oom_kills_total{%(sel)s} offset %(window)s)
            ||| % { sel: sel, window: c.oomKillWindow }, ['pid', 'cause']),
            'Executor OOM-killed.',
            'The kernel OOM-killed %s (exit code 137). Cause: {{ $labels.cause }} ({{ $labels.constraint }}).' % jvm,
          ),
        ],
      },
      {
        name: 'executor_exporter.instance',
        rules: [
          alert(
            'ExecutorInstanceInterruptionPending',
            'critical',
            '0m',
            withInstanceType(|||
              executor_instance_interruption_pending{%(sel)s} == 1
            ||| % { sel: sel }, ['event']),
            'Cloud interruption announced: executors on this node will be lost.',
            'The cloud announced {{ $labels.event }} for node %s. Every executor on it will be lost; Spark will recompute their tasks and shuffle output elsewhere.' % node,
          ),
          alert(
            'ExecutorMetadataUnavailable',
            'warning',
            c.metadataUnavailableFor,
            |||
              executor_metadata_refresh_success{%(sel)s} == 0
            ||| % { sel: sel },
            'Instance metadata unavailable.',
            'executor_exporter on {{ $labels.instance }} could not refresh the instance metadata (instance type, lifecycle, interruption notices) for %s.' % c.metadataUnavailableFor,
          ),
        ],
      },
      {
        name: 'executor_exporter.exporter',
        rules: [
          alert(
            'ExecutorCollectorFailing',
            'warning',
            c.collectorFailingFor,
            |||
              executor_scrape_collector_success{%(sel)s} == 0
            ||| % { sel: sel },
            'An executor_exporter collector is failing.',
            'The {{ $labels.collector }} collector of executor_exporter on {{ $labels.instance }} has failed every scrape for %s; its series are missing.' % c.collectorFailingFor,
          ),
          alert(
            'ExecutorExporterDown',
            'warning',
            c.exporterDownFor,
            |||
              up{%(sel)s} == 0
            ||| % { sel: sel },
            'executor_exporter is down.',
            'Prometheus has not scraped executor_exporter on {{ $labels.instance }} for %s: no memory alert can fire for the executors there.' % c.exporterDownFor,
          ),
        ],
      },
    ],
  },
}
