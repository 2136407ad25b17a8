// Package cloudtest provides stand-ins for the AWS, GCP and Azure metadata
// services and the Kubernetes API server that answer as the documented
// services do: IMDSv2 refuses token-less GETs with 401, the GCE metadata
// server refuses requests without Metadata-Flavor: Google with 403, Azure
// IMDS refuses requests without Metadata: true with 400, and the API
// server wants its bearer token. Tests set and delete items while the
// exporter runs to make notices appear and go away.
package cloudtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Server is a metadata service stand-in: a map from URL path to body,
// behind the provider's protocol rules.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	items    map[string]string
	status   map[string]int
	hang     bool
	requests atomic.Int64
	hangDone chan struct{}
	closed   sync.Once
}

func newServer(t testing.TB, useTLS bool, items map[string]string, guard func(w http.ResponseWriter, r *http.Request) bool) *Server {
	s := &Server{items: items, status: map[string]int{}, hangDone: make(chan struct{})}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		hang := s.hang
		s.mu.Unlock()
		if hang {
			// As a metadata address nobody answers: the client's
			// deadline is the only way out.
			select {
			case <-r.Context().Done():
			case <-s.hangDone:
			}
			return
		}
		if !guard(w, r) {
			return
		}
		s.mu.Lock()
		body, ok := s.items[r.URL.Path]
		code := s.status[r.URL.Path]
		s.mu.Unlock()
		switch {
		case code != 0:
			http.Error(w, http.StatusText(code), code)
		case !ok:
			http.NotFound(w, r)
		default:
			if strings.HasPrefix(body, "{") {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
			} else {
				w.Header().Set("Content-Type", "text/plain")
			}
			_, _ = w.Write([]byte(body))
		}
	}))
	if useTLS {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// Close unblocks hanging requests and shuts the server down.
func (s *Server) Close() {
	s.closed.Do(func() { close(s.hangDone) })
	s.Server.Close()
}

// Set makes path answer body.
func (s *Server) Set(path, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[path] = body
	delete(s.status, path)
}

// Delete makes path answer 404.
func (s *Server) Delete(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, path)
	delete(s.status, path)
}

// Fail makes path answer with the HTTP status code.
func (s *Server) Fail(path string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[path] = code
}

// Hang makes every request wait until the client gives up.
func (s *Server) Hang() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = true
}

// Requests counts the requests received so far, refused ones included.
func (s *Server) Requests() int64 {
	return s.requests.Load()
}
