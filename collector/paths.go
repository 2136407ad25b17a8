package collector

import (
	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/procfs"
)

var (
	procPath = kingpin.Flag("path.procfs", "procfs mountpoint.").Default(procfs.DefaultMountPoint).String()
	sysPath  = kingpin.Flag("path.sysfs", "sysfs mountpoint.").Default("/sys").String()
)

// Paths are the two roots every file the exporter reads lives under,
// passed to constructors so tests can point them at fixtures. There is no
// root-filesystem flag: a JVM's hsperfdata is reached through
// /proc/<pid>/root, which works from any mount namespace.
type Paths struct {
	ProcFS string
	SysFS  string
}

// FlagPaths returns the roots given on the command line.
func FlagPaths() Paths {
	return Paths{ProcFS: *procPath, SysFS: *sysPath}
}
