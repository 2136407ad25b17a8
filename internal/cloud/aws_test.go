package cloud

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
)

func TestCloudAWSStubRefusesTokenlessGET(t *testing.T) {
	// The stand-in must behave as IMDSv2 with HttpTokens=required, or the
	// tests below prove nothing.
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	resp, err := http.Get(imds.URL + cloudtest.AWSInstanceTypePath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("token-less GET: HTTP %d, want 401", resp.StatusCode)
	}
}

func TestCloudAWSInstanceIMDSv2(t *testing.T) {
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	c := newAWSClient(imds.URL, newMetadataHTTPClient(2*time.Second))
	got, err := c.instance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Instance{Provider: ProviderAWS, InstanceType: "m5.xlarge", Lifecycle: LifecycleSpot,
		Region: "eu-west-1", Zone: "eu-west-1a", InstanceID: "i-0123456789abcdef0"}
	if got != want {
		t.Fatalf("instance = %+v\nwant %+v", got, want)
	}
	// One token for all five GETs.
	if n := imds.Requests(); n != 6 {
		t.Errorf("%d requests, want 1 token PUT + 5 GETs", n)
	}
}

func TestCloudAWSFallsBackToIMDSv1OnlyWhenTokenRefused(t *testing.T) {
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{V1Only: true})
	c := newAWSClient(imds.URL, newMetadataHTTPClient(2*time.Second))
	got, err := c.instance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.InstanceType != "m5.xlarge" {
		t.Fatalf("instance over IMDSv1 = %+v", got)
	}

	// A token call that times out is not a refusal: no token-less GET.
	hanging := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	hanging.Hang()
	c = newAWSClient(hanging.URL, newMetadataHTTPClient(100*time.Millisecond))
	if _, err := c.instance(context.Background()); err == nil {
		t.Fatal("instance from a hanging IMDS succeeded")
	}
	if n := hanging.Requests(); n != 1 {
		t.Errorf("%d requests to a hanging IMDS, want the token PUT only", n)
	}
}

func TestCloudAWSRenewsRevokedToken(t *testing.T) {
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	c := newAWSClient(imds.URL, newMetadataHTTPClient(2*time.Second))
	c.token, c.expires = "revoked", time.Now().Add(time.Hour)
	if _, err := c.get(context.Background(), "instance-id"); err != nil {
		t.Fatalf("GET with a revoked token was not retried with a new one: %v", err)
	}
}

func TestCloudAWSOptionalItems(t *testing.T) {
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	imds.Delete(cloudtest.AWSLifecyclePath)
	imds.Delete("/latest/meta-data/placement/region")
	c := newAWSClient(imds.URL, newMetadataHTTPClient(2*time.Second))
	got, err := c.instance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Lifecycle != LifecycleUnknown || got.Region != "eu-west-1" {
		t.Fatalf("without instance-life-cycle and placement/region: %+v", got)
	}
	imds.Fail(cloudtest.AWSInstanceTypePath, http.StatusInternalServerError)
	if _, err := c.instance(context.Background()); err == nil {
		t.Fatal("a 500 for instance-type was not an error")
	}
}

func TestCloudAWSNotices(t *testing.T) {
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	c := newAWSClient(imds.URL, newMetadataHTTPClient(2*time.Second))
	ctx := context.Background()

	got, err := c.notices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Notice{{Event: EventSpotInterruption}, {Event: EventRebalanceRecommendation}}
	if !equalNotices(got, want) {
		t.Fatalf("no notice (404s): %+v, want %+v", got, want)
	}

	imds.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`)
	imds.Set(cloudtest.AWSRebalancePath, `{"noticeTime": "2017-09-18T08:20:00Z"}`)
	got, err = c.notices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want = []Notice{
		{Event: EventSpotInterruption, Pending: true, Time: time.Date(2017, 9, 18, 8, 22, 0, 0, time.UTC)},
		{Event: EventRebalanceRecommendation, Pending: true},
	}
	if !equalNotices(got, want) {
		t.Fatalf("notices = %+v, want %+v", got, want)
	}

	// A failing endpoint is an error, not "no notice".
	imds.Fail(cloudtest.AWSInstanceActionPath, http.StatusInternalServerError)
	got, err = c.notices(ctx)
	if err == nil || errors.Is(err, errNotFound) {
		t.Fatalf("500 on instance-action: err = %v", err)
	}
	if len(got) != 1 || got[0].Event != EventRebalanceRecommendation {
		t.Fatalf("the rebalance notice should still be read: %+v", got)
	}
}

func TestCloudParseAWSInstanceAction(t *testing.T) {
	for _, tc := range []struct {
		body string
		want Notice
	}{
		{`{"action": "stop", "time": "2024-05-01T10:00:00Z"}`, Notice{Event: EventSpotInterruption, Pending: true, Time: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)}},
		{`{"action": "hibernate"}`, Notice{Event: EventSpotInterruption, Pending: true}},
		{`garbage`, Notice{Event: EventSpotInterruption, Pending: true}},
	} {
		if got := parseAWSInstanceAction(tc.body); !got.Time.Equal(tc.want.Time) || got.Pending != tc.want.Pending || got.Event != tc.want.Event {
			t.Errorf("parseAWSInstanceAction(%q) = %+v, want %+v", tc.body, got, tc.want)
		}
	}
}

func equalNotices(a, b []Notice) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Event != b[i].Event || a[i].Pending != b[i].Pending || !a[i].Time.Equal(b[i].Time) {
			return false
		}
	}
	return true
}
