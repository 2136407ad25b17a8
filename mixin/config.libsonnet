{
  _config+:: {
    // Selects the exporter's series in rules and alerts. The dashboards
    // select by their $job variable instead (see jobVariableSelector).
    selector: 'job="executor_exporter"',

    // The dashboards' $job variable lists the jobs whose targets serve this
    // series, so they work whatever the scrape job is called.
    jobVariableSelector: 'executor_exporter_build_info',

    // The label that tells Prometheus-wide series of different clusters
    // apart (external labels, a federation label). Joins and aggregations
    // keep it, so one Prometheus can hold several clusters; when it is
    // absent, it is simply empty everywhere.
    clusterLabel: 'cluster',

    // The label of executor_jvm_info that holds the Spark application's
    // name: the pod label spark-app-name as the exporter exports it with
    // --kubernetes.pod-labels=spark-app-name (docs/kubernetes.md). Without
    // it the dashboards' application-name variable is empty and matches
    // everything.
    appNameLabel: 'label_spark_app_name',

    // Labels of executor_instance_info copied onto joined series, so
    // anything can be grouped by how the machine was bought.
    instanceLabels: ['provider', 'instance_type', 'lifecycle', 'zone', 'node_pool'],

    // Window of rate() and increase() in rules and alerts.
    rateInterval: '5m',

    // Doomed configuration: heap max plus the executor's non-heap memory
    // (everything resident that is not heap: metaspace, code cache, thread
    // stacks, GC structures, direct buffers, Python workers) above this
    // fraction of the container limit. The heap fills in the end, so the
    // container is then OOM-killed.
    doomedThreshold: 1,
    doomedFor: '30s',

    // Overhead budget: the container limit minus the heap max is what the
    // non-heap memory may use (spark.executor.memoryOverhead plus
    // spark.executor.pyspark.memory). Warn when the non-heap memory uses
    // more than this fraction of it.
    budgetThreshold: 0.85,
    budgetFor: '30s',
    // ... or when its trend over budgetPredictWindow reaches the budget
    // within budgetPredictMinutes. Only for JVMs older than
    // budgetPredictMinAge, so that the start-up ramp (class loading, JIT,
    // thread pools) is out of the window; and only once budgetPredictMinRatio
    // of the budget is used.
    budgetPredictWindow: '30m',
    budgetPredictMinutes: 60,
    budgetPredictMinAge: '45m',
    budgetPredictMinRatio: 0.75,
    budgetPredictFor: '10m',

    // Time to limit: what the overhead budget must hold (the non-heap
    // memory, the PySpark workers included, and the container's tmpfs
    // pages) reaches the budget within budgetTrendMinutes at the rate of
    // the last budgetTrendWindow. The rate is that of its running peak
    // over budgetTrendPeakWindow, which only new highs move: a GC cycle,
    // the heap committing more (which lowers the non-heap until the new
    // heap is touched) and the recovery from it make none. The peak must
    // have risen in each half of the window by a quarter of
    // budgetTrendGrowthThreshold and a quarter of its rise over the window
    // at least (a step, or the last of a recovery, rises in one half; a
    // trend in both), budgetTrendRisesThreshold times in all, by
    // budgetTrendGrowthThreshold MiB at least (a JIT warming up, a pool
    // filling by a few MiB); and only what the JVM holds after
    // budgetTrendMinAge counts (start-up: class loading, the JIT, thread
    // pools). The window, in seconds, must hold two of the exporter's
    // readings in each half (a JVM far from its limit is read every 30 s).
    budgetTrendWindow: '90s',
    budgetTrendPeakWindow: '10m',
    budgetTrendRisesThreshold: 3,
    budgetTrendGrowthThreshold: 8,
    budgetTrendMinutes: 10,
    budgetTrendMinAge: '1m',
    budgetTrendFor: '30s',

    // Native memory regions: the growth of each region of
    // executor_jvm_native_memory_bytes outside the heap (and of the
    // container's tmpfs pages, shmem, and the PySpark workers, python) over
    // this window, recorded per executor with the fastest of them; the
    // non-heap alerts' descriptions name it. The exporter reads the breakdown every 15 minutes at least,
    // so the window should hold two readings.
    nativeRegionWindow: '30m',
    // How often the growth over that window is recorded.
    nativeRegionInterval: '1m',

    // JVM heap nearly full after GC: the smallest heap use over
    // heapAfterGCWindow (the troughs the collector leaves) is above this
    // fraction of the heap's max, while collections run.
    heapAfterGCThreshold: 0.9,
    // The window is the alert's lag; it must hold two scrapes at least
    // (Prometheus 3's ranges leave out their start): raise it to 2m or more
    // with a scrape interval of 30 s or more.
    heapAfterGCWindow: '1m',
    heapAfterGCFor: '30s',
    // The heap alerts' descriptions say how much to raise the heap by for
    // the live data to take this fraction of it.
    heapAfterGCTarget: 0.75,

    // GC overhead: fraction of wall-clock time spent in collections over
    // gcOverheadWindow. HotSpot throws "GC overhead limit exceeded" near 0.98.
    gcOverheadThreshold: 0.3,
    gcOverheadWindow: '2m',
    gcOverheadFor: '1m',

    // Node overcommitted: what the JVMs' heaps may still grow by (heap max
    // minus committed heap, summed over the node) is more than this
    // fraction of the node's available memory.
    nodeOvercommitThreshold: 1,
    nodeOvercommitFor: '1m',

    // Node running out: available memory below this fraction of the total.
    nodeAvailableThreshold: 0.05,
    nodeAvailableFor: '1m',

    // predict_linear over nodeExhaustionWindow says the node's available
    // memory runs out within nodeExhaustionMinutes, and less than
    // nodeExhaustionMinRatio of it is left already.
    nodeExhaustionWindow: '30m',
    nodeExhaustionMinutes: 15,
    nodeExhaustionMinRatio: 0.5,
    nodeExhaustionFor: '10m',

    // Node memory pressure: fraction of time some task stalled on memory
    // (PSI "some").
    memoryPressureThreshold: 0.2,
    memoryPressureFor: '10m',

    // Window in which a new OOM kill counts as new.
    oomKillWindow: '10m',

    // Window in which an executor's end counts as new; the JVM's last
    // heap figures are looked up over it too.
    exitWindow: '10m',

    // Right-sizing (rightsizing.libsonnet, docs/runbook.md#right-sizing):
    // per application name and instance type, the Spark memory settings
    // that the executors' peaks over the window say would have fitted.
    rightsizing: {
      // How far back the peaks, runs and kills are looked at.
      window: '7d',
      // The recording rules' evaluation interval: the executor-hours
      // behind the savings are counted in it.
      interval: '1m',
      // Each run's largest executor peak (every executor of a run has the
      // same settings), then this quantile over the runs in the window.
      quantile: 0.95,
      // spark.executor.memory: the heap's live data takes at most this
      // fraction of it, so that the collector has room to work.
      heapLiveTarget: 0.7,
      // memoryOverhead and pyspark.memory: the peak plus this margin.
      margin: 0.15,
      // Spark's own floors: an executor heap below 450 MiB does not start
      // (1.5 x its 300 MiB reserved memory); the overhead is 384 MiB at
      // least.
      memoryFloorBytes: 450 * 1024 * 1024,
      overheadFloorBytes: 384 * 1024 * 1024,
      // A kill of the matching cause in the window: never below the
      // current setting raised by this ratio, and at least this many bytes.
      killBumpRatio: 1.2,
      killBumpBytes: 256 * 1024 * 1024,
      // The three settings together fit in this fraction of the smallest
      // node of the instance type (the rest is the node's own); the heap
      // gives way.
      nodeFraction: 0.9,
      // Figures are rounded up to this.
      roundBytes: 64 * 1024 * 1024,
      // No recommendation from fewer executors or runs than this.
      minExecutors: 3,
      minRuns: 1,
    },

    metadataUnavailableFor: '30m',
    collectorFailingFor: '15m',
    exporterDownFor: '5m',

    // Where runbook_url points; the anchor is the alert's section.
    runbookURL: 'https://github.com/executor-exporter/executor_exporter/blob/main/docs/runbook.md',

    // Dashboards.
    dashboardTags: ['executor-exporter'],
    dashboardNamePrefix: 'Executor / ',
    dashboardUIDPrefix: 'executor-exporter-',
    dashboardRefresh: '30s',
  },
}
