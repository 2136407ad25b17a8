package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
)

const (
	gcpMetadataPath   = "/computeMetadata/v1/"
	gcpFlavorHeader   = "Metadata-Flavor"
	gcpFlavorGoogle   = "Google"
	gcpTrue           = "TRUE"
	gcpMaintenanceOff = "NONE"
)

// gcpClient reads the GCE metadata server. Every request carries
// Metadata-Flavor: Google (the server answers 403 without it) and every
// answer must carry it back, so nothing else listening at the metadata
// name is taken for the metadata server.
type gcpClient struct {
	base string
	http *httpget.Client
}

func newGCPClient(base string, client *httpget.Client) *gcpClient {
	return &gcpClient{base: strings.TrimRight(base, "/"), http: client}
}

func (c *gcpClient) events() []string {
	return []string{EventPreemption, EventMaintenance}
}

func (c *gcpClient) get(ctx context.Context, path string) (string, error) {
	body, header, err := get(ctx, c.http, c.base+gcpMetadataPath+path, http.Header{gcpFlavorHeader: {gcpFlavorGoogle}})
	if err != nil {
		return "", err
	}
	if header.Get(gcpFlavorHeader) != gcpFlavorGoogle {
		return "", fmt.Errorf("GET %s: answer without %s: %s", path, gcpFlavorHeader, gcpFlavorGoogle)
	}
	return strings.TrimSpace(string(body)), nil
}

func (c *gcpClient) instance(ctx context.Context) (Instance, error) {
	inst := Instance{Provider: ProviderGCP}
	id, err := c.get(ctx, "instance/id")
	if err != nil {
		return Instance{}, err
	}
	machineType, err := c.get(ctx, "instance/machine-type")
	if err != nil {
		return Instance{}, err
	}
	zone, err := c.get(ctx, "instance/zone")
	if err != nil {
		return Instance{}, err
	}
	inst.InstanceID = id
	// Both come as resource paths: projects/123/machineTypes/n2-standard-8,
	// projects/123/zones/europe-west1-b.
	inst.InstanceType = lastSegment(machineType)
	inst.Zone = lastSegment(zone)
	inst.Region = regionFromZone(inst.Zone)

	preemptible, err := c.get(ctx, "instance/scheduling/preemptible")
	if err != nil && !errors.Is(err, errNotFound) {
		return Instance{}, err
	}
	model, err := c.get(ctx, "instance/scheduling/provisioning-model")
	if err != nil && !errors.Is(err, errNotFound) {
		return Instance{}, err
	}
	inst.Lifecycle = gcpLifecycle(preemptible, model)
	if err := c.dataproc(ctx, &inst); err != nil {
		return Instance{}, err
	}
	return inst, nil
}

// dataproc names a Dataproc node's role and cluster (DataprocPool) from
// the attributes Dataproc sets on every instance; other VMs have none.
func (c *gcpClient) dataproc(ctx context.Context, inst *Instance) error {
	role, err := c.get(ctx, "instance/attributes/dataproc-role")
	if errors.Is(err, errNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	cluster, err := c.get(ctx, "instance/attributes/dataproc-cluster-name")
	if err != nil && !errors.Is(err, errNotFound) {
		return err
	}
	name, err := c.get(ctx, "instance/name")
	if err != nil && !errors.Is(err, errNotFound) {
		return err
	}
	inst.NodePool, inst.Platform = DataprocPool(role, cluster, name), PlatformDataproc
	return nil
}

// gcpLifecycle combines scheduling/preemptible (TRUE for both legacy
// preemptible and Spot VMs) with scheduling/provisioning-model (SPOT or
// STANDARD, absent on older metadata servers).
func gcpLifecycle(preemptible, provisioningModel string) string {
	if strings.EqualFold(preemptible, gcpTrue) {
		return LifecycleSpot
	}
	if lc := NormalizeLifecycle(provisioningModel); lc != LifecycleUnknown {
		return lc
	}
	return NormalizeLifecycle(preemptible)
}

func (c *gcpClient) notices(ctx context.Context) ([]Notice, error) {
	var out []Notice
	var errs []error
	preempted, err := c.get(ctx, "instance/preempted")
	if err != nil {
		errs = append(errs, err)
	} else {
		out = append(out, Notice{Event: EventPreemption, Pending: strings.EqualFold(preempted, gcpTrue)})
	}
	// NONE, or MIGRATE_ON_HOST_MAINTENANCE / TERMINATE_ON_HOST_MAINTENANCE
	// about 60 seconds before the host is serviced.
	maintenance, err := c.get(ctx, "instance/maintenance-event")
	switch {
	case errors.Is(err, errNotFound):
		out = append(out, Notice{Event: EventMaintenance})
	case err != nil:
		errs = append(errs, err)
	default:
		out = append(out, Notice{Event: EventMaintenance, Pending: maintenance != "" && !strings.EqualFold(maintenance, gcpMaintenanceOff)})
	}
	return out, errors.Join(errs...)
}
