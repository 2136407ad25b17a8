// Package fleetsim simulates a fleet of Spark worker nodes as
// executor_exporter would expose them: each node's /metrics is the real
// exporter's scrape in testdata/node.prom (a spot r5.xlarge with two
// executors and one OOM-killed), copied once per simulated JVM with its own
// identity and values.
//
// The fleet is a pure function of its Config and the time: executors start
// and end on every node at the rate Config.MeanLifetime sets, with heaps
// and non-heap memory that move, OOM kills, heap exhaustion and spot
// interruption notices; two calls for the same node and time return the
// same series, so history (pushed as remote-write) and the live scrapes
// that follow it agree. cmd/fleetsim serves it; test/fleet measures a real
// Prometheus scraping it.
package fleetsim
