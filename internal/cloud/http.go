package cloud

import (
	"context"
	"net/http"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
)

// MaxResponseBytes bounds what is read from a metadata service: the largest
// answer asked for (Azure's instance document) is a few KiB.
const MaxResponseBytes = 64 << 10

// errNotFound is a 404: for notice endpoints it means "no notice".
var errNotFound = httpget.ErrNotFound

// newMetadataHTTPClient returns a client for link-local metadata services:
// never through a proxy (a proxy would answer for its own host, or leak the
// request), a deadline on every request, and no redirect to another host.
func newMetadataHTTPClient(timeout time.Duration) *httpget.Client {
	return httpget.New(httpget.Options{Timeout: timeout, Redirects: httpget.SameHost})
}

// get GETs url with the given headers and returns the body of a 2xx answer;
// other statuses are a *httpget.StatusError (errors.Is(err, errNotFound)
// for 404).
func get(ctx context.Context, client *httpget.Client, url string, header http.Header) ([]byte, http.Header, error) {
	return client.Get(ctx, url, header, MaxResponseBytes)
}
