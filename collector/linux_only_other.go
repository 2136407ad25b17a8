//go:build !linux

package collector

// The collectors read /proc, cgroups, /dev/kmsg and the JVMs' hsperfdata
// as Linux lays them out: the exporter is built for Linux only. The parsers
// under internal/ build anywhere; for another system, this import stops the
// build with one clear error instead of many undefined Linux-only names.
import _ "executor_exporter_runs_on_linux_only"
