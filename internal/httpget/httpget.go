// Package httpget is the exporter's one HTTP client: bounded GETs (and the
// odd PUT) to the cloud's metadata services, the Kubernetes API server and
// YARN's NodeManager and ResourceManager. Every request has a deadline,
// every body a size cap past which it is an error rather than a silent
// truncation, and proxy and redirect policy are the caller's choice. It is
// the only package that constructs a net/http client.
package httpget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Redirects says which redirects a client follows (at most 3).
type Redirects int

const (
	// SameHost follows a redirect only to the host first asked: a
	// metadata answer must come from the metadata service.
	SameHost Redirects = iota
	// AnyHost follows redirects to other hosts too (a standby
	// ResourceManager redirects to the active one).
	AnyHost
)

// Options configure a Client.
type Options struct {
	// Timeout bounds each request: dialling, the answer's headers and the
	// whole exchange.
	Timeout time.Duration
	// ProxyFromEnvironment honours HTTPS_PROXY and friends; off, requests
	// go direct (link-local metadata, a NodeManager on this machine).
	ProxyFromEnvironment bool
	Redirects            Redirects
	// TLS is the TLS configuration; nil takes Go's default.
	TLS *tls.Config
	// MaxIdleConns bounds the connections kept for reuse; 0 is 2.
	MaxIdleConns int
}

// Client sends bounded requests. It is safe for concurrent use.
type Client struct {
	http *http.Client
}

// New returns a client configured by o.
func New(o Options) *Client {
	transport := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: o.Timeout}).DialContext,
		ResponseHeaderTimeout: o.Timeout,
		TLSHandshakeTimeout:   o.Timeout,
		TLSClientConfig:       o.TLS,
		MaxIdleConns:          max(o.MaxIdleConns, 2),
		IdleConnTimeout:       90 * time.Second,
	}
	if o.ProxyFromEnvironment {
		transport.Proxy = http.ProxyFromEnvironment
	}
	check := anyHost
	if o.Redirects == SameHost {
		check = sameHost
	}
	return &Client{http: &http.Client{Timeout: o.Timeout, Transport: transport, CheckRedirect: check}}
}

// Proxied reports whether the client's requests may go through a proxy.
func (c *Client) Proxied() bool {
	t, ok := c.http.Transport.(*http.Transport)
	return !ok || t.Proxy != nil
}

func anyHost(_ *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("stopped after 3 redirects")
	}
	return nil
}

func sameHost(req *http.Request, via []*http.Request) error {
	if err := anyHost(req, via); err != nil {
		return err
	}
	if req.URL.Host != via[0].URL.Host {
		return fmt.Errorf("redirect to another host (%s) refused", req.URL.Host)
	}
	return nil
}

// ErrNotFound matches a *StatusError of a 404 (errors.Is).
var ErrNotFound = errors.New("not found")

// ErrTooLarge: a body over its cap.
var ErrTooLarge = errors.New("response too large")

// StatusError is a non-2xx answer.
type StatusError struct {
	URL    string // redacted
	Code   int
	Header http.Header
}

func (e *StatusError) Error() string { return fmt.Sprintf("GET %s: HTTP %d", e.URL, e.Code) }

// Is makes a 404 ErrNotFound.
func (e *StatusError) Is(target error) bool {
	return target == ErrNotFound && e.Code == http.StatusNotFound
}

// Request is one request: Method is GET when empty.
type Request struct {
	Method string
	URL    string
	Header http.Header
	// Limit caps the body; a longer one fails with ErrTooLarge.
	Limit int64
}

// Get sends a GET of url with header and returns the body of a 2xx answer,
// at most limit bytes.
func (c *Client) Get(ctx context.Context, url string, header http.Header, limit int64) ([]byte, http.Header, error) {
	return c.Do(ctx, Request{URL: url, Header: header, Limit: limit})
}

// Do sends r and returns the body and headers of a 2xx answer; another
// status is a *StatusError, a body over r.Limit wraps ErrTooLarge.
func (c *Client) Do(ctx context.Context, r Request) ([]byte, http.Header, error) {
	var body []byte
	header, err := c.Stream(ctx, r, func(rd io.Reader) error {
		var err error
		body, err = io.ReadAll(rd)
		return err
	})
	return body, header, err
}

// Stream sends r and hands the body of a 2xx answer to read, which fails
// with ErrTooLarge past r.Limit bytes: a long body is decoded as it comes,
// never cut short silently.
func (c *Client) Stream(ctx context.Context, r Request, read func(io.Reader) error) (http.Header, error) {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	// A read-only body's Close error says nothing the read did not.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so the connection can be reused, but no more.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, &StatusError{URL: req.URL.Redacted(), Code: resp.StatusCode, Header: resp.Header}
	}
	if err := read(&Bounded{R: resp.Body, N: r.Limit}); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, req.URL.Redacted(), err)
	}
	return resp.Header, nil
}

// Bounded fails a read past N bytes with ErrTooLarge instead of
// truncating: a cut document would silently lose what it lists.
type Bounded struct {
	R io.Reader
	N int64
}

func (b *Bounded) Read(p []byte) (int, error) {
	if b.N < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.N+1 {
		p = p[:b.N+1]
	}
	n, err := b.R.Read(p)
	b.N -= int64(n)
	if b.N < 0 {
		return n, ErrTooLarge
	}
	return n, err
}
