//go:build !linux

package collector

// The exporter is built for Linux only (docs/design.md#data-flow): on
// another system, this import stops the build with one clear error instead
// of many undefined Linux-only names.
import _ "executor_exporter_runs_on_linux_only"
