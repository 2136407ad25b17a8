package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
)

const (
	awsTokenPath        = "/latest/api/token"
	awsMetaDataPath     = "/latest/meta-data/"
	awsTokenHeader      = "X-aws-ec2-metadata-token"
	awsTokenTTLHeader   = "X-aws-ec2-metadata-token-ttl-seconds"
	awsTokenTTL         = 6 * time.Hour
	awsTokenRenewMargin = time.Minute
)

// awsClient speaks IMDSv2: a session token from PUT /latest/api/token sent
// with every GET. It falls back to IMDSv1 (no token) only when the token
// call itself is refused with an HTTP answer, as on old IMDS stand-ins; a
// token call that times out is an error, because that is what the IMDSv2
// hop limit does to a pod and token-less GETs would not fix it.
type awsClient struct {
	base string
	http *httpget.Client

	mu      sync.Mutex
	token   string
	expires time.Time
}

func newAWSClient(base string, client *httpget.Client) *awsClient {
	return &awsClient{base: strings.TrimRight(base, "/"), http: client}
}

func (c *awsClient) events() []string {
	return []string{EventSpotInterruption, EventRebalanceRecommendation}
}

// sessionToken returns a valid token, "" when IMDSv1 is to be used.
func (c *awsClient) sessionToken(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && time.Now().Before(c.expires.Add(-awsTokenRenewMargin)) {
		return c.token, nil
	}
	body, _, err := c.http.Do(ctx, httpget.Request{Method: http.MethodPut, URL: c.base + awsTokenPath, Limit: 4096,
		Header: http.Header{awsTokenTTLHeader: {fmt.Sprint(int(awsTokenTTL.Seconds()))}}})
	var se *httpget.StatusError
	if errors.As(err, &se) && (se.Code == http.StatusForbidden || se.Code == http.StatusNotFound || se.Code == http.StatusMethodNotAllowed) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("IMDSv2 token: %w", err)
	}
	c.token = strings.TrimSpace(string(body))
	c.expires = time.Now().Add(awsTokenTTL)
	return c.token, nil
}

func (c *awsClient) dropToken() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token = ""
}

// get reads one meta-data item. A 401 means the token expired or was
// revoked: it is renewed once.
func (c *awsClient) get(ctx context.Context, path string) (string, error) {
	for attempt := 0; ; attempt++ {
		token, err := c.sessionToken(ctx)
		if err != nil {
			return "", err
		}
		header := http.Header{}
		if token != "" {
			header.Set(awsTokenHeader, token)
		}
		body, _, err := get(ctx, c.http, c.base+awsMetaDataPath+path, header)
		var se *httpget.StatusError
		if attempt == 0 && errors.As(err, &se) && se.Code == http.StatusUnauthorized {
			c.dropToken()
			continue
		}
		return strings.TrimSpace(string(body)), err
	}
}

func (c *awsClient) instance(ctx context.Context) (Instance, error) {
	inst := Instance{Provider: ProviderAWS}
	var err error
	if inst.InstanceID, err = c.get(ctx, "instance-id"); err != nil {
		return Instance{}, err
	}
	if inst.InstanceType, err = c.get(ctx, "instance-type"); err != nil {
		return Instance{}, err
	}
	if inst.Zone, err = c.get(ctx, "placement/availability-zone"); err != nil {
		return Instance{}, err
	}
	// placement/region and instance-life-cycle are younger than the
	// rest; an IMDS without them still told us the essentials.
	inst.Region, err = c.get(ctx, "placement/region")
	if errors.Is(err, errNotFound) || inst.Region == "" {
		inst.Region = regionFromZone(inst.Zone)
	} else if err != nil {
		return Instance{}, err
	}
	lc, err := c.get(ctx, "instance-life-cycle")
	if err != nil && !errors.Is(err, errNotFound) {
		return Instance{}, err
	}
	inst.Lifecycle = NormalizeLifecycle(lc)
	return inst, nil
}

func (c *awsClient) notices(ctx context.Context) ([]Notice, error) {
	var out []Notice
	var errs []error
	action, err := c.get(ctx, "spot/instance-action")
	switch {
	case errors.Is(err, errNotFound):
		out = append(out, Notice{Event: EventSpotInterruption})
	case err != nil:
		errs = append(errs, err)
	default:
		out = append(out, parseAWSInstanceAction(action))
	}
	_, err = c.get(ctx, "events/recommendations/rebalance")
	switch {
	case errors.Is(err, errNotFound):
		out = append(out, Notice{Event: EventRebalanceRecommendation})
	case err != nil:
		errs = append(errs, err)
	default:
		// Its noticeTime is when the recommendation was made, not when
		// anything will happen, so the notice carries no time.
		out = append(out, Notice{Event: EventRebalanceRecommendation, Pending: true})
	}
	return out, errors.Join(errs...)
}

// parseAWSInstanceAction reads spot/instance-action,
// {"action": "terminate", "time": "2017-09-18T08:22:00Z"}. Any 200 answer
// is a pending interruption, even one whose body cannot be parsed: missing
// a notice costs more than a notice without a time.
func parseAWSInstanceAction(body string) Notice {
	n := Notice{Event: EventSpotInterruption, Pending: true}
	var doc struct {
		Action string `json:"action"`
		Time   string `json:"time"`
	}
	if json.Unmarshal([]byte(body), &doc) == nil {
		if t, err := time.Parse(time.RFC3339, doc.Time); err == nil {
			n.Time = t
		}
	}
	return n
}
