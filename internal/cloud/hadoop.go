package cloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Platforms of managed Hadoop clusters, the platform label when no
// Kubernetes Node speaks for the machine.
const (
	PlatformEMR      = "emr"
	PlatformDataproc = "dataproc"
)

// DefaultEMRInfoDir is where EMR writes instance.json, job-flow.json and
// extraInstanceData.json on every node of a cluster.
const DefaultEMRInfoDir = "/mnt/var/lib/info"

// maxEMRFileBytes bounds each file: EMR's are a few KiB.
const maxEMRFileBytes = 256 << 10

// emrInstance is the part of instance.json the node pool is made of.
type emrInstance struct {
	InstanceRole    string `json:"instanceRole"`
	InstanceGroupID string `json:"instanceGroupId"`
	InstanceFleetID string `json:"instanceFleetId"`
	IsMaster        bool   `json:"isMaster"`
}

// ParseEMR makes the node pool of an EMR node from instance.json,
// job-flow.json and extraInstanceData.json (either may be nil):
// emr/<cluster>/<role>/<group or fleet>, role master, core or task. The
// role is instance.json's instanceRole, else extraInstanceData.json's (what
// bootstrap actions read: instance.json documents only isMaster and
// instanceGroupId), else master for isMaster. Parts that are not known are
// left out from the end (emr/<cluster>/<role> without a group id).
func ParseEMR(instanceJSON, jobFlowJSON, extraJSON []byte) (string, error) {
	var inst emrInstance
	if err := json.Unmarshal(instanceJSON, &inst); err != nil {
		return "", fmt.Errorf("instance.json: %w", err)
	}
	if extraJSON != nil && strings.TrimSpace(inst.InstanceRole) == "" {
		var extra emrInstance
		if err := json.Unmarshal(extraJSON, &extra); err != nil {
			return "", fmt.Errorf("extraInstanceData.json: %w", err)
		}
		inst.InstanceRole = extra.InstanceRole
		if inst.InstanceGroupID == "" && inst.InstanceFleetID == "" {
			inst.InstanceGroupID, inst.InstanceFleetID = extra.InstanceGroupID, extra.InstanceFleetID
		}
	}
	var flow struct {
		JobFlowID string `json:"jobFlowId"`
	}
	if jobFlowJSON != nil {
		if err := json.Unmarshal(jobFlowJSON, &flow); err != nil {
			return "", fmt.Errorf("job-flow.json: %w", err)
		}
	}
	role := strings.ToLower(strings.TrimSpace(inst.InstanceRole))
	if role == "" && inst.IsMaster {
		role = "master"
	}
	if role == "" {
		return "", errors.New("instance.json and extraInstanceData.json: no instanceRole")
	}
	group := inst.InstanceGroupID
	if group == "" {
		group = inst.InstanceFleetID
	}
	return joinPool(PlatformEMR, flow.JobFlowID, role, group), nil
}

// readEMR reads the node pool from dir; ok is false when dir holds no
// instance.json (not an EMR node).
func readEMR(dir string) (pool string, ok bool, err error) {
	if dir == "" {
		dir = DefaultEMRInfoDir
	}
	inst, err := readSmall(filepath.Join(dir, "instance.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", true, err
	}
	flow, err := readSmall(filepath.Join(dir, "job-flow.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", true, err
	}
	extra, err := readSmall(filepath.Join(dir, "extraInstanceData.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", true, err
	}
	pool, err = ParseEMR(inst, flow, extra)
	return pool, true, err
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A longer file is an error rather than a silent truncation.
	data, err := io.ReadAll(io.LimitReader(f, maxEMRFileBytes+1))
	if err == nil && len(data) > maxEMRFileBytes {
		err = fmt.Errorf("%s: larger than %d bytes", path, maxEMRFileBytes)
	}
	return data, err
}

// DataprocPool makes the node pool of a Dataproc node from its metadata
// attributes dataproc-role (Master or Worker) and dataproc-cluster-name,
// and its instance name: Dataproc names secondary workers (preemptible or
// Spot by default) <cluster>-sw-<suffix>, primary ones <cluster>-w-<n>.
// dataproc/<cluster>/<role>, role master, worker or secondary-worker.
func DataprocPool(role, cluster, instanceName string) string {
	role = strings.ToLower(strings.TrimSpace(role))
	if role == "worker" && cluster != "" && strings.HasPrefix(instanceName, cluster+"-sw-") {
		role = "secondary-worker"
	}
	return joinPool(PlatformDataproc, cluster, role)
}

// joinPool joins the parts with "/"; a part's own "/" is replaced, so the
// parts stay apart, and trailing empty parts are left out.
func joinPool(parts ...string) string {
	for len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.TrimSpace(p), "/", "_")
	}
	return strings.Join(parts, "/")
}
