package collector

import (
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/procfs"
)

var (
	procPath   = kingpin.Flag("path.procfs", "procfs mountpoint.").Default(procfs.DefaultMountPoint).String()
	sysPath    = kingpin.Flag("path.sysfs", "sysfs mountpoint.").Default("/sys").String()
	rootfsPath = kingpin.Flag("path.rootfs", "Root filesystem mountpoint (the host's / when run in a container).").Default("/").String()
)

// Paths are the three roots every file the exporter reads lives under. They
// are passed explicitly to constructors so tests can point them at fixtures.
type Paths struct {
	ProcFS string
	SysFS  string
	RootFS string
}

// FlagPaths returns the roots given on the command line.
func FlagPaths() Paths {
	return Paths{ProcFS: *procPath, SysFS: *sysPath, RootFS: *rootfsPath}
}

// Proc joins elem under the procfs root.
func (p Paths) Proc(elem ...string) string {
	return filepath.Join(append([]string{p.ProcFS}, elem...)...)
}

// Sys joins elem under the sysfs root.
func (p Paths) Sys(elem ...string) string {
	return filepath.Join(append([]string{p.SysFS}, elem...)...)
}

// Root joins elem under the root filesystem.
func (p Paths) Root(elem ...string) string {
	return filepath.Join(append([]string{p.RootFS}, elem...)...)
}
