package kube

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// The chart's release on the real node.
const (
	chartNS      = "monitoring"
	chartRelease = "ee"
)

// chartPod is the exporter's pod of the chart's DaemonSet on the node.
type chartPod struct {
	name string
	*exporter
}

// installChart imports `make image`'s archive into the node's containerd
// and installs the chart with helm as a user does (helm upgrade --install),
// with the values sets on top of the chart's defaults; then it starts the
// DaemonSet's pod on the node (daemonSetPod) and waits until it is Ready.
//
// The chart's defaults are kept but for what this machine needs: the image
// is the imported one (pullPolicy Never, no registry), the port a free one
// (the pod has the host's network), and the API server at its loopback
// address (no Service proxy runs here to route the kubernetes Service).
func (n *node) installChart(t *testing.T, c *cluster, sets ...string) chartPod {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		testenv.Unavailable(t, "HELM is not set: make test builds helm and sets it")
	}
	n.importImage(t)
	host, port, _ := net.SplitHostPort(c.Addr)
	env, _ := json.Marshal([]map[string]string{{"name": "KUBERNETES_SERVICE_HOST", "value": host}, {"name": "KUBERNETES_SERVICE_PORT", "value": port}})
	args := []string{"upgrade", "--install", chartRelease, filepath.Join(testenv.RepoRoot(), helmChart),
		"--kubeconfig", c.admin, "--namespace", chartNS,
		"--set", "image.pullPolicy=Never", "--set", "port=" + strconv.Itoa(n.exporterPort), "--set-json", "env=" + string(env)}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	var out bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return n.daemonSetPod(t, c, nil)
}

// importImage imports the exporter's OCI archive (OCI_ARCHIVE, from make
// image) for this machine's platform, under the name the chart pulls.
func (n *node) importImage(t *testing.T) {
	t.Helper()
	if n.imported {
		return
	}
	archive := os.Getenv("OCI_ARCHIVE")
	if archive == "" {
		testenv.Unavailable(t, "OCI_ARCHIVE is not set: make test builds the image (make image) and sets it")
	}
	n.ctr(t, "images", "import", archive)
	n.imported = true
}

// daemonSetPod replaces the exporter's pod on the node by one made from
// the chart's DaemonSet as its controller makes it: the pod template, owned
// by the DaemonSet, bound to the node. This suite runs no controller
// manager and no scheduler (docs/kubernetes.md says why); the pod the
// kubelet runs is the template's. mutate, when not nil, changes the container before
// the pod is created (the capability test). It waits until the pod is
// Running and Ready and its /metrics answers on the node's address.
func (n *node) daemonSetPod(t *testing.T, c *cluster, mutate func(container map[string]any)) chartPod {
	t.Helper()
	var list struct {
		Items []map[string]any `json:"items"`
	}
	c.Admin(t, http.MethodGet, "/apis/apps/v1/namespaces/"+chartNS+"/daemonsets", "", nil, http.StatusOK, &list)
	if len(list.Items) != 1 {
		t.Fatalf("the chart made %d DaemonSets in %s, want 1", len(list.Items), chartNS)
	}
	ds := list.Items[0]
	meta := ds["metadata"].(map[string]any)
	template := ds["spec"].(map[string]any)["template"].(map[string]any)
	spec := template["spec"].(map[string]any)
	spec["nodeName"] = n.name
	if mutate != nil {
		mutate(spec["containers"].([]any)[0].(map[string]any))
	}
	podMeta, _ := template["metadata"].(map[string]any)
	if podMeta == nil {
		podMeta = map[string]any{}
	}
	podMeta["generateName"] = meta["name"].(string) + "-"
	podMeta["ownerReferences"] = []any{map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet",
		"name": meta["name"], "uid": meta["uid"], "controller": true, "blockOwnerDeletion": true}}

	n.deleteChartPods(t, c)
	var created struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	c.Admin(t, http.MethodPost, "/api/v1/namespaces/"+chartNS+"/pods", "",
		map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": podMeta, "spec": spec}, http.StatusCreated, &created)
	p := waitPodReady(t, c, n, chartNS, created.Metadata.Name)
	if p.Status.PodIP != n.ip {
		t.Errorf("the exporter's pod has IP %q, want the node's %s (hostNetwork)", p.Status.PodIP, n.ip)
	}
	e := &exporter{addr: net.JoinHostPort(p.Status.PodIP, strconv.Itoa(n.exporterPort))}
	testenv.WaitFor(t, 30*time.Second, "the exporter's pod to answer on "+e.addr, func() bool {
		resp, err := http.Get("http://" + e.addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return chartPod{name: created.Metadata.Name, exporter: e}
}

// deleteChartPods deletes the exporter's pods on the node and waits until
// the kubelet has stopped them and the API server no longer has them.
func (n *node) deleteChartPods(t *testing.T, c *cluster) {
	t.Helper()
	var pods struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	c.Admin(t, http.MethodGet, "/api/v1/namespaces/"+chartNS+"/pods", "", nil, http.StatusOK, &pods)
	for _, p := range pods.Items {
		c.Admin(t, http.MethodDelete, "/api/v1/namespaces/"+chartNS+"/pods/"+p.Metadata.Name, "", nil, http.StatusOK, nil)
	}
	testenv.WaitFor(t, 2*time.Minute, "the exporter's old pods to be gone", func() bool {
		c.Admin(t, http.MethodGet, "/api/v1/namespaces/"+chartNS+"/pods", "", nil, http.StatusOK, &pods)
		return len(pods.Items) == 0
	})
}

// publishRootCA creates the kube-root-ca.crt ConfigMap in namespace, which
// the controller manager publishes in every namespace and the kubelet
// mounts with each ServiceAccount token.
func (c *cluster) publishRootCA(t *testing.T, namespace string) {
	t.Helper()
	c.Admin(t, http.MethodPost, "/api/v1/namespaces/"+namespace+"/configmaps", "", map[string]any{
		"metadata": map[string]any{"name": "kube-root-ca.crt"},
		"data":     map[string]string{"ca.crt": string(c.pki.CAPEM)},
	}, http.StatusCreated, nil)
}
