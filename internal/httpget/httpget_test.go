package httpget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestGetCapsTheBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 100))
	}))
	t.Cleanup(srv.Close)
	c := New(Options{Timeout: 2 * time.Second})
	if body, _, err := c.Get(context.Background(), srv.URL, nil, 100); err != nil || len(body) != 100 {
		t.Fatalf("a body at the cap: %d bytes, %v", len(body), err)
	}
	if _, _, err := c.Get(context.Background(), srv.URL, nil, 99); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a body over the cap: %v, want ErrTooLarge", err)
	}
}

func TestGetStatusAndHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata") != "true" {
			w.Header().Set("WWW-Authenticate", "Negotiate")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	c := New(Options{Timeout: 2 * time.Second})
	_, _, err := c.Get(context.Background(), srv.URL+"/x", nil, 100)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized || se.Header.Get("WWW-Authenticate") != "Negotiate" || errors.Is(err, ErrNotFound) {
		t.Fatalf("401: %v", err)
	}
	_, _, err = c.Get(context.Background(), srv.URL+"/x", http.Header{"Metadata": {"true"}}, 100)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("404: %v, want ErrNotFound", err)
	}
}

func TestRedirectPolicy(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "elsewhere")
	}))
	t.Cleanup(elsewhere.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1), http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	if _, _, err := New(Options{Timeout: 2 * time.Second, Redirects: SameHost}).Get(context.Background(), redirector.URL, nil, 100); err == nil || !strings.Contains(err.Error(), "another host") {
		t.Fatalf("SameHost followed a redirect to another host: %v", err)
	}
	body, _, err := New(Options{Timeout: 2 * time.Second, Redirects: AnyHost}).Get(context.Background(), redirector.URL, nil, 100)
	if err != nil || string(body) != "elsewhere" {
		t.Fatalf("AnyHost: %q, %v", body, err)
	}
}

func TestTimeoutAndProxy(t *testing.T) {
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(hanging.Close)
	start := time.Now()
	if _, _, err := New(Options{Timeout: 100 * time.Millisecond}).Get(context.Background(), hanging.URL, nil, 100); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("a hanging server: %v after %v", err, time.Since(start))
	}
	if New(Options{Timeout: time.Second}).Proxied() {
		t.Error("a client without ProxyFromEnvironment may use a proxy")
	}
	if !New(Options{Timeout: time.Second, ProxyFromEnvironment: true}).Proxied() {
		t.Error("ProxyFromEnvironment ignored")
	}
}
