package yarn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Targets, the services asked.
const (
	TargetNodeManager     = "nodemanager"
	TargetResourceManager = "resourcemanager"
)

// Kinds of request failure. Status codes a NodeManager or ResourceManager
// is known to answer with get a kind of their own; others share one, so the
// set of kinds stays small.
const (
	ErrDown         = "down"      // refused, unreachable, reset: nothing answered
	ErrTimeout      = "timeout"   // no complete answer within the request timeout
	ErrTooLarge     = "too_large" // a body over MaxBodyBytes
	ErrParse        = "parse"     // an answer that is not the documented JSON
	ErrKerberosKind = "kerberos"  // SPNEGO required (yarn-site.xml, or a 401 asking for Negotiate)
	ErrStatusOther  = "http_other"
)

// ErrorKinds lists every kind, so a collector can export each at 0.
var ErrorKinds = []string{ErrDown, ErrTimeout, "http_401", "http_403", "http_404", "http_500", "http_503", ErrStatusOther, ErrTooLarge, ErrParse, ErrKerberosKind}

// requestError is a failed request with its kind.
type requestError struct {
	kind string
	err  error
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// KindOf returns the kind of a request's error.
func KindOf(err error) string {
	var re *requestError
	if errors.As(err, &re) {
		return re.kind
	}
	return classify(err)
}

// classify sorts a failed request: a timeout, or else nothing answered
// (refused, reset, unreachable, no such host, a connection cut short).
func classify(err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return ErrTimeout
	}
	return ErrDown
}

func statusKind(code int) string {
	switch code {
	case 401, 403, 404, 500, 503:
		return "http_" + strconv.Itoa(code)
	}
	return ErrStatusOther
}

// newHTTPClient: no proxy from the environment (the NodeManager is on this
// machine, the ResourceManager on the cluster's network), a deadline on
// every request, redirects to the same host only except between
// ResourceManagers (a standby redirects to the active one).
func newHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: timeout}).DialContext,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          4,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("stopped after 3 redirects")
			}
			return nil
		},
	}
}

// get fetches url and returns a body of at most MaxBodyBytes from a 200
// answer; anything else is a *requestError with its kind. A longer body is
// read no further than the cap.
func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &requestError{ErrParse, err}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, &requestError{classify(err), fmt.Errorf("GET %s: %w", req.URL.Redacted(), err)}
	}
	// A read-only body's Close error says nothing the read did not.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		// Drain a little so the connection can be reused, but no more.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	}
	if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "Negotiate" {
		return nil, &requestError{ErrKerberosKind, fmt.Errorf("GET %s: %w", req.URL.Redacted(), ErrKerberos)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &requestError{statusKind(resp.StatusCode), fmt.Errorf("GET %s: HTTP %d", req.URL.Redacted(), resp.StatusCode)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, &requestError{classify(err), fmt.Errorf("GET %s: %w", req.URL.Redacted(), err)}
	}
	if len(data) > MaxBodyBytes {
		return nil, &requestError{ErrTooLarge, fmt.Errorf("GET %s: body larger than %d bytes", req.URL.Redacted(), MaxBodyBytes)}
	}
	return data, nil
}

// parseError marks a parser's error as a parse failure.
func parseError(err error) error { return &requestError{ErrParse, err} }
