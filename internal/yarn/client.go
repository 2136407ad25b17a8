package yarn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
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
// every request, redirects to other hosts too (a standby ResourceManager
// redirects to the active one).
func newHTTPClient(timeout time.Duration) *httpget.Client {
	return httpget.New(httpget.Options{Timeout: timeout, Redirects: httpget.AnyHost, MaxIdleConns: 4})
}

// get fetches url and returns a body of at most MaxBodyBytes from a 2xx
// answer; anything else is a *requestError with its kind. A longer body is
// read no further than the cap.
func get(ctx context.Context, client *httpget.Client, url string) ([]byte, error) {
	data, _, err := client.Get(ctx, url, http.Header{"Accept": {"application/json"}}, MaxBodyBytes)
	var se *httpget.StatusError
	switch {
	case err == nil:
		return data, nil
	case errors.As(err, &se) && se.Code == http.StatusUnauthorized && se.Header.Get("WWW-Authenticate") == "Negotiate":
		return nil, &requestError{ErrKerberosKind, fmt.Errorf("GET %s: %w", se.URL, ErrKerberos)}
	case se != nil:
		return nil, &requestError{statusKind(se.Code), err}
	case errors.Is(err, httpget.ErrTooLarge):
		return nil, &requestError{ErrTooLarge, fmt.Errorf("%w (%d bytes)", err, MaxBodyBytes)}
	}
	return nil, &requestError{classify(err), err}
}

// parseError marks a parser's error as a parse failure.
func parseError(err error) error { return &requestError{ErrParse, err} }
