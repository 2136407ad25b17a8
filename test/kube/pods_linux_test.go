package kube

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// podStatus is what the tests read of a pod the kubelet runs.
type podStatus struct {
	Metadata struct {
		UID string `json:"uid"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type, Status string
		} `json:"conditions"`
		ContainerStatuses []struct {
			Name         string `json:"name"`
			ContainerID  string `json:"containerID"`
			Ready        bool   `json:"ready"`
			RestartCount int    `json:"restartCount"`
			LastState    struct {
				Terminated *struct {
					Reason   string `json:"reason"`
					ExitCode int    `json:"exitCode"`
				} `json:"terminated"`
			} `json:"lastState"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// waitPodReady waits until the kubelet reports the pod Running with every
// container ready, and returns its status.
func waitPodReady(t *testing.T, c *cluster, n *node, namespace, name string) podStatus {
	t.Helper()
	var p podStatus
	var body []byte
	defer func() {
		if t.Failed() {
			t.Logf("pod %s/%s: %s\nkubelet:\n%s", namespace, name, body, tail(n.kubelet.Output(), 40))
		}
	}()
	testenv.WaitFor(t, 3*time.Minute, "pod "+namespace+"/"+name+" Running and Ready", func() bool {
		var code int
		code, body = c.do(t, c.AdminToken, http.MethodGet, "/api/v1/namespaces/"+namespace+"/pods/"+name, "", nil)
		if code != http.StatusOK || json.Unmarshal(body, &p) != nil || p.Status.Phase != "Running" {
			return false
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == "Ready" {
				return cond.Status == "True"
			}
		}
		return false
	})
	return p
}
