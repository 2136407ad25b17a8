//go:build !linux

package systemd

// The tests boot Debian's systemd under systemd-nspawn: they run on Linux
// only. This import stops them elsewhere with one clear error.
import _ "executor_exporter_runs_on_linux_only"
