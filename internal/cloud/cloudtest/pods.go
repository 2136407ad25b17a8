package cloudtest

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
)

// Pod is a pod the API server stand-in serves.
type Pod struct {
	UID, Namespace, Name, Node string
	Labels                     map[string]string
	Annotations                map[string]string
	Containers                 []PodContainer
}

// PodContainer is one container status of a Pod. IDs carry the runtime's
// scheme, as the kubelet writes them ("containerd://<id>").
type PodContainer struct {
	Name, ID string
	// LastID is the previous instance's, after a restart.
	LastID string
}

// Pods is the pod store behind a Kubernetes stand-in; tests change it
// while the exporter runs.
type Pods struct {
	mu    sync.Mutex
	pods  []Pod
	lists int
}

// Set replaces the pods.
func (p *Pods) Set(pods ...Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods = append([]Pod(nil), pods...)
}

// Lists counts the pod lists served.
func (p *Pods) Lists() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lists
}

// NewKubernetesWithPods is NewKubernetes that also serves
// GET /api/v1/pods?fieldSelector=spec.nodeName=<node> from pods: the pods
// bound to that node, as a PodList. A list without that field selector
// is refused with 400, so a client that would list the whole cluster's
// pods fails its test.
func NewKubernetesWithPods(t testing.TB, token string, nodes map[string]string, pods *Pods) *Server {
	s := NewKubernetes(t, token, nodes)
	inner := s.Config.Handler
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pods" {
			inner.ServeHTTP(w, r)
			return
		}
		// Token, hang and failure rules first, as for every path.
		rec := &passThrough{ResponseWriter: w}
		inner.ServeHTTP(rec, r.Clone(r.Context()))
		if rec.wrote {
			return
		}
		if r.Method != http.MethodGet {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		node, ok := nodeSelector(r.URL.Query().Get("fieldSelector"))
		if !ok {
			http.Error(w, "a field selector spec.nodeName=<node> is required here", http.StatusBadRequest)
			return
		}
		pods.mu.Lock()
		pods.lists++
		list := podList(pods.pods, node)
		pods.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(list)
	})
	return s
}

// passThrough swallows the inner handler's 404 for the pods path (it has
// no item there) and passes on anything else it writes.
type passThrough struct {
	http.ResponseWriter
	wrote, swallowed bool
}

func (p *passThrough) WriteHeader(code int) {
	if code == http.StatusNotFound {
		p.swallowed = true
		return
	}
	p.wrote = true
	p.ResponseWriter.WriteHeader(code)
}

func (p *passThrough) Write(b []byte) (int, error) {
	if p.swallowed {
		return len(b), nil
	}
	p.wrote = true
	return p.ResponseWriter.Write(b)
}

func (p *passThrough) Header() http.Header {
	if p.swallowed {
		return http.Header{}
	}
	return p.ResponseWriter.Header()
}

func nodeSelector(sel string) (string, bool) {
	const prefix = "spec.nodeName="
	if len(sel) <= len(prefix) || sel[:len(prefix)] != prefix {
		return "", false
	}
	return sel[len(prefix):], true
}

// podList renders the pods bound to node as the API server does, with the
// bulk a real list carries (managed fields, spec) so that size bounds are
// exercised with realistic objects.
func podList(pods []Pod, node string) []byte {
	type status struct {
		Name         string `json:"name"`
		ContainerID  string `json:"containerID,omitempty"`
		Ready        bool   `json:"ready"`
		RestartCount int    `json:"restartCount"`
		LastState    struct {
			Terminated *struct {
				ContainerID string `json:"containerID"`
				Reason      string `json:"reason"`
			} `json:"terminated,omitempty"`
		} `json:"lastState"`
	}
	type item struct {
		Metadata map[string]any `json:"metadata"`
		Spec     map[string]any `json:"spec"`
		Status   map[string]any `json:"status"`
	}
	items := []item{}
	for _, p := range pods {
		if p.Node != node {
			continue
		}
		var statuses []status
		var containers []map[string]any
		for _, c := range p.Containers {
			st := status{Name: c.Name, ContainerID: c.ID, Ready: c.ID != ""}
			if c.LastID != "" {
				st.RestartCount = 1
				st.LastState.Terminated = &struct {
					ContainerID string `json:"containerID"`
					Reason      string `json:"reason"`
				}{c.LastID, "OOMKilled"}
			}
			statuses = append(statuses, st)
			containers = append(containers, map[string]any{"name": c.Name, "image": "apache/spark:3.5.1",
				"env": []map[string]string{{"name": "SPARK_EXECUTOR_POD_NAME", "value": p.Name}}})
		}
		items = append(items, item{
			Metadata: map[string]any{"uid": p.UID, "namespace": p.Namespace, "name": p.Name,
				"labels": p.Labels, "annotations": p.Annotations, "resourceVersion": "4711",
				"managedFields": []map[string]any{{"manager": "kubelet", "operation": "Update", "fieldsV1": map[string]any{"f:status": map[string]any{}}}}},
			Spec:   map[string]any{"nodeName": p.Node, "containers": containers, "restartPolicy": "Never"},
			Status: map[string]any{"phase": "Running", "containerStatuses": statuses},
		})
	}
	b, _ := json.Marshal(map[string]any{"kind": "PodList", "apiVersion": "v1",
		"metadata": map[string]any{"resourceVersion": "4712"}, "items": items})
	return b
}
