// The executor_exporter monitoring mixin: recording rules, alerts that warn
// before the OOM kill, and Grafana dashboards. Import it and override
// _config to fit your Prometheus:
//
//   (import 'executor_exporter/mixin/mixin.libsonnet') + {
//     _config+:: { selector: 'job="spark-nodes"', clusterLabel: 'k8s_cluster' },
//   }
(import 'config.libsonnet') +
(import 'expressions.libsonnet') +
(import 'rules.libsonnet') +
(import 'rightsizing.libsonnet') +
(import 'alerts.libsonnet') +
(import 'dashboards/dashboards.libsonnet')
