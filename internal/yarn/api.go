package yarn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/executor-exporter/executor_exporter/internal/cgroupid"
	"github.com/executor-exporter/executor_exporter/internal/labelvalue"
)

// MaxBodyBytes bounds an answer of the NodeManager or ResourceManager: a
// node's container list with a few hundred containers is well under 1 MiB.
// A longer body is an error, read no further.
const MaxBodyBytes = 4 << 20

// MaxContainers bounds the containers taken from one list.
const MaxContainers = 2000

// MaxDiagnosticsBytes caps the diagnostics kept per container once read:
// the NodeManager keeps the last yarn.nodemanager.container-diagnostics-maximum-size
// characters (10,000), most of them a dump of the process tree. The kill
// they name is parsed from the whole text first.
const MaxDiagnosticsBytes = 8 << 10

// Container states, as the NodeManager's web services write them: its own
// state machine's (nodemanager's ContainerState), not the API's
// NEW/RUNNING/COMPLETE.
const (
	StateNew                = "NEW"
	StateLocalizing         = "LOCALIZING"
	StateLocalizationFailed = "LOCALIZATION_FAILED"
	StateScheduled          = "SCHEDULED"
	StateRunning            = "RUNNING"
	StateRelaunching        = "RELAUNCHING"
	StateReinitializing     = "REINITIALIZING"
	StateReinitAwaitingKill = "REINITIALIZING_AWAITING_KILL"
	StateExitedSuccess      = "EXITED_WITH_SUCCESS"
	StateExitedFailure      = "EXITED_WITH_FAILURE"
	StateKilling            = "KILLING"
	StateCleanedUpAfterKill = "CONTAINER_CLEANEDUP_AFTER_KILL"
	StateCleaningUp         = "CONTAINER_RESOURCES_CLEANINGUP"
	StateDone               = "DONE"
	StatePausing            = "PAUSING"
	StatePaused             = "PAUSED"
	StateResuming           = "RESUMING"
)

// Ended reports whether a NodeManager state says the container's process
// has ended or is being killed, so that its exit status is the last word:
// KILLING carries the kill's status (-104, -106, …) from the moment the
// NodeManager decides, while a RUNNING container that was relaunched still
// carries its previous attempt's. ok is false for a state that is not the
// NodeManager's (an older or patched build).
func Ended(state string) (ended, ok bool) {
	switch state {
	case StateLocalizationFailed, StateExitedSuccess, StateExitedFailure, StateKilling,
		StateCleanedUpAfterKill, StateCleaningUp, StateDone:
		return true, true
	case StateNew, StateLocalizing, StateScheduled, StateRunning, StateRelaunching, StateReinitializing,
		StateReinitAwaitingKill, StatePausing, StatePaused, StateResuming:
		return false, true
	}
	return false, false
}

// Exit statuses of a container the framework ended (ContainerExitStatus);
// a container whose process ended by itself has the process's exit code.
const (
	ExitInvalid           = -1000
	ExitAborted           = -100
	ExitDisksFailed       = -101
	ExitPreempted         = -102
	ExitKilledVmem        = -103
	ExitKilledPmem        = -104
	ExitKilledByAppMaster = -105
	ExitKilledByRM        = -106
	ExitKilledAfterApp    = -107
	ExitKilledByScheduler = -108
	ExitKilledExcessLogs  = -109 // trunk: the container log monitor (KILLED_FOR_EXCESS_LOGS)
)

// MiB is what totalMemoryNeededMB counts in: YARN's "MB" are mebibytes
// (ContainersMonitorImpl multiplies by 1024*1024).
const MiB = 1 << 20

// APIContainer is one container as the NodeManager lists it.
type APIContainer struct {
	ID                  string `json:"id"`
	State               string `json:"state"`
	ExitCode            int    `json:"exitCode"`
	Diagnostics         string `json:"diagnostics"`
	User                string `json:"user"`
	TotalMemoryNeededMB int64  `json:"totalMemoryNeededMB"`
	TotalVCoresNeeded   int64  `json:"totalVCoresNeeded"`
	NodeID              string `json:"nodeId"`
	ExecutionType       string `json:"executionType"`
}

// containerList is {"containers":{"container":[…]}}. A node with none
// answers {"containers":null} (Hadoop 2), {"containers":{}} (Hadoop 3) or
// {"containers":""} (trunk's Jersey 2). A single object in place of the
// array is taken too: Jersey's JSON notations differ on lists of one
// (Hadoop's resolver asks for the natural one, which writes an array; the
// mapped default writes the bare element), and a proxy or older build may
// use either.
type containerList struct {
	Containers json.RawMessage `json:"containers"`
}

// ParseContainers parses /ws/v1/node/containers.
func ParseContainers(data []byte) ([]APIContainer, error) {
	if len(data) > MaxBodyBytes {
		return nil, fmt.Errorf("containers: body larger than %d bytes", MaxBodyBytes)
	}
	var l containerList
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("containers: %w", err)
	}
	outer := bytes.TrimSpace(l.Containers)
	switch {
	case len(outer) == 0:
		return nil, fmt.Errorf("containers: no \"containers\" in the answer")
	case bytes.Equal(outer, []byte("null")), bytes.Equal(outer, []byte(`""`)):
		return nil, nil // an idle node
	case outer[0] != '{':
		return nil, fmt.Errorf("containers: %.32s is no list", outer)
	}
	var inner struct {
		Container json.RawMessage `json:"container"`
	}
	if err := json.Unmarshal(outer, &inner); err != nil {
		return nil, fmt.Errorf("containers: %w", err)
	}
	raw := bytes.TrimSpace(inner.Container)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var list []APIContainer
	if raw[0] == '{' {
		var one APIContainer
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, fmt.Errorf("containers: %w", err)
		}
		list = []APIContainer{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("containers: %w", err)
	}
	if len(list) > MaxContainers {
		return nil, fmt.Errorf("containers: %d listed, more than %d", len(list), MaxContainers)
	}
	out := list[:0]
	for _, c := range list {
		c, err := c.check()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseContainer parses /ws/v1/node/containers/{id}: {"container":{…}}.
func ParseContainer(data []byte) (APIContainer, error) {
	if len(data) > MaxBodyBytes {
		return APIContainer{}, fmt.Errorf("container: body larger than %d bytes", MaxBodyBytes)
	}
	var one struct {
		Container *APIContainer `json:"container"`
	}
	if err := json.Unmarshal(data, &one); err != nil {
		return APIContainer{}, fmt.Errorf("container: %w", err)
	}
	if one.Container == nil {
		return APIContainer{}, fmt.Errorf("container: no \"container\" in the answer")
	}
	return one.Container.check()
}

// check validates what becomes a label or a key and caps the rest.
func (c APIContainer) check() (APIContainer, error) {
	if !ValidContainerID(c.ID) {
		return APIContainer{}, fmt.Errorf("container id %q is not a YARN container id", labelvalue.Cap(c.ID, 64))
	}
	if c.TotalMemoryNeededMB < 0 || c.TotalMemoryNeededMB > 1<<30 {
		return APIContainer{}, fmt.Errorf("container %s: totalMemoryNeededMB %d out of range", c.ID, c.TotalMemoryNeededMB)
	}
	c.State = labelvalue.Cap(c.State, 32)
	c.User = labelvalue.Cap(c.User, 64)
	c.NodeID = labelvalue.Cap(c.NodeID, 256)
	c.ExecutionType = labelvalue.Cap(c.ExecutionType, 32)
	// Diagnostics stay whole (the body is bounded): the kill they name may
	// be anywhere in them. The Source parses them, then keeps less.
	return c, nil
}

// ValidContainerID reports whether s is a YARN container id:
// container_<cluster timestamp>_<app>_<attempt>_<container>, or the
// epoch form container_e<epoch>_<timestamp>_<app>_<attempt>_<container>.
func ValidContainerID(s string) bool {
	return len(s) <= 128 && cgroupid.IsYARNContainer(s)
}

// AppIDOf returns the application id of a container id:
// container_1700000000000_0042_01_000002 → application_1700000000000_0042.
func AppIDOf(containerID string) (string, bool) {
	if !ValidContainerID(containerID) {
		return "", false
	}
	parts := strings.Split(strings.TrimPrefix(containerID, "container_"), "_")
	if len(parts) == 5 {
		parts = parts[1:]
	}
	return "application_" + parts[0] + "_" + parts[1], true
}

// ValidAppID reports whether s is application_<timestamp>_<sequence>.
func ValidAppID(s string) bool {
	rest, ok := strings.CutPrefix(s, "application_")
	if !ok || len(s) > 64 {
		return false
	}
	ts, seq, ok := strings.Cut(rest, "_")
	return ok && cgroupid.IsDecimal(ts) && cgroupid.IsDecimal(seq)
}

// NodeInfo is the part of /ws/v1/node/info the exporter uses.
type NodeInfo struct {
	NodeHostName       string `json:"nodeHostName"`
	NodeManagerVersion string `json:"nodeManagerVersion"`
	HadoopVersion      string `json:"hadoopVersion"`
	// Absent before Hadoop 2.10/3.x (YARN-7219): nil when the NodeManager
	// does not say, and yarn-site.xml's values stand.
	PmemCheckEnabled               *bool `json:"pmemCheckEnabled"`
	VmemCheckEnabled               *bool `json:"vmemCheckEnabled"`
	TotalPmemAllocatedContainersMB int64 `json:"totalPmemAllocatedContainersMB"`
	TotalVmemAllocatedContainersMB int64 `json:"totalVmemAllocatedContainersMB"`
	NodeHealthy                    bool  `json:"nodeHealthy"`
}

// ParseNodeInfo parses /ws/v1/node/info: {"nodeInfo":{…}}.
func ParseNodeInfo(data []byte) (NodeInfo, error) {
	if len(data) > MaxBodyBytes {
		return NodeInfo{}, fmt.Errorf("node info: body larger than %d bytes", MaxBodyBytes)
	}
	var v struct {
		NodeInfo *NodeInfo `json:"nodeInfo"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return NodeInfo{}, fmt.Errorf("node info: %w", err)
	}
	if v.NodeInfo == nil {
		return NodeInfo{}, fmt.Errorf("node info: no \"nodeInfo\" in the answer")
	}
	n := *v.NodeInfo
	n.NodeHostName = labelvalue.Cap(n.NodeHostName, 256)
	n.NodeManagerVersion = labelvalue.Cap(n.NodeManagerVersion, 64)
	n.HadoopVersion = labelvalue.Cap(n.HadoopVersion, 64)
	return n, nil
}

// App is the part of /ws/v1/cluster/apps/{id} the exporter uses.
type App struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	User            string `json:"user"`
	Queue           string `json:"queue"`
	State           string `json:"state"`
	ApplicationType string `json:"applicationType"`
}

// ParseApp parses /ws/v1/cluster/apps/{id}: {"app":{…}}. The name is a
// user's string and becomes a label value: it is capped here.
func ParseApp(data []byte) (App, error) {
	if len(data) > MaxBodyBytes {
		return App{}, fmt.Errorf("app: body larger than %d bytes", MaxBodyBytes)
	}
	var v struct {
		App *App `json:"app"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return App{}, fmt.Errorf("app: %w", err)
	}
	if v.App == nil {
		return App{}, fmt.Errorf("app: no \"app\" in the answer")
	}
	a := *v.App
	if !ValidAppID(a.ID) {
		return App{}, fmt.Errorf("app id %q is not a YARN application id", labelvalue.Cap(a.ID, 64))
	}
	a.Name = labelvalue.Cap(a.Name, labelvalue.MaxBytes)
	a.User = labelvalue.Cap(a.User, 64)
	a.Queue = labelvalue.Cap(a.Queue, 256)
	a.State = labelvalue.Cap(a.State, 32)
	a.ApplicationType = labelvalue.Cap(a.ApplicationType, 64)
	return a, nil
}
