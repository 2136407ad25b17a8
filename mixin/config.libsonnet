{
  _config+:: {
    // Selects the exporter's series. Every rule, alert and panel uses it.
    selector: 'job="executor_exporter"',

    // The label that tells Prometheus-wide series of different clusters
    // apart (external labels, a federation label). Joins and aggregations
    // keep it, so one Prometheus can hold several clusters; when it is
    // absent, it is simply empty everywhere.
    clusterLabel: 'cluster',

    // Labels of executor_instance_info copied onto joined series, so
    // anything can be grouped by how the machine was bought.
    instanceLabels: ['provider', 'instance_type', 'lifecycle', 'zone', 'node_pool'],

    // Window of rate(), increase() and min_over_time() in rules and alerts.
    rateInterval: '5m',

    // JVM heap nearly full after GC: the smallest heap use over
    // heapAfterGCWindow (which, while collections run, is what the
    // collector could not free) is above this fraction of the heap's max.
    heapAfterGCThreshold: 0.9,
    heapAfterGCWindow: '5m',
    heapAfterGCFor: '5m',

    // GC overhead: fraction of wall-clock time spent in collections.
    // HotSpot throws "GC overhead limit exceeded" near 0.98.
    gcOverheadThreshold: 0.3,
    gcOverheadFor: '5m',

    // Working set of the executor's container against its memory limit.
    workingSetThreshold: 0.9,
    workingSetFor: '5m',

    // predict_linear over exhaustionWindow says the container's working set
    // (or the node's available memory) runs out within exhaustionMinutes.
    exhaustionWindow: '30m',
    exhaustionMinutes: 15,
    // Only warn when already this close: a young executor's steep start
    // extrapolates to anything.
    exhaustionMinRatio: 0.5,
    exhaustionFor: '10m',

    // Node memory pressure: fraction of time some task stalled on memory
    // (PSI "some").
    memoryPressureThreshold: 0.2,
    memoryPressureFor: '10m',

    // Window in which a new OOM kill counts as new.
    oomKillWindow: '10m',

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
