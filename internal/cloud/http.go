package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// MaxResponseBytes bounds what is read from a metadata service: the largest
// answer asked for (Azure's instance document) is a few KiB.
const MaxResponseBytes = 64 << 10

// errNotFound is a 404: for notice endpoints it means "no notice".
var errNotFound = errors.New("not found")

// statusError is a non-2xx answer.
type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d", e.url, e.code)
}

func (e *statusError) Is(target error) bool {
	return target == errNotFound && e.code == http.StatusNotFound
}

// newMetadataHTTPClient returns a client for link-local metadata services:
// never through a proxy (a proxy would answer for its own host, or leak the
// request), a deadline on every request, and no redirect to another host.
func newMetadataHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: timeout}).DialContext,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          2,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: sameHostRedirectsOnly,
	}
}

// sameHostRedirectsOnly follows a redirect only to the host first asked:
// a metadata answer must come from the metadata service.
func sameHostRedirectsOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("stopped after 3 redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		return fmt.Errorf("redirect to another host (%s) refused", req.URL.Host)
	}
	return nil
}

// readLimited reads a body of at most limit bytes; a longer body is an
// error rather than a silent truncation, so a half-read JSON document or a
// cut-off value is never taken for the real thing.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("response larger than %d bytes", limit)
	}
	return data, nil
}

// do sends req and returns the body and headers of a 2xx answer; other
// statuses are a *statusError (errors.Is(err, errNotFound) for 404).
func do(ctx context.Context, client *http.Client, req *http.Request, limit int64) ([]byte, http.Header, error) {
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return nil, nil, err
	}
	// A read-only body's Close error says nothing the read did not.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so the connection can be reused, but no more.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, nil, &statusError{url: req.URL.Redacted(), code: resp.StatusCode}
	}
	body, err := readLimited(resp.Body, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", req.URL.Redacted(), err)
	}
	return body, resp.Header, nil
}

// get GETs url with the given headers and returns the body of a 2xx answer.
func get(ctx context.Context, client *http.Client, url string, header http.Header) ([]byte, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return do(ctx, client, req, MaxResponseBytes)
}
