package cloud

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
)

func TestCloudAzureStubRequiresMetadataHeader(t *testing.T) {
	server := cloudtest.NewAzure(t)
	resp, err := http.Get(server.URL + azureInstancePath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET without Metadata: true: HTTP %d, want 400", resp.StatusCode)
	}
}

func TestCloudAzureInstance(t *testing.T) {
	server := cloudtest.NewAzure(t)
	c := newAzureClient(server.URL, newMetadataHTTPClient(2*time.Second))
	got, err := c.instance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Instance{Provider: ProviderAzure, InstanceType: "Standard_D8s_v5", Lifecycle: LifecycleSpot,
		Region: "westeurope", Zone: "westeurope-2", InstanceID: "02aab8a4-74ef-476e-8182-f6d2ba4166a6"}
	if got != want {
		t.Fatalf("instance = %+v\nwant %+v", got, want)
	}
}

func TestCloudParseAzureInstance(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Instance
		wantErr    bool
	}{
		{
			name: "keys in any case",
			body: `{"Compute":{"VMSize":"Standard_E4s_v3","Location":"eastus","Zone":"","Priority":"Regular","VmId":"abc"}}`,
			want: Instance{Provider: ProviderAzure, InstanceType: "Standard_E4s_v3", Region: "eastus", Lifecycle: LifecycleOnDemand, InstanceID: "abc"},
		},
		{
			name: "empty strings are unknown",
			body: `{"compute":{"vmSize":"","location":"","zone":"","priority":"","vmId":""}}`,
			want: Instance{Provider: ProviderAzure, Lifecycle: LifecycleUnknown},
		},
		{name: "no compute", body: `{"network":{}}`, wantErr: true},
		{name: "not json", body: `<html>`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compute, err := parseAzureInstance([]byte(tc.body))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && azureInstance(compute) != tc.want {
				t.Fatalf("got %+v\nwant %+v", azureInstance(compute), tc.want)
			}
		})
	}
}

func TestCloudParseAzureScheduledEvents(t *testing.T) {
	notBefore := "Mon, 19 Sep 2016 18:29:47 GMT"
	at := time.Date(2016, 9, 19, 18, 29, 47, 0, time.UTC)
	for _, tc := range []struct {
		name, body, vm string
		want           []Notice
	}{
		{"none", cloudtest.AzureNoEvents, "vm1",
			[]Notice{{Event: EventPreemption}, {Event: EventTermination}, {Event: EventMaintenance}}},
		{"preempt of this vm", cloudtest.AzurePreemptEvents("vm1", notBefore), "vm1",
			[]Notice{{Event: EventPreemption, Pending: true, Time: at}, {Event: EventTermination}, {Event: EventMaintenance}}},
		{"preempt of a neighbour in the scale set", cloudtest.AzurePreemptEvents("vm2", notBefore), "vm1",
			[]Notice{{Event: EventPreemption}, {Event: EventTermination}, {Event: EventMaintenance}}},
		{"own name not known yet", cloudtest.AzurePreemptEvents("vm2", ""), "",
			[]Notice{{Event: EventPreemption, Pending: true}, {Event: EventTermination}, {Event: EventMaintenance}}},
		{"reboot and terminate", `{"DocumentIncarnation":3,"Events":[
			{"EventType":"Reboot","EventStatus":"Scheduled","Resources":["vm1"],"NotBefore":"` + notBefore + `"},
			{"EventType":"Terminate","EventStatus":"Started","Resources":["vm1"],"NotBefore":""},
			{"EventType":"Freeze","EventStatus":"Canceled","Resources":["vm1"],"NotBefore":""}]}`, "VM1",
			[]Notice{{Event: EventPreemption}, {Event: EventTermination, Pending: true}, {Event: EventMaintenance, Pending: true, Time: at}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAzureScheduledEvents([]byte(tc.body), tc.vm)
			if err != nil {
				t.Fatal(err)
			}
			if !equalNotices(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := parseAzureScheduledEvents([]byte("{"), ""); err == nil {
		t.Fatal("truncated JSON was not an error")
	}
}

func TestCloudAzureNoticesFilterByOwnName(t *testing.T) {
	server := cloudtest.NewAzure(t)
	c := newAzureClient(server.URL, newMetadataHTTPClient(2*time.Second))
	ctx := context.Background()
	if _, err := c.instance(ctx); err != nil {
		t.Fatal(err)
	}
	server.Set(cloudtest.AzureEventsPath, cloudtest.AzurePreemptEvents("aks-spot-12345678-vmss_3", "Mon, 19 Sep 2016 18:29:47 GMT"))
	got, err := c.notices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Pending || got[0].Event != EventPreemption {
		t.Fatalf("Preempt of this VM not pending: %+v", got)
	}
}
