// Package statuspage renders the exporter's own status page, `/`, and its
// JSON twin, `/status.json`: the machine, every JVM with its memory budget,
// and the recent OOM kills and executor exits with their verdicts — a
// node-local post-mortem for when Prometheus is far away or not scraping
// yet.
//
// It renders a Snapshot, a plain struct the collector package assembles
// from what the collectors already hold in memory; nothing here reads
// /proc, a cgroup or the network, and nothing runs unless a page is asked
// for. docs/status-page.md describes the page and the JSON fields.
package statuspage

import "time"

// DocsURL is where the page links for its own documentation.
const DocsURL = "https://github.com/executor-exporter/executor_exporter/blob/main/docs/status-page.md"

// Snapshot is everything the page shows. Its JSON form is /status.json;
// the field names are part of the documented interface.
type Snapshot struct {
	Version     string    `json:"version"`
	Time        time.Time `json:"time"`         // when the snapshot was assembled
	MetricsPath string    `json:"metrics_path"` // where the page links for /metrics

	// Machine is nil while the cloud collector has not finished its first
	// lookup, or when it is disabled.
	Machine *Machine `json:"machine"`

	// JVMsSampled is when the JVM figures were read (the tracker's last
	// sampling); zero before the first.
	JVMsSampled time.Time `json:"jvms_sampled_at"`
	JVMs        []JVM     `json:"jvms"`
	// JVMsDropped counts JVMs found but not read (--jvm.max-processes).
	JVMsDropped int `json:"jvms_dropped"`

	// KillsFollowed is false when the oom collector is disabled or cannot
	// read the kernel log; Kills is then empty because nobody looked.
	KillsFollowed bool   `json:"oom_kills_followed"`
	Kills         []Kill `json:"oom_kills"` // newest first
	// ExitsCounted is false when the exits collector is disabled.
	ExitsCounted bool   `json:"exits_counted"`
	Exits        []Exit `json:"exits"` // newest first
}

// Machine is what the cloud collector knows of this machine.
type Machine struct {
	Provider     string    `json:"provider"`
	Platform     string    `json:"platform"`
	InstanceType string    `json:"instance_type"`
	Lifecycle    string    `json:"lifecycle"` // on-demand, spot, unknown
	Region       string    `json:"region"`
	Zone         string    `json:"zone"`
	InstanceID   string    `json:"instance_id"`
	Node         string    `json:"node"`
	NodePool     string    `json:"node_pool"`
	Source       string    `json:"source"`
	Notices      []Notice  `json:"interruption_notices"`
	LastRefresh  time.Time `json:"last_refresh"` // zero if no refresh has succeeded
}

// Notice is one kind of interruption notice and whether it is pending.
type Notice struct {
	Event   string    `json:"event"`
	Pending bool      `json:"pending"`
	Time    time.Time `json:"time"` // when the interruption happens; zero if not announced
}

// Identity names a JVM; empty fields are unknown.
type Identity struct {
	PID        int    `json:"pid"`
	Role       string `json:"role"` // executor, driver, jvm
	AppID      string `json:"app_id"`
	ExecutorID string `json:"executor_id"`
	Namespace  string `json:"namespace"`
	Pod        string `json:"pod"`
}

// Memory is a JVM's memory as last sampled. Byte counts are 0 when
// unknown; ContainerLimit is 0 when the container is unlimited.
type Memory struct {
	HeapUsed         uint64 `json:"heap_used_bytes"`
	HeapCommitted    uint64 `json:"heap_committed_bytes"`
	HeapMax          uint64 `json:"heap_max_bytes"`
	NonHeapUsed      uint64 `json:"nonheap_used_bytes"`
	NonHeapCommitted uint64 `json:"nonheap_committed_bytes"`
	// Resident memory of the JVM's process tree, by kind.
	RSSJVM         uint64 `json:"rss_jvm_bytes"`
	RSSPython      uint64 `json:"rss_python_bytes"`
	RSSOther       uint64 `json:"rss_other_bytes"`
	ContainerLimit uint64 `json:"container_limit_bytes"`
	ContainerUsage uint64 `json:"container_usage_bytes"`
}

// JVM is one row of the JVM table.
type JVM struct {
	Identity
	MainClass string `json:"main_class"`
	// Counters is "hsperfdata" when the heap figures come from HotSpot's
	// counters, or why the JVM publishes none (use_perf_data_off,
	// perf_disable_shared_mem, no_file): then only RSS and the container
	// are known.
	Counters string `json:"counters"`
	Memory
	Peaks Peaks `json:"peaks"`
	// ContainerPressure is the container's memory pressure; nil when the
	// kernel gives none (cgroup v1, or v2 without PSI).
	ContainerPressure *Pressure `json:"container_pressure,omitempty"`
}

// Pressure is a container's pressure stall information (cgroup v2
// memory.pressure): the share of the last 10 s its tasks stalled waiting
// for memory, in percent. Some: at least one task; full: all at once.
type Pressure struct {
	SomeAvg10 float64 `json:"some_avg10_percent"`
	FullAvg10 float64 `json:"full_avg10_percent"`
}

// Peaks are a JVM's highest figures since it was first read, which the
// right-sizing rules compare the Spark settings with; 0 is unknown.
type Peaks struct {
	HeapLive  uint64 `json:"heap_live_bytes"` // what survived collections: spark.executor.memory
	NonHeap   uint64 `json:"nonheap_bytes"`   // resident beyond the heap: memoryOverhead
	Python    uint64 `json:"python_bytes"`    // the PySpark workers: pyspark.memory
	Container uint64 `json:"container_bytes"` // the container's, kept by the kernel
	Resident  uint64 `json:"resident_bytes"`  // the JVM process's VmHWM
}

// Kill is one kernel OOM kill and its verdict.
type Kill struct {
	Time time.Time `json:"time"` // when the exporter read the kill from the kernel log
	PID  int       `json:"pid"`
	Task string    `json:"task"` // the victim's command name, as the kernel printed it
	// Namespace and Pod name the victim's pod, tracked JVM or not, when
	// the pod list had it at the kill.
	Namespace  string `json:"namespace"`
	Pod        string `json:"pod"`
	Constraint string `json:"constraint"`
	Cause      string `json:"cause"`  // heap, native, node, unknown
	Reason     string `json:"reason"` // the figures behind the verdict
	Advice     string `json:"advice"` // what to change; empty when there is nothing to say
	// Region is what grew most outside the heap, for a native kill: a
	// region of the JVM's breakdown, shmem or python; empty when unknown.
	Region string `json:"region,omitempty"`
	// KilledAnonRSS is the victim's anonymous resident memory as the
	// kernel counted it at the kill.
	KilledAnonRSS uint64 `json:"killed_anon_rss_bytes"`
	// Victim is the tracked JVM the kill hit, and LastSample what it looked
	// like last; both nil when the victim was not a tracked JVM.
	Victim     *Identity `json:"victim"`
	LastSample *Sample   `json:"last_sample"`
}

// Sample is a victim's last reading before it died.
type Sample struct {
	Time time.Time `json:"time"`
	Memory
}

// Exit is one tracked JVM that ended and how.
type Exit struct {
	Time time.Time `json:"time"`
	Identity
	Reason string `json:"reason"`           // oom_killed, heap_exhausted, interrupted, killed, exited, unknown
	Detail string `json:"detail"`           // the evidence
	Region string `json:"region,omitempty"` // what grew most, for a native OOM kill
}
