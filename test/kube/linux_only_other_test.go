//go:build !linux

package kube

// The tests put JVMs in memory cgroups and run the exporter in a mount
// namespace of its own: they run on Linux only. This import stops them
// elsewhere with one clear error.
import _ "executor_exporter_runs_on_linux_only"
