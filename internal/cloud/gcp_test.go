package cloud

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
)

func TestCloudGCPStubRefusesRequestsWithoutFlavor(t *testing.T) {
	server := cloudtest.NewGCP(t)
	resp, err := http.Get(server.URL + cloudtest.GCPMachineTypePath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET without Metadata-Flavor: HTTP %d, want 403", resp.StatusCode)
	}
}

func TestCloudGCPInstance(t *testing.T) {
	server := cloudtest.NewGCP(t)
	c := newGCPClient(server.URL, newMetadataHTTPClient(2*time.Second))
	got, err := c.instance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Instance{Provider: ProviderGCP, InstanceType: "n2-standard-8", Lifecycle: LifecycleSpot,
		Region: "europe-west1", Zone: "europe-west1-b", InstanceID: "4520031799277581759"}
	if got != want {
		t.Fatalf("instance = %+v\nwant %+v", got, want)
	}
}

func TestCloudGCPRejectsAnswerWithoutFlavor(t *testing.T) {
	// Something else answering at metadata.google.internal (a captive
	// portal, a DNS search-domain accident) is not the metadata server.
	impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("projects/1/machineTypes/evil"))
	}))
	t.Cleanup(impostor.Close)
	c := newGCPClient(impostor.URL, newMetadataHTTPClient(2*time.Second))
	if got, err := c.instance(context.Background()); err == nil {
		t.Fatalf("took an answer without Metadata-Flavor: Google: %+v", got)
	}
}

func TestCloudGCPLifecycle(t *testing.T) {
	for _, tc := range []struct{ preemptible, model, want string }{
		{"TRUE", "SPOT", LifecycleSpot},
		{"TRUE", "", LifecycleSpot}, // legacy preemptible VM, old metadata server
		{"FALSE", "STANDARD", LifecycleOnDemand},
		{"FALSE", "", LifecycleOnDemand},
		{"", "", LifecycleUnknown},
	} {
		if got := gcpLifecycle(tc.preemptible, tc.model); got != tc.want {
			t.Errorf("gcpLifecycle(%q, %q) = %q, want %q", tc.preemptible, tc.model, got, tc.want)
		}
	}
}

func TestCloudGCPNotices(t *testing.T) {
	server := cloudtest.NewGCP(t)
	c := newGCPClient(server.URL, newMetadataHTTPClient(2*time.Second))
	ctx := context.Background()
	got, err := c.notices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !equalNotices(got, []Notice{{Event: EventPreemption}, {Event: EventMaintenance}}) {
		t.Fatalf("nothing announced: %+v", got)
	}
	server.Set(cloudtest.GCPPreemptedPath, "TRUE")
	server.Set(cloudtest.GCPMaintenancePath, "TERMINATE_ON_HOST_MAINTENANCE")
	got, err = c.notices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !equalNotices(got, []Notice{{Event: EventPreemption, Pending: true}, {Event: EventMaintenance, Pending: true}}) {
		t.Fatalf("preempted and maintenance announced: %+v", got)
	}
}
