// Package yarntest is a stand-in YARN NodeManager and ResourceManager for
// tests, speaking as Hadoop 3.3's do (NodeManagerRest.md and the
// NodeManager's webapp dao ContainerInfo: its own container states,
// ContainerImpl's stamped diagnostics, ContainerManagerImpl's and
// LinuxContainerExecutor's texts), and a Monitor that enforces a
// container's memory allocation on real processes by
// ContainersMonitorImpl's rule. Imported only from tests.
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
	doneState  string // the state it reaches once cleaned up
}

// Forms of an idle node's container list.
const (
	IdleNull    = `{"containers":null}` // Hadoop 2
	IdleEmpty   = `{"containers":{}}`   // Hadoop 3
	IdleJersey2 = `{"containers":""}`   // trunk (Jersey 2)
)

// cleanUp is how long a finished container stays in its first state
// (KILLING, EXITED_WITH_FAILURE) before it is DONE.
const cleanUp = 300 * time.Millisecond

// Stamp is ContainerImpl's prefix of a diagnostics entry.
func Stamp(t time.Time) string { return "[" + t.Format("2006-01-02 15:04:05.000") + "]" }

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
	idle       string
	diagMax    map[string]int
	hang       chan struct{}
}

// NewServer starts a stand-in with no containers, both checks on.
func NewServer() *Server {
	s := &Server{Linger: 3 * time.Second, idle: IdleEmpty, apps: map[string]map[string]any{}, requests: map[string]int{}, hang: make(chan struct{}),
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
	s.CloseClientConnections()
	s.Server.Close()
}

// SetMode puts the server in a failure mode (ModeOK to leave it).
func (s *Server) SetMode(mode string) { s.mu.Lock(); s.mode = mode; s.mu.Unlock() }

// SetDiagnosticsMax sets yarn.nodemanager.container-diagnostics-maximum-size
// (10,000 by default) for one container: ContainerImpl keeps the last n
// characters of its diagnostics, cutting from the front.
func (s *Server) SetDiagnosticsMax(id string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.diagMax == nil {
		s.diagMax = map[string]int{}
	}
	s.diagMax[id] = n
}

// SetIdle sets the form of the idle node's answer (IdleNull, IdleEmpty,
// IdleJersey2).
func (s *Server) SetIdle(form string) { s.mu.Lock(); s.idle = form; s.mu.Unlock() }

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

// Finish completes a container with an exit status and diagnostics: a
// kill the NodeManager decided (a negative status) is KILLING, a process
// that ended EXITED_WITH_SUCCESS or EXITED_WITH_FAILURE; either is DONE
// after its clean-up, listed for Linger, then dropped. Each line of
// diagnostics is stamped as ContainerImpl.addDiagnostics does.
func (s *Server) Finish(id string, exitCode int, diagnostics string) {
	s.finish(id, exitCode, diagnostics)
}

func (s *Server) finish(id string, exitCode int, diagnostics string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	state := "EXITED_WITH_FAILURE"
	switch {
	case exitCode == 0:
		state = "EXITED_WITH_SUCCESS"
	case exitCode < 0:
		state = "KILLING"
	}
	max, ok := s.diagMax[id]
	if !ok {
		max = 10000
	}
	if len(diagnostics) > max {
		diagnostics = diagnostics[len(diagnostics)-max:]
	}
	for _, c := range s.containers {
		if c.ID == id {
			c.State, c.ExitCode, c.Diagnostics, c.finishedAt, c.doneState = state, exitCode, diagnostics, time.Now(), "DONE"
		}
	}
}

// stamped joins entries, each stamped now.
func stamped(entries ...string) string {
	var b strings.Builder
	now := time.Now()
	for _, e := range entries {
		b.WriteString(Stamp(now) + e + "\n")
	}
	return b.String()
}

// Exited completes a container whose process ended by itself with code,
// as Hadoop 3.3 reports it: LinuxContainerExecutor's "Exception from
// container-launch" for a code other than 137 and 143; for those, Killed.
func (s *Server) Exited(id string, code int) {
	switch code {
	case 0:
		s.finish(id, 0, "")
	case 137, 143:
		s.Killed(id, code)
	default:
		s.finish(id, code, stamped(fmt.Sprintf("Exception from container-launch.\nContainer id: %s\nExit code: %d\n", id, code),
			fmt.Sprintf("Container exited with a non-zero exit code %d. ", code)))
	}
}

// Killed completes a container whose process died of a signal the
// NodeManager did not send (the kernel's OOM killer, elastic control's
// handler, a node agent): LinuxContainerExecutor's line for every 137 and
// 143, ContainerLaunch's exit line, and ContainerImpl's
// KilledExternallyTransition's "Killed by external signal".
func (s *Server) Killed(id string, code int) {
	s.finish(id, code, stamped(fmt.Sprintf("Container killed on request. Exit code is %d", code),
		fmt.Sprintf("Container exited with a non-zero exit code %d. ", code), "Killed by external signal"))
}

// Release is Spark's release of an executor (YarnAllocator.killExecutor →
// releaseAssignedContainer): the ResourceManager has the NodeManager clean
// the container up, exit status -106. The NodeManager's SIGTERM to the
// process group is the caller's to send.
func (s *Server) Release(id string) {
	s.finish(id, -106, stamped("Container Killed by ResourceManager", "Container killed on request. Exit code is 143",
		"Container exited with a non-zero exit code 143. "))
}

// StopByAM is an ApplicationMaster's stopContainers (MapReduce's way, not
// Spark's): exit status -105.
func (s *Server) StopByAM(id string) {
	s.finish(id, -105, stamped("Container killed by the ApplicationMaster.", "Container killed on request. Exit code is 143",
		"Container exited with a non-zero exit code 143. "))
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
		if !c.finishedAt.IsZero() && time.Since(c.finishedAt) > s.Linger+cleanUp {
			continue
		}
		if !c.finishedAt.IsZero() && time.Since(c.finishedAt) > cleanUp && c.doneState != "" {
			c.State = c.doneState
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
			s.mu.Lock()
			idle := s.idle
			s.mu.Unlock()
			_, _ = w.Write([]byte(idle))
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
