// Package yarntest is a stand-in YARN NodeManager and ResourceManager for
// tests, written from Hadoop's documented REST API (NodeManagerRest.md,
// ResourceManagerRest.md), and a Monitor that enforces a container's
// memory allocation on real processes by the NodeManager's documented
// rule (ContainersMonitorImpl). Imported only from tests.
package yarntest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Modes a server can be put in, for the failure tests.
const (
	ModeOK        = ""
	ModeForbidden = "403"      // every request answered 403
	ModeHang      = "hang"     // requests are never answered (until the server closes)
	ModeGarbage   = "garbage"  // 50 MB of bytes that are no JSON
	ModeKerberos  = "kerberos" // 401 with WWW-Authenticate: Negotiate
)

// Container is a container as the stand-in NodeManager lists it.
type Container struct {
	ID                  string `json:"id"`
	State               string `json:"state"`
	ExitCode            int    `json:"exitCode"`
	Diagnostics         string `json:"diagnostics"`
	User                string `json:"user"`
	TotalMemoryNeededMB int64  `json:"totalMemoryNeededMB"`
	TotalVCoresNeeded   int64  `json:"totalVCoresNeeded"`
	ContainerLogsLink   string `json:"containerLogsLink"`
	NodeID              string `json:"nodeId"`
	ExecutionType       string `json:"executionType"`
	// finishedAt is when it completed; it is dropped Linger after.
	finishedAt time.Time
}

// ExitInvalid is a running container's exit status.
const ExitInvalid = -1000

// Server serves a NodeManager's /ws/v1/node/… and a ResourceManager's
// /ws/v1/cluster/apps/{id} on one httptest server.
type Server struct {
	*httptest.Server
	// Linger is how long a finished container stays listed (a few seconds
	// on a real NodeManager).
	Linger time.Duration

	mu         sync.Mutex
	mode       string
	containers []*Container
	apps       map[string]map[string]any
	requests   map[string]int
	info       map[string]any
	hang       chan struct{}
}

// NewServer starts a stand-in with no containers, both checks on.
func NewServer() *Server {
	s := &Server{Linger: 3 * time.Second, apps: map[string]map[string]any{}, requests: map[string]int{}, hang: make(chan struct{}),
		info: map[string]any{"id": "node-1:8041", "nodeHostName": "node-1", "nodeManagerVersion": "3.3.6",
			"hadoopVersion": "3.3.6", "pmemCheckEnabled": true, "vmemCheckEnabled": true, "nodeHealthy": true,
			"totalPmemAllocatedContainersMB": 8192, "totalVmemAllocatedContainersMB": 17204}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close unblocks hanging requests and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.hang:
	default:
		close(s.hang)
	}
	s.mu.Unlock()
	s.Server.CloseClientConnections()
	s.Server.Close()
}

// SetMode puts the server in a failure mode (ModeOK to leave it).
func (s *Server) SetMode(mode string) { s.mu.Lock(); s.mode = mode; s.mu.Unlock() }

// SetNodeInfo sets a field of /ws/v1/node/info.
func (s *Server) SetNodeInfo(key string, v any) { s.mu.Lock(); s.info[key] = v; s.mu.Unlock() }

// Requests returns how many requests a path prefix got.
func (s *Server) Requests(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p, c := range s.requests {
		if strings.HasPrefix(p, prefix) {
			n += c
		}
	}
	return n
}

// AddApp makes the ResourceManager know an application.
func (s *Server) AddApp(id, name, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[id] = map[string]any{"id": id, "name": name, "user": user, "queue": "default", "state": "RUNNING",
		"applicationType": "SPARK", "finalStatus": "UNDEFINED"}
}

// Launch lists a RUNNING container with an allocation of mb MiB.
func (s *Server) Launch(id string, mb int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.containers = append(s.containers, &Container{ID: id, State: "RUNNING", ExitCode: ExitInvalid, User: "yarn",
		TotalMemoryNeededMB: mb, TotalVCoresNeeded: 1, NodeID: "node-1:8041", ExecutionType: "GUARANTEED",
		ContainerLogsLink: "http://node-1:8042/node/containerlogs/" + id + "/yarn"})
}

// Finish completes a container with an exit status and diagnostics, as the
// NodeManager does after a kill or an exit; it is listed COMPLETE for
// Linger, then dropped.
func (s *Server) Finish(id string, exitCode int, diagnostics string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.containers {
		if c.ID == id {
			c.State, c.ExitCode, c.Diagnostics, c.finishedAt = "COMPLETE", exitCode, diagnostics, time.Now()
		}
	}
}

// Exited completes a container whose process ended by itself with code, as
// the NodeManager reports it; a signal's end (137, 143) that the
// NodeManager did not send says "Killed by external signal": a kernel OOM
// kill in a strict cgroup, or the elastic OOM handler's SIGKILL.
func (s *Server) Exited(id string, code int) {
	diag := fmt.Sprintf("[2024-01-01 00:00:00.000]Exception from container-launch.\nContainer id: %s\nExit code: %d\n\n[2024-01-01 00:00:00.001]Container exited with a non-zero exit code %d. \n", id, code, code)
	if code == 137 || code == 143 {
		diag += "[2024-01-01 00:00:00.001]Killed by external signal\n"
	}
	if code == 0 {
		diag = ""
	}
	s.Finish(id, code, diag)
}

// Release is the ApplicationMaster's stop request (Spark's dynamic
// allocation giving an executor back): exit status -105.
func (s *Server) Release(id string) {
	s.Finish(id, -105, "Container killed by the ApplicationMaster.\nContainer killed on request. Exit code is 143\nContainer exited with a non-zero exit code 143. ")
}

// Preempt is the scheduler taking the container back: exit status -102.
func (s *Server) Preempt(id string) {
	s.Finish(id, -102, "Container preempted by scheduler")
}

// Listed reports whether the NodeManager lists a container now.
func (s *Server) Listed(id string) bool {
	for _, c := range s.list() {
		if c.ID == id {
			return true
		}
	}
	return false
}

func (s *Server) list() []Container {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := s.containers[:0]
	var out []Container
	for _, c := range s.containers {
		if !c.finishedAt.IsZero() && time.Since(c.finishedAt) > s.Linger {
			continue
		}
		keep = append(keep, c)
		out = append(out, *c)
	}
	s.containers = keep
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	mode := s.mode
	s.requests[r.URL.Path]++
	hang := s.hang
	s.mu.Unlock()
	switch mode {
	case ModeForbidden:
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	case ModeKerberos:
		w.Header().Set("WWW-Authenticate", "Negotiate")
		http.Error(w, "Authentication required", http.StatusUnauthorized)
		return
	case ModeHang:
		select {
		case <-r.Context().Done():
		case <-hang:
		}
		return
	case ModeGarbage:
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat("{[garbage\x00", 1<<16))
		for written := 0; written < 50<<20; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	path := r.URL.Path
	switch {
	case path == "/ws/v1/node/info" || path == "/ws/v1/node":
		s.mu.Lock()
		body, _ := json.Marshal(map[string]any{"nodeInfo": s.info})
		s.mu.Unlock()
		_, _ = w.Write(body)
	case path == "/ws/v1/node/containers":
		list := s.list()
		if len(list) == 0 {
			_, _ = w.Write([]byte(`{"containers":null}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"containers": map[string]any{"container": list}})
	case strings.HasPrefix(path, "/ws/v1/node/containers/"):
		id := strings.TrimPrefix(path, "/ws/v1/node/containers/")
		for _, c := range s.list() {
			if c.ID == id {
				_ = json.NewEncoder(w).Encode(map[string]any{"container": c})
				return
			}
		}
		notFound(w, "container with id "+id+" not found")
	case strings.HasPrefix(path, "/ws/v1/cluster/apps/"):
		id := strings.TrimPrefix(path, "/ws/v1/cluster/apps/")
		s.mu.Lock()
		app, ok := s.apps[id]
		var body []byte
		if ok {
			body, _ = json.Marshal(map[string]any{"app": app})
		}
		s.mu.Unlock()
		if !ok {
			notFound(w, "app with id: "+id+" not found")
			return
		}
		_, _ = w.Write(body)
	default:
		notFound(w, "no such resource")
	}
}

// notFound answers as Hadoop's web services do: a RemoteException body.
func notFound(w http.ResponseWriter, msg string) {
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string]any{"RemoteException": map[string]any{
		"exception": "NotFoundException", "message": "java.lang.Exception: " + msg,
		"javaClassName": "org.apache.hadoop.yarn.webapp.NotFoundException"}})
}
