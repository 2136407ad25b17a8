(import 'executor.libsonnet') +
(import 'fleet.libsonnet') +
(import 'node.libsonnet') +
(import 'rightsizing.libsonnet')
