//go:build !linux

package e2e

// The end-to-end tests start the exporter, put JVMs in memory cgroups and
// read /dev/kmsg: they run on Linux only. This import stops them elsewhere
// with one clear error.
import _ "executor_exporter_runs_on_linux_only"
