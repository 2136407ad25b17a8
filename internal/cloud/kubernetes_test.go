package cloud

import (
	"context"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
)

// Nodes as the four managed flavours label them.
var (
	karpenterNode = cloudtest.Node("ip-10-0-12-34.eu-west-1.compute.internal", "aws:///eu-west-1a/i-0a1b2c3d4e5f60718", map[string]string{
		"karpenter.sh/capacity-type":       "spot",
		"karpenter.sh/nodepool":            "spark-executors",
		"node.kubernetes.io/instance-type": "r6i.4xlarge",
		"topology.kubernetes.io/region":    "eu-west-1",
		"topology.kubernetes.io/zone":      "eu-west-1a",
		"kubernetes.io/arch":               "amd64",
	})
	eksNode = cloudtest.Node("ip-10-0-56-78.ec2.internal", "aws:///us-east-1b/i-0123456789abcdef0", map[string]string{
		"eks.amazonaws.com/capacityType":   "ON_DEMAND",
		"eks.amazonaws.com/nodegroup":      "drivers",
		"node.kubernetes.io/instance-type": "m6i.2xlarge",
		"topology.kubernetes.io/region":    "us-east-1",
		"topology.kubernetes.io/zone":      "us-east-1b",
	})
	gkeSpotNode = cloudtest.Node("gke-spark-spot-pool-1a2b3c4d-xyz1", "gce://my-project/europe-west1-b/gke-spark-spot-pool-1a2b3c4d-xyz1", map[string]string{
		"cloud.google.com/gke-spot":         "true",
		"cloud.google.com/gke-provisioning": "spot",
		"cloud.google.com/gke-nodepool":     "spot-pool",
		"node.kubernetes.io/instance-type":  "n2-highmem-8",
		"topology.kubernetes.io/region":     "europe-west1",
		"topology.kubernetes.io/zone":       "europe-west1-b",
	})
	aksSpotNode = cloudtest.Node("aks-spot-12345678-vmss000003", "azure:///subscriptions/0000/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/aks-spot-12345678-vmss/virtualMachines/3", map[string]string{
		"kubernetes.azure.com/scalesetpriority": "spot",
		"kubernetes.azure.com/agentpool":        "spot",
		"node.kubernetes.io/instance-type":      "Standard_D8s_v5",
		"topology.kubernetes.io/region":         "westeurope",
		"topology.kubernetes.io/zone":           "westeurope-2",
	})
	aksRegularNode = cloudtest.Node("aks-system-87654321-vmss000000", "azure:///subscriptions/0000/x", map[string]string{
		"kubernetes.azure.com/agentpool":   "system",
		"node.kubernetes.io/instance-type": "Standard_D4s_v5",
	})
)

// kubeConfigFor writes the stub's CA and a token where in-cluster files
// would be and returns a config for node.
func kubeConfigFor(t *testing.T, server *cloudtest.Server, token, node string) KubernetesConfig {
	t.Helper()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	cfg := KubernetesConfig{NodeName: node, APIURL: server.URL,
		TokenFile: filepath.Join(dir, "token"), CAFile: filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(cfg.CAFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.TokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestCloudKubernetesNodeInstance(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.test"
	server := cloudtest.NewKubernetes(t, token, map[string]string{
		"karpenter": karpenterNode, "eks": eksNode, "gke-spot": gkeSpotNode, "aks-spot": aksSpotNode, "aks-regular": aksRegularNode,
	})
	for _, tc := range []struct {
		node string
		want Instance
	}{
		{"karpenter", Instance{Provider: ProviderAWS, Platform: "kubernetes", InstanceType: "r6i.4xlarge", Lifecycle: LifecycleSpot,
			Region: "eu-west-1", Zone: "eu-west-1a", InstanceID: "i-0a1b2c3d4e5f60718", Node: "ip-10-0-12-34.eu-west-1.compute.internal", NodePool: "spark-executors"}},
		{"eks", Instance{Provider: ProviderAWS, Platform: "eks", InstanceType: "m6i.2xlarge", Lifecycle: LifecycleOnDemand,
			Region: "us-east-1", Zone: "us-east-1b", InstanceID: "i-0123456789abcdef0", Node: "ip-10-0-56-78.ec2.internal", NodePool: "drivers"}},
		{"gke-spot", Instance{Provider: ProviderGCP, Platform: "gke", InstanceType: "n2-highmem-8", Lifecycle: LifecycleSpot,
			Region: "europe-west1", Zone: "europe-west1-b", Node: "gke-spark-spot-pool-1a2b3c4d-xyz1", NodePool: "spot-pool"}},
		{"aks-spot", Instance{Provider: ProviderAzure, Platform: "aks", InstanceType: "Standard_D8s_v5", Lifecycle: LifecycleSpot,
			Region: "westeurope", Zone: "westeurope-2", Node: "aks-spot-12345678-vmss000003", NodePool: "spot"}},
		{"aks-regular", Instance{Provider: ProviderAzure, Platform: "aks", InstanceType: "Standard_D4s_v5", Lifecycle: LifecycleOnDemand,
			Node: "aks-system-87654321-vmss000000", NodePool: "system"}},
	} {
		t.Run(tc.node, func(t *testing.T) {
			k, err := newKubeClient(kubeConfigFor(t, server, token, tc.node), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			node, err := k.node(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := instanceFromNode(node); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCloudKubernetesRefusals(t *testing.T) {
	server := cloudtest.NewKubernetes(t, "right", map[string]string{"n": eksNode})
	for name, cfg := range map[string]KubernetesConfig{
		"wrong token":  kubeConfigFor(t, server, "wrong", "n"),
		"unknown node": kubeConfigFor(t, server, "right", "other"),
	} {
		k, err := newKubeClient(cfg, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.node(context.Background()); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// Without the CA the API server's certificate is not trusted.
	cfg := kubeConfigFor(t, server, "right", "n")
	cfg.CAFile = filepath.Join(t.TempDir(), "missing.crt")
	k, err := newKubeClient(cfg, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.node(context.Background()); err == nil {
		t.Error("an untrusted API server certificate was accepted")
	}
	// Outside a cluster, with no URL given, there is nothing to ask.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := newKubeClient(KubernetesConfig{NodeName: "n"}, time.Second); err == nil {
		t.Error("no API URL and no in-cluster environment, but no error")
	}
}

func TestCloudAllowedNodeLabels(t *testing.T) {
	labels := map[string]string{"a": "1", "b": "2", "team": "data\xff"}
	if got := allowedNodeLabels(labels, []string{"team", "missing"}); !reflect.DeepEqual(got, map[string]string{"team": "data\uFFFD"}) {
		t.Errorf("allowlist: %v", got)
	}
	if got := allowedNodeLabels(labels, []string{"*"}); len(got) != 3 {
		t.Errorf("*: %v", got)
	}
	if got := allowedNodeLabels(labels, nil); len(got) != 0 {
		t.Errorf("empty allowlist: %v", got)
	}
}

func TestCloudNodeLabelPairs(t *testing.T) {
	names, values := NodeLabelPairs(map[string]string{
		"eks.amazonaws.com/capacityType": "SPOT",
		"team":                           "data",
		"a.b":                            "1",
		"a_b":                            "2",
		"label_a_b_conflict1":            "3",
	})
	wantNames := []string{"label_a_b_conflict1", "label_a_b_conflict2", "label_eks_amazonaws_com_capacity_type", "label_label_a_b_conflict1", "label_team"}
	wantValues := []string{"1", "2", "SPOT", "3", "data"}
	if !reflect.DeepEqual(names, wantNames) || !reflect.DeepEqual(values, wantValues) {
		t.Fatalf("got %v %v\nwant %v %v", names, values, wantNames, wantValues)
	}
}
