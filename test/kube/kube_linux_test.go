package kube

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// The exporter's namespace and ServiceAccount, as the manifests name them.
const (
	exporterNS = "executor-exporter"
	exporterSA = "executor-exporter"
)

// The node the exporter runs on, its labels, and the pool it is moved to
// when the API server comes back.
var nodeLabels = map[string]string{
	"karpenter.sh/nodepool":            "spark-executors",
	"karpenter.sh/capacity-type":       "spot",
	"node.kubernetes.io/instance-type": "m6i.2xlarge",
	"topology.kubernetes.io/region":    "eu-west-1",
	"topology.kubernetes.io/zone":      "eu-west-1a",
}

const newPool = "spark-executors-large"

// The flags the exporter runs with, the in-cluster API server aside.
var exporterArgs = []string{
	"--kubernetes.node-name=node-a",
	"--kubernetes.node-labels=karpenter.sh/nodepool,node.kubernetes.io/instance-type",
	"--kubernetes.pod-labels=team",
	"--cloud.provider=none",
	// Short, so the restart's new label shows within seconds.
	"--cloud.refresh-interval=1s",
	"--kubernetes.pods-refresh-interval=1s",
}

// The exporter against a real API server, with the shipped manifests and
// RBAC: node labels, pods by field selector, 403s for what RBAC does not
// grant, and an API server that stops and comes back.
func TestExporterAgainstAPIServer(t *testing.T) {
	testjvm.RequireJava(t)
	c := startCluster(t)

	c.applyCRDs(t)
	t.Run("kustomize", func(t *testing.T) { c.applyAll(t, exporterNS, c.kustomizeRenders(t)) })
	if t.Failed() {
		t.FailNow()
	}
	token := c.ServiceAccountToken(t, exporterNS, exporterSA)
	// An exporter told a node name the cluster does not have: every
	// lookup fails (404), for the whole test.
	lost := c.startExporter(t, "exporter-unknown-node", token, append([]string{"--kubernetes.node-name=node-unknown"}, exporterArgs[1:]...)...)
	t.Run("rbac", func(t *testing.T) { checkRBAC(t, c, token) })
	if _, err := os.Stat(filepath.Join(testenv.RepoRoot(), helmChart)); err == nil {
		t.Run("helm", func(t *testing.T) {
			const ns = "monitoring"
			r := helmRender(t, ns)
			c.applyAll(t, ns, []render{r})
			checkRBAC(t, c, c.ServiceAccountToken(t, ns, serviceAccount(t, r)))
		})
	}

	// Two nodes, a pod with a JVM on each; the exporter runs on node-a.
	c.createNode(t, "node-a", nodeLabels)
	c.createNode(t, "node-b", map[string]string{"karpenter.sh/nodepool": "other"})
	c.createNamespace(t, "spark")
	podA := c.createPod(t, "spark", "exec-a", "node-a")
	podB := c.createPod(t, "spark", "exec-b", "node-b")
	base := testenv.NewMemoryCgroup(t, 1<<30)
	burstable := base.Child(t, "kubepods", 1<<30).Child(t, "burstable", 1<<30)
	jvmA := startPodJVM(t, burstable, podA)
	jvmB := startPodJVM(t, burstable, podB)

	// RBAC cannot narrow the list to one node: the exporter's field
	// selector does. The API server answers it with node-a's pods only.
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	code, body := c.do(t, token, http.MethodGet, "/api/v1/pods?fieldSelector="+url.QueryEscape("spec.nodeName=node-a"), "", nil)
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Items) != 1 || list.Items[0].Metadata.Name != "exec-a" {
		t.Fatalf("node-a's pods with the exporter's token: HTTP %d: %s", code, body)
	}

	e := c.startExporter(t, "exporter", token, exporterArgs...)
	wantInfo := map[string]string{"node": "node-a", "node_pool": "spark-executors", "instance_type": "m6i.2xlarge",
		"region": "eu-west-1", "zone": "eu-west-1a", "lifecycle": "spot", "platform": "kubernetes", "source": "kubernetes"}
	wantA := map[string]string{"namespace": "spark", "pod": "exec-a", "container": "spark-kubernetes-executor",
		"uid": podA.uid, "container_id": "containerd://" + podA.containerID, "label_team": "data"}
	var s map[string][]series
	defer func() {
		if t.Failed() {
			t.Logf("the exporter's last scrape:\ninstance_info %v\nnode_labels %v\njvm_info %v",
				s["executor_instance_info"], s["executor_node_labels"], s["executor_jvm_info"])
		}
	}()
	testenv.WaitFor(t, 90*time.Second, "the node's labels and node-a's pod on the exporter's series", func() bool {
		s = e.scrape(t)
		_, info := find(s, "executor_instance_info", wantInfo)
		_, labels := find(s, "executor_node_labels", map[string]string{"label_karpenter_sh_nodepool": "spark-executors", "label_node_kubernetes_io_instance_type": "m6i.2xlarge"})
		_, named := find(s, "executor_jvm_info", withPID(wantA, jvmA.PID))
		_, seenB := find(s, "executor_jvm_info", map[string]string{"pid": strconv.Itoa(jvmB.PID), "uid": podB.uid})
		return info && labels && named && seenB
	})
	if v, ok := gauge(s, "executor_kubernetes_pod_list_success"); !ok || v != 1 {
		t.Errorf("executor_kubernetes_pod_list_success = %v (present %v), want 1", v, ok)
	}
	// exec-b is on node-b: not in the list, so its JVM has only what its
	// cgroup path says.
	if b, _ := find(s, "executor_jvm_info", map[string]string{"pid": strconv.Itoa(jvmB.PID)}); b["pod"] != "" || b["namespace"] != "" || b["container"] != "" {
		t.Errorf("the JVM of a pod on another node was named from the list: %v", b)
	}
	if l, _ := find(s, "executor_node_labels", nil); len(l) != 2 {
		t.Errorf("executor_node_labels has labels beyond the allowlist: %v", l)
	}

	t.Run("forbidden", func(t *testing.T) { checkForbidden(t, c, jvmA.PID) })
	t.Run("apiserver restart", func(t *testing.T) { checkRestart(t, c, e, jvmA.PID, wantA) })
	t.Run("failing lookups keep their pace", func(t *testing.T) { checkRetryPace(t, lost) })
}

// checkRetryPace reads the failed refreshes of an exporter whose node the
// cluster does not have: however many fail in a row, they stay
// --cloud.refresh-interval (1s) apart. The retry's doubling must stop
// there; past about 29 doublings it would overflow and the exporter would
// ask the API server without pause.
func checkRetryPace(t *testing.T, e *exporter) {
	const n = 35
	var times []time.Time
	testenv.WaitFor(t, 3*time.Minute, strconv.Itoa(n)+" failed refreshes", func() bool {
		times = times[:0]
		for _, line := range strings.Split(e.proc.Output(), "\n") {
			if !strings.Contains(line, `msg="Cloud metadata refresh failed"`) || !strings.Contains(line, "HTTP 404") {
				continue
			}
			ts, _, _ := strings.Cut(strings.TrimPrefix(line, "ts="), " ")
			if tm, err := time.Parse(time.RFC3339Nano, ts); err == nil {
				times = append(times, tm)
			}
		}
		return len(times) >= n
	})
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < 500*time.Millisecond {
			t.Fatalf("failed refreshes %d and %d only %v apart, want about 1s (--cloud.refresh-interval)", i, i+1, gap)
		}
	}
}

// checkRBAC asks the API server what the exporter's ServiceAccount may do
// (SelfSubjectAccessReview with its own token, kubectl auth can-i), and
// sends the requests the exporter sends and some it must not.
func checkRBAC(t *testing.T, c *cluster, token string) {
	kc := c.kubeconfig(t, "sa-"+randomHex(t, 4), token)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "nodes/node-a"}, "yes"},
		{[]string{"list", "pods", "--all-namespaces"}, "yes"},
		{[]string{"list", "pods", "-n", "spark"}, "yes"},
		{[]string{"list", "nodes"}, "no"},
		{[]string{"watch", "nodes"}, "no"},
		{[]string{"patch", "nodes/node-a"}, "no"},
		{[]string{"get", "nodes/node-a", "--subresource=proxy"}, "no"},
		{[]string{"get", "pods", "-n", "spark"}, "no"},
		{[]string{"watch", "pods", "--all-namespaces"}, "no"},
		{[]string{"create", "pods", "-n", "spark"}, "no"},
		{[]string{"get", "pods", "--subresource=log", "-n", "spark"}, "no"},
		{[]string{"create", "pods", "--subresource=exec", "-n", "spark"}, "no"},
		{[]string{"list", "secrets", "--all-namespaces"}, "no"},
		{[]string{"get", "secrets", "-n", exporterNS}, "no"},
		{[]string{"list", "configmaps", "-n", exporterNS}, "no"},
		{[]string{"create", "serviceaccounts/" + exporterSA, "--subresource=token", "-n", exporterNS}, "no"},
	} {
		out, _ := c.Kubectl(t, kc, nil, append([]string{"auth", "can-i"}, tc.args...)...)
		if got := strings.Fields(out); len(got) == 0 || got[0] != tc.want {
			t.Errorf("auth can-i %s as the exporter: %q, want %s", strings.Join(tc.args, " "), strings.TrimSpace(out), tc.want)
		}
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/api/v1/nodes/node-a", http.StatusNotFound}, // allowed; no such node yet
		{"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&resourceVersion=0", http.StatusOK},
		{"/api/v1/nodes", http.StatusForbidden},
		{"/api/v1/namespaces/kube-system/pods/kube-apiserver", http.StatusForbidden},
		{"/api/v1/secrets", http.StatusForbidden},
		{"/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dnode-a", http.StatusForbidden},
	} {
		if code, body := c.do(t, token, http.MethodGet, tc.path, "", nil); code != tc.want {
			t.Errorf("GET %s with the exporter's token: HTTP %d, want %d: %s", tc.path, code, tc.want, body)
		}
	}
}

// checkForbidden runs a second exporter whose ServiceAccount may get nodes
// but not list pods (RBAC from before the exporter listed pods): the
// node's labels come, the list is refused with a 403 the exporter reports.
func checkForbidden(t *testing.T, c *cluster, pidA int) {
	const sa = "nodes-only"
	c.Admin(t, http.MethodPost, "/api/v1/namespaces/"+exporterNS+"/serviceaccounts", "",
		map[string]any{"metadata": map[string]any{"name": sa}}, http.StatusCreated, nil)
	c.Admin(t, http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/clusterroles", "",
		map[string]any{"metadata": map[string]any{"name": sa},
			"rules": []any{map[string]any{"apiGroups": []string{""}, "resources": []string{"nodes"}, "verbs": []string{"get"}}}},
		http.StatusCreated, nil)
	c.Admin(t, http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "",
		map[string]any{"metadata": map[string]any{"name": sa},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": sa},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": exporterNS}}},
		http.StatusCreated, nil)
	e := c.startExporter(t, "exporter-nodes-only", c.ServiceAccountToken(t, exporterNS, sa), exporterArgs...)
	var s map[string][]series
	testenv.WaitFor(t, 60*time.Second, "the pod list to fail and the node's labels to come", func() bool {
		s = e.scrape(t)
		v, ok := gauge(s, "executor_kubernetes_pod_list_success")
		_, info := find(s, "executor_instance_info", map[string]string{"node": "node-a", "node_pool": "spark-executors"})
		return ok && v == 0 && info
	})
	if v, _ := gauge(s, "executor_metadata_refresh_success"); v != 1 {
		t.Errorf("executor_metadata_refresh_success = %v, want 1: getting the node is allowed", v)
	}
	testenv.WaitFor(t, 30*time.Second, "the exporter to log the 403 and what RBAC lacks", func() bool {
		logs := e.proc.Output()
		return strings.Contains(logs, "HTTP 403") && strings.Contains(logs, "needs list on pods")
	})
	if a, _ := find(s, "executor_jvm_info", map[string]string{"pid": strconv.Itoa(pidA)}); a["pod"] != "" || a["uid"] == "" {
		t.Errorf("without the pod list the JVM has its cgroup's uid and no pod name: %v", a)
	}
}

// checkRestart stops the API server: the exporter serves the last answers
// and says its lookups fail. It starts it again with the node in another
// pool: the exporter picks that up.
func checkRestart(t *testing.T, c *cluster, e *exporter, pidA int, wantA map[string]string) {
	c.StopAPIServer(t)
	var s map[string][]series
	testenv.WaitFor(t, 60*time.Second, "the exporter to see the API server gone", func() bool {
		s = e.scrape(t)
		refresh, _ := gauge(s, "executor_metadata_refresh_success")
		pods, _ := gauge(s, "executor_kubernetes_pod_list_success")
		return refresh == 0 && pods == 0
	})
	if _, ok := find(s, "executor_instance_info", map[string]string{"node": "node-a", "node_pool": "spark-executors"}); !ok {
		t.Errorf("the last node labels are gone while the API server is down: %v", s["executor_instance_info"])
	}
	if _, ok := find(s, "executor_jvm_info", withPID(wantA, pidA)); !ok {
		t.Errorf("the JVM lost its pod while the API server is down: %v", s["executor_jvm_info"])
	}

	c.StartAPIServer(t)
	c.Admin(t, http.MethodPatch, "/api/v1/nodes/node-a", "application/merge-patch+json",
		map[string]any{"metadata": map[string]any{"labels": map[string]string{"karpenter.sh/nodepool": newPool}}}, http.StatusOK, nil)
	testenv.WaitFor(t, 60*time.Second, "the exporter to recover and see the node's new pool", func() bool {
		s = e.scrape(t)
		refresh, _ := gauge(s, "executor_metadata_refresh_success")
		pods, _ := gauge(s, "executor_kubernetes_pod_list_success")
		_, info := find(s, "executor_instance_info", map[string]string{"node": "node-a", "node_pool": newPool})
		_, labels := find(s, "executor_node_labels", map[string]string{"label_karpenter_sh_nodepool": newPool})
		return refresh == 1 && pods == 1 && info && labels
	})
	if _, ok := find(s, "executor_jvm_info", withPID(wantA, pidA)); !ok {
		t.Errorf("the JVM's pod after the restart: %v", s["executor_jvm_info"])
	}
}

// pod is a Pod the test made and what its container's cgroup is named by.
type pod struct {
	namespace, name, uid, containerID string
}

func (c *cluster) createNode(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	c.Admin(t, http.MethodPost, "/api/v1/nodes", "", map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec":     map[string]any{"providerID": "aws:///eu-west-1a/i-0" + name},
	}, http.StatusCreated, nil)
}

func (c *cluster) createNamespace(t *testing.T, name string) {
	t.Helper()
	c.Admin(t, http.MethodPost, "/api/v1/namespaces", "", map[string]any{"metadata": map[string]any{"name": name}}, http.StatusCreated, nil)
	// The ServiceAccount admission plugin wants the pods' ServiceAccount;
	// no controller manager makes it here.
	c.Admin(t, http.MethodPost, "/api/v1/namespaces/"+name+"/serviceaccounts", "",
		map[string]any{"metadata": map[string]any{"name": "default"}}, http.StatusCreated, nil)
}

// createPod creates a Spark executor's pod bound to node and reports its
// container running, as the kubelet would, with a new container ID.
func (c *cluster) createPod(t *testing.T, namespace, name, node string) pod {
	t.Helper()
	const container, image = "spark-kubernetes-executor", "docker.io/apache/spark:3.5.1"
	var created struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	c.Admin(t, http.MethodPost, "/api/v1/namespaces/"+namespace+"/pods", "", map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": map[string]string{"team": "data", "spark-role": "executor"}},
		"spec": map[string]any{"nodeName": node, "automountServiceAccountToken": false,
			"containers": []any{map[string]any{"name": container, "image": image}}},
	}, http.StatusCreated, &created)
	p := pod{namespace: namespace, name: name, uid: created.Metadata.UID, containerID: randomHex(t, 32)}
	c.Admin(t, http.MethodPatch, "/api/v1/namespaces/"+namespace+"/pods/"+name+"/status", "application/merge-patch+json", map[string]any{
		"status": map[string]any{"phase": "Running", "containerStatuses": []any{map[string]any{
			"name": container, "image": image, "imageID": image + "@sha256:" + randomHex(t, 32),
			"containerID": "containerd://" + p.containerID, "ready": true, "restartCount": 0, "started": true,
			"state": map[string]any{"running": map[string]any{"startedAt": time.Now().UTC().Format(time.RFC3339)}},
		}}},
	}, http.StatusOK, nil)
	return p
}

// startPodJVM starts a stand-in executor in the cgroup the kubelet (cgroupfs
// driver) and containerd make for the pod's container.
func startPodJVM(t *testing.T, qos testenv.MemoryCgroup, p pod) *testjvm.JVM {
	t.Helper()
	cg := qos.Child(t, "pod"+p.uid, 512<<20).Child(t, p.containerID, 512<<20)
	return testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Cgroup: cg.Procs(),
		Args: []string{"--executor-id", "1", "--app-id", "spark-" + p.name, "--exit-after-s", "1800"}})
}

// withPID is want with the JVM's pid label.
func withPID(want map[string]string, pid int) map[string]string {
	out := map[string]string{"pid": strconv.Itoa(pid)}
	for k, v := range want {
		out[k] = v
	}
	return out
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
