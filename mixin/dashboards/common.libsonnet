// Variables and selectors the three dashboards share.
local g = import '../lib/dashboard.libsonnet';

{
  // base is a dashboard of this mixin with its title prefix, uid prefix,
  // tags and refresh applied.
  base(c, name, uid, description)::
    g.dashboard(c.dashboardNamePrefix + name, c.dashboardUIDPrefix + uid, description, c.dashboardTags) {
      refresh: c.dashboardRefresh,
    },

  // The scrape jobs of executor_exporter, whatever they are called.
  jobVariable(c)::
    g.queryVariable('job', 'Job', c.jobVariableSelector, 'job', allValue='.+'),

  // The machines (exporters) of the selected jobs.
  instanceVariable(c)::
    g.queryVariable('instance', 'Instance', 'executor_scrape_collector_success{%s, %s}' % [$.job, $.cluster(c)], 'instance', allValue='.+'),

  clusterVariable(c)::
    // Without a cluster label the variable has no values, and its "All"
    // (.*) matches the empty label: the dashboards work either way.
    g.queryVariable('cluster', 'Cluster', 'executor_scrape_collector_success{%s}' % $.job, c.clusterLabel, multi=false),

  // Matchers of the job variable: every selector of every panel starts
  // with them (config's selector is for rules and alerts).
  job:: 'job=~"$job"',

  // Matchers of the cluster variable, to add to any selector.
  cluster(c):: '%s=~"$cluster"' % c.clusterLabel,

  // The pools the JVM reports that are not part of the heap.
  nonHeapPools:: 'Metaspace|Compressed Class Space|CodeHeap.*|Code Cache',
}
