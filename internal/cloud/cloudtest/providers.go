package cloudtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// AWS paths a test changes while the exporter runs.
const (
	AWSInstanceActionPath = "/latest/meta-data/spot/instance-action"
	AWSRebalancePath      = "/latest/meta-data/events/recommendations/rebalance"
	AWSInstanceTypePath   = "/latest/meta-data/instance-type"
	AWSLifecyclePath      = "/latest/meta-data/instance-life-cycle"
)

// AWSOptions changes how the IMDS stand-in behaves.
type AWSOptions struct {
	// V1Only answers 403 to the token PUT and serves token-less GETs, as
	// an IMDS stand-in without IMDSv2 does.
	V1Only bool
}

// NewAWS starts an IMDS that requires IMDSv2 (HttpTokens=required): a
// token from PUT /latest/api/token (with X-aws-ec2-metadata-token-ttl-seconds),
// sent as X-aws-ec2-metadata-token on every GET, or 401. It describes a
// spot m5.xlarge in eu-west-1a with no notice pending.
func NewAWS(t testing.TB, opts AWSOptions) *Server {
	var mu sync.Mutex
	tokens := map[string]bool{}
	items := map[string]string{
		"/latest/meta-data/instance-id":                 "i-0123456789abcdef0",
		AWSInstanceTypePath:                             "m5.xlarge",
		AWSLifecyclePath:                                "spot",
		"/latest/meta-data/placement/region":            "eu-west-1",
		"/latest/meta-data/placement/availability-zone": "eu-west-1a",
	}
	return newServer(t, false, items, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/latest/api/token" {
			switch {
			case opts.V1Only:
				http.Error(w, "Forbidden", http.StatusForbidden)
			case r.Method != http.MethodPut:
				http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			case r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "":
				http.Error(w, "Bad Request", http.StatusBadRequest)
			default:
				b := make([]byte, 24)
				_, _ = rand.Read(b)
				token := hex.EncodeToString(b)
				mu.Lock()
				tokens[token] = true
				mu.Unlock()
				w.Header().Set("X-aws-ec2-metadata-token-ttl-seconds", r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds"))
				_, _ = fmt.Fprint(w, token)
			}
			return false
		}
		if opts.V1Only {
			return true
		}
		mu.Lock()
		ok := tokens[r.Header.Get("X-aws-ec2-metadata-token")]
		mu.Unlock()
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return false
		}
		return true
	})
}

// GCP paths a test changes while the exporter runs.
const (
	GCPPreemptedPath   = "/computeMetadata/v1/instance/preempted"
	GCPMaintenancePath = "/computeMetadata/v1/instance/maintenance-event"
	GCPMachineTypePath = "/computeMetadata/v1/instance/machine-type"
)

// Dataproc's metadata: the attributes Dataproc sets on every instance of
// a cluster, and the instance's name.
const (
	GCPInstanceNamePath    = "/computeMetadata/v1/instance/name"
	GCPDataprocRolePath    = "/computeMetadata/v1/instance/attributes/dataproc-role"
	GCPDataprocClusterPath = "/computeMetadata/v1/instance/attributes/dataproc-cluster-name"
)

// SetDataproc makes a GCP stand-in describe a Dataproc node: role Master
// or Worker, as Dataproc writes it, and the instance's name (a secondary
// worker's is <cluster>-sw-<suffix>).
func SetDataproc(s *Server, cluster, role, name string) {
	s.Set(GCPDataprocClusterPath, cluster)
	s.Set(GCPDataprocRolePath, role)
	s.Set(GCPInstanceNamePath, name)
	s.Set("/computeMetadata/v1/instance/attributes/dataproc-worker-count", "2")
	s.Set("/computeMetadata/v1/instance/attributes/dataproc-master", cluster+"-m")
}

// NewGCP starts a GCE metadata server: requests without
// Metadata-Flavor: Google get 403, answers carry Metadata-Flavor: Google.
// It describes a Spot n2-standard-8 in europe-west1-b, not preempted.
func NewGCP(t testing.TB) *Server {
	items := map[string]string{
		"/computeMetadata/v1/instance/id":                            "4520031799277581759",
		GCPMachineTypePath:                                           "projects/123456789012/machineTypes/n2-standard-8",
		"/computeMetadata/v1/instance/zone":                          "projects/123456789012/zones/europe-west1-b",
		"/computeMetadata/v1/instance/scheduling/preemptible":        "TRUE",
		"/computeMetadata/v1/instance/scheduling/provisioning-model": "SPOT",
		GCPPreemptedPath:                                             "FALSE",
		GCPMaintenancePath:                                           "NONE",
	}
	return newServer(t, false, items, func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Metadata-Flavor", "Google")
		if r.Header.Get("Metadata-Flavor") != "Google" {
			w.Header().Set("Content-Type", "text/html; charset=UTF-8")
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprint(w, "Your client does not have permission to get URL from this server. Missing Metadata-Flavor:Google header.")
			return false
		}
		return true
	})
}

// Azure paths and documents.
const (
	AzureInstancePath = "/metadata/instance"
	AzureEventsPath   = "/metadata/scheduledevents"

	// AzureSpotInstance is an instance document (trimmed) of a Spot VM.
	AzureSpotInstance = `{"compute":{"azEnvironment":"AzurePublicCloud","location":"westeurope","name":"aks-spot-12345678-vmss_3","priority":"Spot","vmId":"02aab8a4-74ef-476e-8182-f6d2ba4166a6","vmScaleSetName":"aks-spot-12345678-vmss","vmSize":"Standard_D8s_v5","zone":"2"},"network":{"interface":[]}}`
	// AzureNoEvents is a scheduledevents document with nothing scheduled.
	AzureNoEvents = `{"DocumentIncarnation":1,"Events":[]}`
)

// AzurePreemptEvents returns a scheduledevents document announcing a
// Preempt of resource at notBefore (RFC 1123, "Mon, 19 Sep 2016 18:29:47 GMT").
func AzurePreemptEvents(resource, notBefore string) string {
	return fmt.Sprintf(`{"DocumentIncarnation":2,"Events":[{"EventId":"A123BC45-1234-5678-AB90-ABCDEF123456","EventStatus":"Scheduled","EventType":"Preempt","ResourceType":"VirtualMachine","Resources":[%q],"NotBefore":%q,"Description":"","EventSource":"Platform","DurationInSeconds":-1}]}`, resource, notBefore)
}

// NewAzure starts an Azure IMDS: requests without Metadata: true or
// without api-version get 400, as the real one answers.
func NewAzure(t testing.TB) *Server {
	items := map[string]string{AzureInstancePath: AzureSpotInstance, AzureEventsPath: AzureNoEvents}
	return newServer(t, false, items, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Metadata") != "true" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprint(w, `{"error":"Bad request. Required metadata header not specified"}`)
			return false
		}
		if r.URL.Query().Get("api-version") == "" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprint(w, `{"error":"Bad request. api-version was not specified in the request"}`)
			return false
		}
		return true
	})
}

// NewKubernetes starts an API server over HTTPS (its CA is
// Certificate()) that serves GET /api/v1/nodes/{name} from nodes (name →
// Node JSON) to requests bearing token.
func NewKubernetes(t testing.TB, token string, nodes map[string]string) *Server {
	items := map[string]string{}
	for name, doc := range nodes {
		items["/api/v1/nodes/"+name] = doc
	}
	return newServer(t, true, items, func(w http.ResponseWriter, r *http.Request) bool {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
			return false
		}
		return true
	})
}

// Node returns a Node document with the given labels and providerID.
func Node(name, providerID string, labels map[string]string) string {
	var b []byte
	b = fmt.Appendf(b, `{"kind":"Node","apiVersion":"v1","metadata":{"name":%q,"labels":{`, name)
	first := true
	for k, v := range labels {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = fmt.Appendf(b, "%q:%q", k, v)
	}
	b = fmt.Appendf(b, `}},"spec":{"providerID":%q},"status":{"images":[{"names":["registry.k8s.io/pause:3.9"],"sizeBytes":321520}]}}`, providerID)
	return string(b)
}
