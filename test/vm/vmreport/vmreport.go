// Package vmreport is what the guest of the VM tests (test/vm/guest, run
// inside the VM) hands the host (test/vm) in the work share: the facts of
// each case, which only the guest can see, as JSON. The host judges them
// together with the exporter's scrapes that the guest saved beside it.
package vmreport

// File is the report's name in the guest's output directory.
const File = "report.json"

// Scrapes the guest saves in the output directory, besides the
// exporter's log (ExporterLog), its /status.json (StatusJSON) and the
// kernel's log at the end (KernelLog, /dev/kmsg's records).
const (
	// BeforeNodeOOM is /metrics once every case but the machine-wide OOM
	// has been decided.
	BeforeNodeOOM = "before-node-oom.prom"
	// Final is /metrics after the machine-wide OOM kill, from the
	// exporter that lived through it.
	Final       = "final.prom"
	StatusJSON  = "status.json"
	ExporterLog = "exporter.log"
	KernelLog   = "kernel.log"
	// DefaultExporterLog is the log of the exporter with the default
	// sampling flags, which only the fast-leak case is judged on.
	DefaultExporterLog = "exporter-default.log"
)

// The Kubernetes cases' pod UIDs and container IDs: the guest names
// their cgroups after them, the host expects them on the JVMs' series.
const (
	SystemdPodUID       = "6f0c8a52-1b3d-4e7f-9a2c-5d4e3f2a1b0c"
	SystemdContainerID  = "3b4f8e2a6c1d9b7e5f0a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a6c8e0b1d"
	CgroupfsPodUID      = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	CgroupfsContainerID = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d"
)

// Report is the guest's side of one boot.
type Report struct {
	Kernel string `json:"kernel"` // uname -r
	// SelfCgroup is the guest program's /proc/self/cgroup: one "0::" line
	// on a machine with only cgroup v2.
	SelfCgroup string `json:"self_cgroup"`
	// Controllers is the root cgroup's cgroup.subtree_control.
	Controllers string           `json:"controllers"`
	Cases       map[string]*Case `json:"cases"`
	// Survived is set when the guest went on after the machine-wide OOM
	// kill and the exporter still answered.
	Survived bool `json:"survived"`
	// Errors are what went wrong in the guest's own work (a JVM that
	// would not start, a cgroup it could not make).
	Errors []string `json:"errors,omitempty"`
}

// Case is one JVM the guest ran, and what happened to it.
type Case struct {
	AppID      string `json:"app_id"`
	ExecutorID string `json:"executor_id"`
	PID        int    `json:"pid"` // the java process, in the VM's pid namespace
	// CgroupDir is the cgroup's directory under /sys/fs/cgroup, Cgroup
	// its path as /proc/<pid>/cgroup showed it (the "0::" line's).
	CgroupDir   string `json:"cgroup_dir"`
	Cgroup      string `json:"cgroup"`
	CgroupLimit uint64 `json:"cgroup_limit"` // memory.max as set; 0 for max
	// ProcCgroup is /proc/<pid>/cgroup of the JVM while it ran.
	ProcCgroup string `json:"proc_cgroup"`
	// ExitCode is the JVM's end as a shell reports it (128+signal), or -1
	// while it still ran when the guest finished.
	ExitCode int `json:"exit_code"`
	// CgroupOOMKills is memory.events' oom_kill once the case was over.
	CgroupOOMKills uint64 `json:"cgroup_oom_kills"`
	// ChildPID is the Python child's pid, for the PySpark case.
	ChildPID int `json:"child_pid,omitempty"`
	// CgroupHigh is memory.high as set; 0 for max.
	CgroupHigh uint64 `json:"cgroup_high,omitempty"`
	// Signals are the exporter's figures of the case's container, scraped
	// every second from when the cgroup was half full until the kernel's first
	// OOM kill in the cgroup, which the guest saw at KillSeconds on the
	// same clock (memory.events read every 250 ms); 0 when none came.
	Signals     []Signal `json:"signals,omitempty"`
	KillSeconds float64  `json:"kill_seconds,omitempty"`
	// Waits are what the guest waited for, in order, and whether it came.
	Waits []Wait `json:"waits"`
	// Restarts say why the stand-in was started again: a JVM that ended
	// before it was ready (under emulation) is started once more.
	Restarts []string `json:"restarts,omitempty"`
}

// Wait is one condition the guest waited for.
type Wait struct {
	What    string  `json:"what"`
	OK      bool    `json:"ok"`
	Seconds float64 `json:"seconds"`
}

// Signal is one scrape of a container's series for a case's JVM; a
// series the scrape lacked is -1.
type Signal struct {
	Seconds      float64 `json:"s"`
	Usage        float64 `json:"usage"`
	Limit        float64 `json:"limit"`
	EventsHigh   float64 `json:"events_high"`
	EventsMax    float64 `json:"events_max"`
	PressureSome float64 `json:"pressure_some"`
	PressureFull float64 `json:"pressure_full"`
}
