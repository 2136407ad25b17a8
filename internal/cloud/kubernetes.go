package cloud

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
)

// In-cluster service-account files, as client-go's rest.InClusterConfig
// reads them.
const (
	DefaultKubernetesTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	DefaultKubernetesCAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
	// maxNodeBytes bounds a Node object: its status lists every image on
	// the node and can run to hundreds of KiB on a busy one.
	maxNodeBytes = 4 << 20
)

// KubernetesConfig says how to find this machine's Node. An empty NodeName
// turns the lookup off.
type KubernetesConfig struct {
	NodeName string
	// APIURL is the API server; empty means in-cluster,
	// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT.
	APIURL    string
	TokenFile string
	CAFile    string
	// LabelAllowlist names the node labels exported as
	// executor_node_labels; "*" allows all.
	LabelAllowlist []string
	// Pods turns on the list of this node's pods (PodsConfig).
	Pods PodsConfig
}

// errNotInCluster: a node name but no API server to ask. CI agents (Jenkins
// sets NODE_NAME) get here as well as misconfigured pods.
var errNotInCluster = errors.New("not in a cluster (KUBERNETES_SERVICE_HOST/PORT unset) and no --kubernetes.api-url")

// kubeNode is the part of a Node used here.
type kubeNode struct {
	Name       string
	ProviderID string
	Labels     map[string]string
}

type kubeClient struct {
	nodeURL   string
	podsURL   string
	tokenFile string
	http      *httpget.Client
}

func newKubeClient(cfg KubernetesConfig, timeout time.Duration) (*kubeClient, error) {
	base := cfg.APIURL
	if base == "" {
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, errNotInCluster
		}
		base = "https://" + net.JoinHostPort(host, port)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca, err := os.ReadFile(cfg.CAFile); err == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("no certificate in %s", cfg.CAFile)
		}
		tlsConfig.RootCAs = pool
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return &kubeClient{
		nodeURL:   strings.TrimRight(base, "/") + "/api/v1/nodes/" + url.PathEscape(cfg.NodeName),
		podsURL:   podsURL(base, cfg.NodeName),
		tokenFile: cfg.TokenFile,
		// The API server is not link-local: honour the proxy environment
		// as client-go does.
		http: httpget.New(httpget.Options{Timeout: timeout, ProxyFromEnvironment: true, Redirects: httpget.SameHost, TLS: tlsConfig}),
	}, nil
}

// header is what every request to the API server carries. The token is
// read on every call: projected service-account tokens are rotated by the
// kubelet.
func (k *kubeClient) header() http.Header {
	h := http.Header{"Accept": {"application/json"}}
	if token, err := os.ReadFile(k.tokenFile); err == nil {
		h.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	return h
}

// node GETs the Node.
func (k *kubeClient) node(ctx context.Context) (kubeNode, error) {
	body, _, err := k.http.Get(ctx, k.nodeURL, k.header(), maxNodeBytes)
	if err != nil {
		return kubeNode{}, err
	}
	return parseKubeNode(body)
}

// kubeNodeDoc is the part of a Node object the exporter reads.
type kubeNodeDoc struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		ProviderID string `json:"providerID"`
	} `json:"spec"`
}

func parseKubeNode(body []byte) (kubeNode, error) {
	var doc kubeNodeDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return kubeNode{}, fmt.Errorf("node: %w", err)
	}
	if doc.Kind != "" && doc.Kind != "Node" {
		return kubeNode{}, fmt.Errorf("node: got a %s", doc.Kind)
	}
	return kubeNode{Name: doc.Metadata.Name, ProviderID: doc.Spec.ProviderID, Labels: doc.Metadata.Labels}, nil
}

// Well-known node labels, first match wins.
var (
	instanceTypeLabels = []string{"node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"}
	regionLabels       = []string{"topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"}
	zoneLabels         = []string{"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"}
	lifecycleLabels    = []string{
		"karpenter.sh/capacity-type",            // spot, on-demand, reserved
		"eks.amazonaws.com/capacityType",        // SPOT, ON_DEMAND, CAPACITY_BLOCK
		"cloud.google.com/gke-spot",             // "true"
		"cloud.google.com/gke-preemptible",      // "true"
		"cloud.google.com/gke-provisioning",     // spot, preemptible, standard
		"kubernetes.azure.com/scalesetpriority", // spot
	}
	nodePoolLabels = []string{
		"karpenter.sh/nodepool", "karpenter.sh/provisioner-name",
		"eks.amazonaws.com/nodegroup", "cloud.google.com/gke-nodepool",
		"kubernetes.azure.com/agentpool", "agentpool",
	}
	providerIDSchemes = map[string]string{
		"aws": ProviderAWS, "gce": ProviderGCP, "azure": ProviderAzure,
		"oci": ProviderOracle, "alicloud": ProviderAlibaba,
		"digitalocean": ProviderDigitalOcean, "hcloud": ProviderHetzner,
	}
)

func firstLabel(labels map[string]string, names []string) string {
	for _, n := range names {
		if v := labels[n]; v != "" {
			return v
		}
	}
	return ""
}

func hasLabelPrefix(labels map[string]string, prefix string) bool {
	for k := range labels {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// instanceFromNode maps a Node's well-known labels and providerID.
func instanceFromNode(node kubeNode) Instance {
	l := node.Labels
	inst := Instance{
		Node:         node.Name,
		InstanceType: firstLabel(l, instanceTypeLabels),
		Region:       firstLabel(l, regionLabels),
		Zone:         firstLabel(l, zoneLabels),
		NodePool:     firstLabel(l, nodePoolLabels),
		Lifecycle:    NormalizeLifecycle(firstLabel(l, lifecycleLabels)),
		Platform:     "kubernetes",
	}
	switch {
	case hasLabelPrefix(l, "eks.amazonaws.com/"):
		inst.Platform = "eks"
	case hasLabelPrefix(l, "cloud.google.com/gke-"):
		inst.Platform = "gke"
	case hasLabelPrefix(l, "kubernetes.azure.com/"):
		inst.Platform = "aks"
	}
	// GKE and AKS label only spot / preemptible pools; a pool of theirs
	// without such a label is on-demand.
	if inst.Lifecycle == LifecycleUnknown &&
		(l["cloud.google.com/gke-nodepool"] != "" || l["kubernetes.azure.com/agentpool"] != "") {
		inst.Lifecycle = LifecycleOnDemand
	}
	// providerID: aws:///eu-west-1a/i-0abc…, gce://project/zone/name,
	// azure:///subscriptions/…/virtualMachines/name.
	if scheme, rest, ok := strings.Cut(node.ProviderID, "://"); ok {
		inst.Provider = providerIDSchemes[scheme]
		if inst.Provider == ProviderAWS {
			if id := lastSegment(rest); strings.HasPrefix(id, "i-") {
				inst.InstanceID = id
			}
		}
	}
	return inst
}

// allowedNodeLabels returns the labels named in allowlist ("*": all).
func allowedNodeLabels(labels map[string]string, allowlist []string) map[string]string {
	out := map[string]string{}
	for _, name := range allowlist {
		if name == "*" {
			for k, v := range labels {
				out[k] = CleanValue(v)
			}
			return out
		}
		if v, ok := labels[name]; ok {
			out[name] = CleanValue(v)
		}
	}
	return out
}
