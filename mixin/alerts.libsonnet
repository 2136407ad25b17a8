// Alerts that warn before the OOM kill, report the kill itself, and watch
// the exporter. Each has a section in docs/runbook.md (runbook_url); the
// scenarios in ../test/scenarios measure when each warns before a kill.
{
  local c = $._config,
  local e = $._expr,
  local sel = c.selector,

  // withInstanceType adds instance_type and lifecycle from
  // executor_instance_info, so the notification says what machine it was;
  // without the info series (cloud collector off) the alert still fires,
  // just without them: the machines without one are joined to nothing,
  // found among those of anchor, a series expr reads (any one per
  // machine will do). expr is evaluated once. The fallback is grouped by
  // the labels the join copies too, which anchor's series lack: they are
  // empty there, as without the join, and every side of the `or` names
  // them (pint's promql/impossible reads a label no side can have as a
  // mistake).
  local withInstanceType(expr, anchor) = |||
    (
      %(expr)s
    )
    * on(%(cluster)s, instance) group_left(instance_type, lifecycle)
      (
        max by(%(cluster)s, instance, instance_type, lifecycle) (executor_instance_info{%(sel)s})
        or on(%(cluster)s, instance)
        group by(%(cluster)s, instance, instance_type, lifecycle) (%(anchor)s)
      )
  ||| % {
    expr: std.strReplace(std.stripChars(expr, '\n'), '\n', '\n  '),
    cluster: c.clusterLabel,
    sel: sel,
    anchor: anchor,
  },

  // The per-executor memory quantities of expressions.libsonnet, recorded
  // by the group executor_exporter.memory.rules (prometheusRules, below),
  // which the memory alerts read: the non-heap's trend is a range of
  // recorded samples rather than a subquery evaluating it at every step,
  // and the descriptions read the same series, one selector each, rather
  // than the expressions again for every active alert. The alerts' group
  // is evaluated apart from it, so they see its last evaluation, at most
  // one interval old (both groups run every evaluation_interval): every
  // series an alert compares is recorded there, so each alert sees them
  // all as of the same evaluation, and the `for` durations are minutes.
  local nonHeap = 'executor:memory_nonheap:bytes{%s}' % sel,
  local budget = 'executor:memory_overhead_budget:bytes{%s}' % sel,
  local demand = 'executor:memory_demand:bytes{%s}' % sel,
  local memoryRecords = [
    // Everything the executor holds that is not heap.
    { record: 'executor:memory_nonheap:bytes', expr: e.nonHeap + '\n' },
    // Container limit - heap max: the room for the non-heap memory.
    { record: 'executor:memory_overhead_budget:bytes', expr: e.budget + '\n' },
    // Heap max + non-heap: what the container holds once the heap is full.
    { record: 'executor:memory_demand:bytes', expr: '%s + %s\n' % [e.heapMax, nonHeap] },
    {
      record: 'executor:memory_overhead_budget_used:ratio',
      expr: |||
        %(nonHeap)s
        /
        (%(budget)s > 0)
      ||| % { nonHeap: nonHeap, budget: budget },
    },
  ],

  // The time to limit (ExecutorOverheadBudgetExhaustionPredicted), recorded
  // after memoryRecords, in the same group, which evaluates its rules in
  // order at one timestamp, each reading the ones before: what the overhead budget must
  // hold, the non-heap memory (the PySpark workers included) and the
  // container's tmpfs pages, which the kernel cannot reclaim and the
  // process need not map; its running peak, which only new highs move (a
  // GC cycle, or the heap committing more and the non-heap recovering from
  // it, moves it not at all); and the seconds until the budget is full at
  // the peak's rate over budgetTrendWindow, for executors whose peak rises.
  // Page cache is in neither.
  local used = 'executor:memory_overhead_used:bytes{%s}' % sel,
  local peakRecord = 'executor:memory_overhead_used:max%s' % c.budgetTrendPeakWindow,
  local peak = '%s{%s}' % [peakRecord, sel],
  local secondsLeft = 'executor:memory_overhead_budget_exhaustion:seconds{%s}' % sel,
  local trendRate = 'deriv(%s[%s])' % [peak, c.budgetTrendWindow],
  local trendMinAge = std.parseInt(std.rstripChars(c.budgetTrendMinAge, 'm')) * 60,
  local trendRecords = [
    {
      record: 'executor:memory_overhead_used:bytes',
      expr: |||
        (
          %(nonHeap)s + sum without(kind) (executor_container_memory_bytes{%(sel)s, kind="shmem"})
          or
          %(nonHeap)s
        )
        and on(%(cluster)s, instance, pid)
        time() - executor_jvm_start_time_seconds{%(sel)s} > %(minAge)d
      ||| % { nonHeap: nonHeap, sel: sel, cluster: c.clusterLabel, minAge: trendMinAge },
    },
    { record: peakRecord, expr: 'max_over_time(%s[%s])\n' % [used, c.budgetTrendPeakWindow] },
    {
      record: 'executor:memory_overhead_budget_exhaustion:seconds',
      // No budget (heap max at or above the limit) is
      // ExecutorMemoryConfigurationDoomed's: no time to limit.
      expr: |||
        clamp_min((%(budget)s > 0) - %(used)s, 0)
        /
        (%(rate)s > 0)
      ||| % { budget: budget, used: used, rate: trendRate },
    },
  ],

  // Text naming the JVM, for descriptions.
  local jvm = '{{ with $labels.app_id }}application {{ . }} {{ end }}{{ $labels.role }}{{ with $labels.executor_id }} {{ . }}{{ end }} (pid {{ $labels.pid }})%s on {{ $labels.instance }}{{ with $labels.instance_type }} ({{ . }}{{ with $labels.lifecycle }}, {{ . }}{{ end }}){{ end }}' % pod,
  // " in pod <namespace>/<pod>" when known: from the alert's own labels
  // (OOM kills and exits carry them), else from the JVM's info series.
  // The template tests the pod label, not the query: a pod!="" matcher
  // makes Prometheus merge the series of every pod it holds, for every
  // active alert at every evaluation.
  local pod =
    ('{{ with $labels.pod }} in pod {{ with $labels.namespace }}{{ . }}/{{ end }}{{ . }}{{ else }}' +
     '{{ with printf `executor_jvm_info{%s, instance="%%s", pid="%%s"}` $labels.instance $labels.pid | query }}' +
     '{{ with . | first }}{{ $info := . }}{{ with .Labels.pod }} in pod {{ with $info.Labels.namespace }}{{ . }}/{{ end }}{{ . }}{{ end }}{{ end }}{{ end }}{{ end }}') % sel,
  local node = '{{ $labels.instance }}{{ with $labels.instance_type }} ({{ . }}{{ with $labels.lifecycle }}, {{ . }}{{ end }}){{ end }}',

  // show(expr) prints, in a description, the value of expr for the alert's
  // JVM (expr's selectors are narrowed to its instance and pid) in IEC units.
  local show(expr) =
    '{{ with printf `%s` $labels.instance $labels.pid | query }}{{ . | first | value | humanize1024 }}B{{ end }}' % narrow(expr),
  // narrow(expr) narrows expr's selectors to the alert's JVM, for printf
  // with $labels.instance and $labels.pid.
  local narrow(expr) = std.strReplace(expr, sel, sel + ', instance="%[1]s", pid="%[2]s"'),
  // nodeQuery(expr) prints, in a description, the value of expr for the
  // alert's node (expr's selectors are narrowed to its instance), whole.
  local nodeQuery(expr) =
    '{{ with printf `%s` $labels.instance | query }}{{ . | first | value | printf "%%.0f" }}{{ end }}' %
    std.strReplace(expr, sel, sel + ', instance="%[1]s"'),

  // The Python workers' share, when there are any.
  local pythonNote =
    '{{ with printf `executor_process_resident_memory_bytes{%s, instance="%%s", pid="%%s", kind="python"} > 0` $labels.instance $labels.pid | query }} (Python workers: {{ . | first | value | humanize1024 }}B of it; if they are what grows, raise spark.executor.pyspark.memory instead){{ end }}' % sel,

  // How much larger the heap must be for the live data (the smallest heap
  // use of the window) to take at most heapAfterGCTarget of it, and by a
  // quarter at least, in whole MiB.
  local raiseBy = e.mib('sum without(area) (min_over_time(executor_jvm_memory_used_bytes{%(sel)s, area="heap"}[%(w)s])) / %(target)g - %(max)s' % {
    sel: sel,
    w: c.heapAfterGCWindow,
    target: c.heapAfterGCTarget,
    max: e.heapMax,
  }),
  local raise =
    '{{ with printf `%s` $labels.instance $labels.pid | query }}{{ . | first | value | printf "%%.0f" }}{{ end }}' %
    narrow('(%(a)s > %(b)s or %(b)s)' % { a: raiseBy, b: e.mib(e.heapMax + ' / 4') }),

  // Where in the non-heap memory it grows, for the non-heap alerts: the
  // region that grew most over nativeRegionWindow, or, when none grew, the
  // largest, each with the runbook's advice for it; or that the JVM has no
  // breakdown (yet). Text only, queried when the description is rendered:
  // a region label would change the alert's identity (and restart its
  // `for`) each time the fastest region changed, or its first breakdown
  // arrived.
  local regionsURL = c.runbookURL + '#native-memory-regions',
  local regionURL = c.runbookURL + '#region-{{ .Labels.region }}',
  local regionNote =
    ('{{ with printf `%(fastest)s > 0` $labels.instance $labels.pid | query }}{{ with . | first }}' +
     ' Fastest-growing non-heap region: {{ .Labels.region }}, +{{ .Value | humanize1024 }}B in the last %(w)s; what to do: %(regionURL)s.{{ end }}' +
     '{{ else }}{{ with printf `%(largest)s` $labels.instance $labels.pid | query }}{{ with . | first }}' +
     ' No non-heap region grew in the last %(w)s; the largest is {{ .Labels.region }}, {{ .Value | humanize1024 }}B; what to do: %(regionURL)s.{{ end }}' +
     '{{ else }} No breakdown by region for this JVM yet (executor_jvm_native_memory_bytes; see %(regionsURL)s).{{ end }}{{ end }}') % {
      // The growth recorded by executor_exporter.native.rules (at most its
      // interval old), rather than every region's range read again for
      // each active alert at each evaluation.
      fastest: narrow('executor:jvm_native_memory_fastest_region_growth:delta%s{%s}' % [c.nativeRegionWindow, sel]),
      largest: narrow(e.nativeRegionLargest),
      w: c.nativeRegionWindow,
      regionURL: regionURL,
      regionsURL: regionsURL,
    },

  // For ExecutorOverheadBudgetExhaustionPredicted: the region that grew
  // most over budgetTrendWindow, or else the note of the other non-heap
  // alerts (over nativeRegionWindow).
  local trendRegionGrowing = 'topk(1, %s) > 0' % e.nativeRegionGrowthOver(c.budgetTrendWindow),
  local trendRegionNote =
    ('{{ with printf `%(growing)s` $labels.instance $labels.pid | query }}{{ with . | first }}' +
     '{{ if eq .Labels.region "python" }}{{ $setting = "spark.executor.pyspark.memory" }}{{ end }}' +
     ' Growing: {{ .Labels.region }}, +{{ .Value | humanize1024 }}B in the last %(w)s; what to do: %(regionURL)s.{{ end }}' +
     '{{ else }}%(fallback)s{{ end }}') % {
      growing: narrow(trendRegionGrowing),
      w: c.budgetTrendWindow,
      regionURL: regionURL,
      fallback: regionNote,
    },

  // The heap figures of a JVM that has ended, from its last series in
  // the exit window; nothing when they are gone already.
  local heapFigures =
    ('{{ with printf `max_over_time(executor_jvm_memory_used_bytes{%(sel)s, instance="%%[1]s", pid="%%[2]s", area="heap"}[%(w)s])` $labels.instance $labels.pid | query }}' +
     'Its heap used up to {{ . | first | value | humanize1024 }}B' +
     '{{ with printf `last_over_time(executor_jvm_memory_max_bytes{%(sel)s, instance="%%[1]s", pid="%%[2]s", area="heap"}[%(w)s])` $labels.instance $labels.pid | query }} of {{ . | first | value | humanize1024 }}B (-Xmx){{ end }}' +
     ' in its last %(w)s. {{ end }}') % { sel: sel, w: c.exitWindow },

  // After a kill: a setting raised by the right-sizing rules' bump (at
  // least killBumpRatio and killBumpBytes over what it was), and to what
  // the JVM's own peak needs, rounded up, as the right-sizing rules raise
  // an application's (rightsizing.libsonnet) and the exporter's verdict
  // says (internal/oom/sizing.go). The JVM has ended: its settings are
  // its last series in the window, its peaks are still exported.
  local r = c.rightsizing,
  local afterKill(current, need) =
    local bumped = '(%(c)s * %(ratio)g > %(c)s + %(b)d or %(c)s + %(b)d)' % { c: current, ratio: r.killBumpRatio, b: r.killBumpBytes };
    'ceil((%(x)s > %(n)s or %(n)s or %(x)s) / %(step)d) * %(step)d' % { x: bumped, n: need, step: r.roundBytes },
  local lastOf(metric, w) = 'sum without(area) (last_over_time(%s{%s, area="heap"}[%s]))' % [metric, sel, w],
  local heapSet(w) = lastOf('executor_jvm_memory_max_bytes', w),
  local heapNeed = 'sum without(kind) (executor_jvm_memory_peak_bytes{%s, kind="heap_live"}) / %g' % [sel, r.heapLiveTarget],
  local overheadSet(w) = '(last_over_time(executor_container_memory_limit_bytes{%s}[%s]) - %s)' % [sel, w, heapSet(w)],
  local overheadNeed = 'sum without(kind) (executor_jvm_memory_peak_bytes{%s, kind=~"nonheap|python"}) * %g' % [sel, 1 + r.margin],
  local mibOf(expr) =
    '{{ with printf `%s` $labels.instance $labels.pid | query }}{{ . | first | value | printf "%%.0f" }}{{ end }}' % narrow('(%s) / 1048576' % expr),
  // Without the JVM's last settings in the window, the setting alone.
  local raiseAfterKill(setting, current, need) =
    local to = narrow('(%s) / 1048576' % afterKill(current, need));
    ('{{ with printf `%(to)s` $labels.instance $labels.pid | query }}Raise %(setting)s by %(by)s MiB to {{ . | first | value | printf "%%.0f" }} MiB (by the right-sizing rules: %(url)s).' +
     '{{ else }}Raise %(setting)s.{{ end }}') % {
      to: to,
      setting: setting,
      by: mibOf('%s - %s' % [afterKill(current, need), current]),
      url: c.runbookURL + '#right-sizing',
    },

  local alert(name, severity, forDuration, expr, summary, description) = {
    alert: name,
    expr: expr,
    [if forDuration != null then 'for']: forDuration,
    labels: { severity: severity },
    annotations: {
      summary: summary,
      description: description,
      runbook_url: '%s#%s' % [c.runbookURL, std.asciiLower(name)],
    },
  },

  // Recording rules belong in prometheusRules (mixtool lint reads every
  // rule of prometheusAlerts as an alert).
  prometheusRules+:: {
    groups+: [
      {
        name: 'executor_exporter.memory.rules',
        rules: memoryRecords + trendRecords,
      },
    ],
  },

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'executor_exporter.memory',
        rules: [
          alert(
            'ExecutorMemoryConfigurationDoomed',
            'critical',
            c.doomedFor,
            withInstanceType(|||
              %(over)s > 0
            ||| % { over: e.mib('%s - %s * %g' % [demand, e.limit, c.doomedThreshold]) }, nonHeap),
            'Executor heap max plus non-heap memory exceeds its container limit.',
            ('%s cannot fit its container: heap max %s + non-heap %s%s is {{ $value }} MiB over the %s limit. ' +
             'When the heap fills, the container is OOM-killed (exit code 137). ' +
             'Raise spark.executor.memoryOverhead by {{ $value }} MiB, or lower spark.executor.memory by {{ $value }} MiB.%s') %
            [jvm, show(e.heapMax), show(nonHeap), pythonNote, show('executor_container_memory_limit_bytes{%s}' % sel), regionNote],
          ),
          alert(
            'ExecutorOverheadBudgetNearlyFull',
            'warning',
            c.budgetFor,
            withInstanceType(|||
              %(short)s > 0
              and
              %(budget)s > 0
            ||| % { short: e.mib('%s / %g - %s' % [nonHeap, c.budgetThreshold, budget]), budget: budget }, nonHeap),
            'Executor non-heap memory nearly fills its overhead budget.',
            ('%s holds %s outside its heap%s: more than %g%% of its overhead budget, the %s its container limit leaves beside the heap max. ' +
             'Past the budget, the container is OOM-killed (exit code 137) when the heap fills. ' +
             'Raise spark.executor.memoryOverhead by at least {{ $value }} MiB (or lower spark.executor.memory by as much); if the non-heap memory keeps growing, look for a native leak (direct buffers, threads).%s') %
            [jvm, show(nonHeap), pythonNote, c.budgetThreshold * 100, show(budget), regionNote],
          ),
          alert(
            'ExecutorOverheadBudgetRunningOut',
            'warning',
            c.budgetPredictFor,
            withInstanceType(|||
              %(short)s > 0
              and on(%(cluster)s, instance, pid)
              %(nonHeap)s / %(budget)s > %(minRatio)g
              and on(%(cluster)s, instance, pid)
              time() - executor_jvm_start_time_seconds{%(sel)s} > %(minAge)d
            ||| % {
              short: e.mib('predict_linear(%s[%s], %d) - %s' % [nonHeap, c.budgetPredictWindow, c.budgetPredictMinutes * 60, budget]),
              nonHeap: nonHeap,
              budget: budget,
              cluster: c.clusterLabel,
              sel: sel,
              minRatio: c.budgetPredictMinRatio,
              minAge: std.parseInt(std.rstripChars(c.budgetPredictMinAge, 'm')) * 60,
            }, nonHeap),
            'Executor non-heap memory predicted to outgrow its overhead budget.',
            ('At the rate of the last %s, the memory %s holds outside its heap (%s now%s) outgrows its overhead budget (the %s its container limit leaves beside the heap max) by {{ $value }} MiB within %d minutes. ' +
             'Steady growth there is a native leak (direct buffers, threads, JNI) or growing Python workers. ' +
             'Raise spark.executor.memoryOverhead by {{ $value }} MiB to get through, and find the leak.%s') %
            [c.budgetPredictWindow, jvm, show(nonHeap), pythonNote, show(budget), c.budgetPredictMinutes, regionNote],
          ),
          alert(
            'ExecutorOverheadBudgetExhaustionPredicted',
            'warning',
            c.budgetTrendFor,
            withInstanceType(|||
              %(secondsLeft)s < %(horizon)d
              and on(%(cluster)s, instance, pid)
              changes(%(peak)s[%(w)s]) >= %(rises)d
              and on(%(cluster)s, instance, pid)
              %(peak)s - min_over_time(%(peak)s[%(w)s]) >= %(minGrowth)d
              and on(%(cluster)s, instance, pid)
              %(peak)s - %(peak)s offset %(half)ds >= %(halfGrowth)d
              and on(%(cluster)s, instance, pid)
              %(peak)s offset %(half)ds - min_over_time(%(peak)s[%(w)s]) >= %(halfGrowth)d
              and on(%(cluster)s, instance, pid)
              4 * (%(peak)s - %(peak)s offset %(half)ds) >= %(peak)s - min_over_time(%(peak)s[%(w)s])
              and on(%(cluster)s, instance, pid)
              4 * (%(peak)s offset %(half)ds - min_over_time(%(peak)s[%(w)s])) >= %(peak)s - min_over_time(%(peak)s[%(w)s])
            ||| % {
              halfGrowth: c.budgetTrendGrowthThreshold * 1048576 / 4,
              half: std.parseInt(std.rstripChars(c.budgetTrendWindow, 's')) / 2,
              secondsLeft: secondsLeft,
              horizon: c.budgetTrendMinutes * 60,
              cluster: c.clusterLabel,
              peak: peak,
              w: c.budgetTrendWindow,
              rises: c.budgetTrendRisesThreshold,
              minGrowth: c.budgetTrendGrowthThreshold * 1048576,
            }, used),
            'Executor memory outside the heap will fill its overhead budget within minutes.',
            ('At the rate of the last %(w)s, %(jvm)s fills its overhead budget in {{ $value | humanizeDuration }}%(at)s: ' +
             "the memory it holds outside its heap and its container's tmpfs pages, %(used)s now%(python)s, grow by %(rate)sB/s toward the %(budget)s its container limit leaves beside the heap max. " +
             'Past the budget, the container is OOM-killed (exit code 137) when the heap fills.' +
             '{{ $setting := "spark.executor.memoryOverhead" }}%(region)s ' +
             '{{ if eq $setting "spark.executor.pyspark.memory" }}Raise spark.executor.pyspark.memory by %(by)s MiB{{ else }}Raise spark.executor.memoryOverhead by %(by)s MiB to %(to)s MiB{{ end }} to get through the next %(h)d minutes at this rate, and find the leak.') % {
              w: c.budgetTrendWindow,
              jvm: jvm,
              at: '{{ with printf `time() + %s` $labels.instance $labels.pid | query }} (at {{ . | first | value | humanizeTimestamp }}){{ end }}' % narrow(secondsLeft),
              used: show(used),
              python: pythonNote,
              rate: '{{ with printf `%s` $labels.instance $labels.pid | query }}{{ . | first | value | humanize1024 }}{{ end }}' % narrow(trendRate),
              budget: show(budget),
              region: trendRegionNote,
              by: mibOf(e.mib('%s + %s * %d - %s' % [used, trendRate, c.budgetTrendMinutes * 60, budget]) + ' * 1048576'),
              to: mibOf('(%s + %s) * 1048576' % [e.mib('%s + %s * %d - %s' % [used, trendRate, c.budgetTrendMinutes * 60, budget]), e.mib(budget)]),
              h: c.budgetTrendMinutes,
            },
          ),
        ],
      },
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
            ||| % { sel: sel, window: c.heapAfterGCWindow, threshold: c.heapAfterGCThreshold, cluster: c.clusterLabel }, 'executor_jvm_memory_max_bytes{%s, area="heap"}' % sel),
            'JVM heap nearly full after garbage collection.',
            ('The heap of %s has not dropped below {{ $value | humanizePercentage }} of its %s maximum in %s although the garbage collector runs: the live data does not fit. ' +
             'Expect GC overhead, then java.lang.OutOfMemoryError (exit code 52). ' +
             'Raise spark.executor.memory by %s MiB (so that the live data takes at most %g%% of the heap), or give each task less data (more partitions, fewer spark.executor.cores).') %
            [jvm, show(e.heapMax), c.heapAfterGCWindow, raise, c.heapAfterGCTarget * 100],
          ),
          alert(
            'ExecutorJVMGCOverhead',
            'critical',
            c.gcOverheadFor,
            withInstanceType(|||
              sum without(gc) (rate(executor_jvm_gc_collection_seconds_total{%(sel)s}[%(window)s])) > %(threshold)g
            ||| % { sel: sel, window: c.gcOverheadWindow, threshold: c.gcOverheadThreshold }, 'executor_jvm_gc_collection_seconds_total{%s}' % sel),
            'JVM spends most of its time collecting garbage.',
            ('%s spends {{ $value | humanizePercentage }} of its time in garbage collection (heap max %s). "GC overhead limit exceeded" (OutOfMemoryError, exit code 52) is imminent, and tasks are crawling meanwhile. ' +
             'Raise spark.executor.memory by %s MiB (so that the live data takes at most %g%% of the heap), or give each task less data (more partitions, fewer spark.executor.cores).') % [jvm, show(e.heapMax), raise, c.heapAfterGCTarget * 100],
          ),
        ],
      },
      {
        name: 'executor_exporter.node',
        rules: [
          alert(
            'ExecutorNodeMemoryOvercommitted',
            'warning',
            c.nodeOvercommitFor,
            withInstanceType(|||
              %(over)s > 0
            ||| % {
              over: e.mib('sum by(%(cluster)s, job, instance) (%(room)s) - on(%(cluster)s, job, instance) %(t)g * executor_node_memory_available_bytes{%(sel)s}' % {
                cluster: c.clusterLabel,
                room: e.heapRoom,
                t: c.nodeOvercommitThreshold,
                sel: sel,
              }),
            }, 'executor_node_memory_available_bytes{%s}' % sel),
            'The executors on a node can grow past its memory.',
            ('The heaps of the JVMs on %s may still grow by {{ $value }} MiB more than the memory the node has available. ' +
             'When they fill, the kernel OOM-kills one of them (cause node). ' +
             'Schedule fewer executors on the node (on Kubernetes, memory requests equal to the limits), or lower spark.executor.memory so their heaps together shrink by {{ $value }} MiB.') % node,
          ),
          alert(
            'ExecutorNodeMemoryNearlyExhausted',
            'critical',
            c.nodeAvailableFor,
            withInstanceType(|||
              executor_node_memory_available_bytes{%(sel)s} / executor_node_memory_total_bytes{%(sel)s} < %(t)g
            ||| % { sel: sel, t: c.nodeAvailableThreshold }, 'executor_node_memory_available_bytes{%s}' % sel),
            'Node memory nearly exhausted.',
            ('Node %s has only {{ $value | humanizePercentage }} of its memory available; the kernel OOM killer will pick a victim, most likely the largest executor, when it runs out. ' +
             'Move executors off the node, or lower spark.executor.memory of those on it by %s MiB in total (back to %g%% available).') %
            [node, nodeQuery(e.mib('%g * executor_node_memory_total_bytes{%s} - executor_node_memory_available_bytes{%s}' % [c.nodeAvailableThreshold, sel, sel])), c.nodeAvailableThreshold * 100],
          ),
          alert(
            'ExecutorNodeMemoryExhaustionPredicted',
            'warning',
            c.nodeExhaustionFor,
            withInstanceType(|||
              predict_linear(executor_node_memory_available_bytes{%(sel)s}[%(window)s], %(seconds)d) < 0
              and
              executor_node_memory_available_bytes{%(sel)s} / executor_node_memory_total_bytes{%(sel)s} < 1 - %(minRatio)g
            ||| % { sel: sel, window: c.nodeExhaustionWindow, seconds: c.nodeExhaustionMinutes * 60, minRatio: c.nodeExhaustionMinRatio }, 'executor_node_memory_available_bytes{%s}' % sel),
            'Node memory predicted to run out.',
            ('At the rate of the last %s, node %s runs out of available memory within %d minutes; the kernel OOM killer will then pick a victim, most likely the largest executor. ' +
             'Find what grows (the node dashboard); to get through, move executors off the node or lower spark.executor.memory of those on it by %s MiB in total.') %
            [c.nodeExhaustionWindow, node, c.nodeExhaustionMinutes, nodeQuery(e.mib('-predict_linear(executor_node_memory_available_bytes{%s}[%s], %d)' % [sel, c.nodeExhaustionWindow, c.nodeExhaustionMinutes * 60]))],
          ),
          alert(
            'ExecutorNodeMemoryPressure',
            'warning',
            c.memoryPressureFor,
            withInstanceType(|||
              rate(executor_node_memory_pressure_stall_seconds_total{%(sel)s, kind="some"}[%(rate)s]) > %(threshold)g
            ||| % { sel: sel, rate: c.rateInterval, threshold: c.memoryPressureThreshold }, 'executor_node_memory_pressure_stall_seconds_total{%s}' % sel),
            'Node under memory pressure.',
            'Tasks on node %s were stalled waiting for memory {{ $value | humanizePercentage }} of the time (PSI): the kernel is reclaiming hard, and an OOM kill may follow.' % node,
          ),
        ],
      },
      {
        name: 'executor_exporter.oom',
        rules: [
          alert(
            'ExecutorOOMKilled',
            'warning',
            null,
            // A victim's series may start at 1 (its labels were not known
            // before the kill): the second operand catches that first kill,
            // which increase() alone cannot see.
            withInstanceType(|||
              increase(executor_oom_kills_total{%(sel)s}[%(window)s]) > 0
              or
              (executor_oom_kills_total{%(sel)s} > 0 unless executor_oom_kills_total{%(sel)s} offset %(window)s)
            ||| % { sel: sel, window: c.oomKillWindow }, 'executor_oom_kills_total{%s}' % sel),
            'Executor OOM-killed.',
            // region: on a native kill, the non-heap region (or shmem) that
            // grew most since the JVM's first minute, as the exporter saw it.
            ('The kernel OOM-killed %s (exit code 137). Cause: {{ $labels.cause }} ({{ $labels.constraint }}).' +
             '{{ with $labels.region }} The region that grew most since its first minute: {{ . }}; what to do: %s.{{ end }}' +
             '{{ if or (eq $labels.cause "native") (eq $labels.cause "heap") }} %s' +
             '{{ else if eq $labels.cause "node" }} The node ran out of memory (the machine, or the group that holds all its containers), not the limit of the container itself: no setting of the application fixes it; schedule fewer executors on the node.{{ end }}') %
            [
              jvm,
              c.runbookURL + '#region-{{ . }}',
              raiseAfterKill('spark.executor.memoryOverhead', overheadSet(c.oomKillWindow), overheadNeed),
            ],
          ),
        ],
      },
      {
        name: 'executor_exporter.exits',
        rules: [
          alert(
            'ExecutorHeapExhausted',
            'warning',
            null,
            // Like ExecutorOOMKilled: the second operand catches an exit
            // whose series starts at 1.
            withInstanceType(|||
              increase(%(exits)s[%(window)s]) > 0
              or
              (%(exits)s > 0 unless %(exits)s offset %(window)s)
            ||| % { exits: 'executor_jvm_exits_total{%s, reason="heap_exhausted"}' % sel, window: c.exitWindow }, 'executor_jvm_exits_total{%s}' % sel),
            'Executor lost to heap exhaustion.',
            ('%s ran out of heap (java.lang.OutOfMemoryError, exit code 52): at the end its heap was full after collection while the collector ran almost continuously. ' +
             '%s' +
             '%s The container limit rises with it; or give each task less data: more partitions (spark.sql.shuffle.partitions), fewer concurrent tasks (spark.executor.cores).') %
            [jvm, heapFigures, raiseAfterKill('spark.executor.memory', heapSet(c.exitWindow), heapNeed)],
          ),
          // YARN's NodeManager kills at the allocation (docs/yarn.md): a
          // pmem or elastic kill asks for overhead as a native OOM kill
          // does; a vmem kill is the NodeManager's configuration.
          alert(
            'ExecutorYARNMemoryKilled',
            'warning',
            null,
            withInstanceType(|||
              increase(%(exits)s[%(window)s]) > 0
              or
              (%(exits)s > 0 unless %(exits)s offset %(window)s)
            ||| % { exits: 'executor_jvm_exits_total{%s, reason=~"yarn_pmem_limit|yarn_elastic_oom"}' % sel, window: c.exitWindow }, 'executor_jvm_exits_total{%s}' % sel),
            'Executor killed by YARN for exceeding its memory allocation.',
            ("YARN's NodeManager killed %s ({{ $labels.reason }}{{ with $labels.container }}, container {{ . }}{{ end }}): " +
             '{{ if eq $labels.reason "yarn_elastic_oom" }}under elastic memory control its OOM handler killed the container, over its allocation, when the node\'s containers ran out.' +
             '{{ else }}its process tree\'s resident memory passed the container\'s allocation (exit status -104, "Container killed by YARN for exceeding physical memory limits").{{ end }}' +
             '{{ with $labels.region }} The region that grew most: {{ . }}; what to do: %s.{{ end }} %s') %
            [jvm, c.runbookURL + '#region-{{ . }}', raiseAfterKill('spark.executor.memoryOverhead', overheadSet(c.exitWindow), overheadNeed)],
          ),
          alert(
            'ExecutorYARNVmemKilled',
            'warning',
            null,
            withInstanceType(|||
              increase(%(exits)s[%(window)s]) > 0
              or
              (%(exits)s > 0 unless %(exits)s offset %(window)s)
            ||| % { exits: 'executor_jvm_exits_total{%s, reason="yarn_vmem_limit"}' % sel, window: c.exitWindow }, 'executor_jvm_exits_total{%s}' % sel),
            "Executor killed by YARN's virtual memory check.",
            ("YARN's NodeManager killed %s{{ with $labels.container }} (container {{ . }}){{ end }} because its process tree's address space passed allocation × yarn.nodemanager.vmem-pmem-ratio (exit status -103). " +
             'A JVM reserves far more address space than it uses (YARN-4714): set yarn.nodemanager.vmem-check-enabled=false, or raise yarn.nodemanager.vmem-pmem-ratio, on the NodeManagers. ' +
             'More executor memory would only raise the limit with the reservations.') % [jvm],
          ),
        ],
      },
      {
        name: 'executor_exporter.instance',
        rules: [
          alert(
            'ExecutorInstanceInterruptionPending',
            'critical',
            null,
            withInstanceType(|||
              executor_instance_interruption_pending{%(sel)s} == 1
            ||| % { sel: sel }, 'executor_instance_interruption_pending{%s}' % sel),
            'Cloud interruption announced: executors on this node will be lost.',
            'The cloud announced {{ $labels.event }} for node %s. Every executor on it will be lost; Spark will recompute their tasks and shuffle output elsewhere.' % node,
          ),
          alert(
            'ExecutorMetadataUnavailable',
            'warning',
            c.metadataUnavailableFor,
            withInstanceType(|||
              executor_metadata_refresh_success{%(sel)s} == 0
            ||| % { sel: sel }, 'executor_metadata_refresh_success{%s}' % sel),
            'Instance metadata unavailable.',
            'executor_exporter on %s could not refresh the instance metadata (instance type, lifecycle, interruption notices) for %s.' % [node, c.metadataUnavailableFor],
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
            withInstanceType(|||
              executor_scrape_collector_success{%(sel)s} == 0
            ||| % { sel: sel }, 'executor_scrape_collector_success{%s}' % sel),
            'An executor_exporter collector is failing.',
            'The {{ $labels.collector }} collector of executor_exporter on %s has failed every scrape for %s; its series are missing.' % [node, c.collectorFailingFor],
          ),
          alert(
            'ExecutorExporterDown',
            'warning',
            c.exporterDownFor,
            // up carries no instance_type: the exporter that would say it
            // is down, and its info series goes stale with it.
            |||
              up{%(sel)s} == 0
            ||| % { sel: sel },
            'Prometheus cannot scrape executor_exporter.',
            'Prometheus has not scraped executor_exporter on {{ $labels.instance }} for %s: no memory alert can fire for the executors there.' % c.exporterDownFor,
          ),
        ],
      },
    ],
  },
}
