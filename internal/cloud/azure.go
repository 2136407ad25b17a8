package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
)

const (
	// api-versions every Azure region serves; newer ones add fields this
	// exporter does not read.
	azureInstancePath = "/metadata/instance?api-version=2021-02-01"
	azureEventsPath   = "/metadata/scheduledevents?api-version=2020-07-01"
)

// azureClient reads Azure IMDS. Every request carries Metadata: true (IMDS
// answers 400 without it, which also stops requests forwarded by an
// unwitting proxy).
type azureClient struct {
	base string
	http *httpget.Client

	mu     sync.Mutex
	vmName string // to pick this VM's events out of its availability set's
}

func newAzureClient(base string, client *httpget.Client) *azureClient {
	return &azureClient{base: strings.TrimRight(base, "/"), http: client}
}

func (c *azureClient) events() []string {
	return []string{EventPreemption, EventTermination, EventMaintenance}
}

func (c *azureClient) get(ctx context.Context, path string) ([]byte, error) {
	body, _, err := get(ctx, c.http, c.base+path, http.Header{"Metadata": {"true"}})
	return body, err
}

// azureCompute is the part of the instance document used here.
// encoding/json matches keys case-insensitively, so "vmSize" and "VMSize"
// both land here.
type azureCompute struct {
	Name     string `json:"name"`
	VMSize   string `json:"vmSize"`
	Location string `json:"location"`
	Zone     string `json:"zone"`
	Priority string `json:"priority"`
	VMID     string `json:"vmId"`
}

func (c *azureClient) instance(ctx context.Context) (Instance, error) {
	body, err := c.get(ctx, azureInstancePath)
	if err != nil {
		return Instance{}, err
	}
	compute, err := parseAzureInstance(body)
	if err != nil {
		return Instance{}, err
	}
	c.mu.Lock()
	c.vmName = compute.Name
	c.mu.Unlock()
	return azureInstance(compute), nil
}

func parseAzureInstance(body []byte) (azureCompute, error) {
	var doc struct {
		Compute *azureCompute `json:"compute"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return azureCompute{}, fmt.Errorf("azure instance metadata: %w", err)
	}
	if doc.Compute == nil {
		return azureCompute{}, errors.New("azure instance metadata: no compute section")
	}
	return *doc.Compute, nil
}

// azureInstance maps the compute section. Empty strings are "unknown";
// priority is "Spot", "Regular", "Low" or empty. Zones come as "1", "2",
// "3"; they are written <location>-<zone> ("westeurope-1") as AKS writes
// topology.kubernetes.io/zone, so IMDS and node labels agree.
func azureInstance(c azureCompute) Instance {
	inst := Instance{
		Provider:     ProviderAzure,
		InstanceType: c.VMSize,
		Region:       c.Location,
		Zone:         c.Zone,
		InstanceID:   c.VMID,
		Lifecycle:    NormalizeLifecycle(c.Priority),
	}
	if inst.Zone != "" && inst.Region != "" && strings.Trim(inst.Zone, "0123456789") == "" {
		inst.Zone = inst.Region + "-" + inst.Zone
	}
	return inst
}

func (c *azureClient) notices(ctx context.Context) ([]Notice, error) {
	body, err := c.get(ctx, azureEventsPath)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	name := c.vmName
	c.mu.Unlock()
	return parseAzureScheduledEvents(body, name)
}

// azureEventKinds maps EventType to the event label.
var azureEventKinds = map[string]string{
	"preempt":   EventPreemption,
	"terminate": EventTermination,
	"reboot":    EventMaintenance,
	"redeploy":  EventMaintenance,
	"freeze":    EventMaintenance,
}

// parseAzureScheduledEvents turns a scheduledevents document into one
// notice per kind. Events of a whole availability set or scale-set
// placement group are delivered to every VM in it, so only events whose
// Resources name this VM count (all of them while the name is unknown).
// NotBefore ("Mon, 19 Sep 2016 18:29:47 GMT") is empty once an event has
// started; the earliest announced time of a kind is kept.
func parseAzureScheduledEvents(body []byte, vmName string) ([]Notice, error) {
	var doc struct {
		Events []struct {
			EventType   string   `json:"EventType"`
			EventStatus string   `json:"EventStatus"`
			Resources   []string `json:"Resources"`
			NotBefore   string   `json:"NotBefore"`
		} `json:"Events"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("azure scheduled events: %w", err)
	}
	byKind := map[string]*Notice{}
	for _, kind := range []string{EventPreemption, EventTermination, EventMaintenance} {
		byKind[kind] = &Notice{Event: kind}
	}
	for _, ev := range doc.Events {
		kind, ok := azureEventKinds[strings.ToLower(ev.EventType)]
		if !ok || strings.EqualFold(ev.EventStatus, "Canceled") || strings.EqualFold(ev.EventStatus, "Completed") {
			continue
		}
		if vmName != "" && len(ev.Resources) > 0 && !slices.ContainsFunc(ev.Resources, func(r string) bool { return strings.EqualFold(r, vmName) }) {
			continue
		}
		n := byKind[kind]
		n.Pending = true
		if t, err := time.Parse(time.RFC1123, ev.NotBefore); err == nil && (n.Time.IsZero() || t.Before(n.Time)) {
			n.Time = t
		}
	}
	return []Notice{*byKind[EventPreemption], *byKind[EventTermination], *byKind[EventMaintenance]}, nil
}
