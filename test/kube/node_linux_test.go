package kube

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// The real node's name, and the user its kubelet is (tokens.csv).
const (
	realNode     = "spark-node-1"
	nodeUser     = "system:node:" + realNode
	sandboxImage = "registry.local/pause:pause"
)

// node is a real node of the suite's cluster: Debian's containerd and runc,
// and a kubelet built from pinned modules (`make kubelet`), registered with
// the API server. The kubelet runs on this machine's cgroup v1 with the
// cgroupfs driver, below a cgroup root of the test's own in every
// hierarchy, so nothing it makes outlives the test.
type node struct {
	name, ip   string
	dir        string
	ctrSock    string
	cgroupRoot string // e.g. /executor-exporter-node-1a2b3c4d
	containerd *process
	kubelet    *process
	// exporterPort is the chart's exporter's port on the node's network.
	exporterPort int
	imported     bool // the exporter's image is in containerd
}

// kubeletBin returns $KUBELET after checking it is there.
func kubeletBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("KUBELET")
	if p == "" {
		testenv.Unavailable(t, "KUBELET is not set: make test builds the kubelet (make kubelet) and sets it")
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Unavailable(t, "KUBELET=%s: %v", p, err)
	}
	return p
}

// startNode starts containerd with the sandbox image imported and a
// kubelet registered as realNode, and waits until the Node is Ready.
func startNode(t *testing.T, c *cluster) *node {
	t.Helper()
	kubelet := kubeletBin(t)
	pause := os.Getenv("PAUSE_IMAGE")
	if pause == "" {
		testenv.Unavailable(t, "PAUSE_IMAGE is not set: make test builds the pod sandbox image (make pause-image) and sets it")
	}
	for _, tool := range []string{"containerd", "ctr", "runc", "containerd-shim-runc-v2"} {
		testenv.RequireTool(t, tool)
	}
	n := &node{name: realNode, ip: hostIP(t), dir: t.TempDir(), exporterPort: freePort(t)}
	n.cgroupRoot = "/executor-exporter-node-" + randomHex(t, 4)
	makeCgroupRoot(t, n.cgroupRoot)
	restoreSysctls(t)
	n.startContainerd(t)
	n.ctr(t, "images", "import", "--base-name", strings.Split(sandboxImage, ":")[0], pause)

	// The kubelet's credentials: a token of system:node:<name> in
	// system:nodes (tokens.csv), bound to the system:node ClusterRole.
	c.Admin(t, http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "",
		map[string]any{"metadata": map[string]any{"name": "executor-exporter-test-node"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node"},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": nodeUser}}},
		http.StatusCreated, nil)
	kubeconfig := c.kubeconfig(t, "kubelet", c.NodeToken)
	port, healthz := freePort(t), freePort(t)
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has cgroup v1 (hybrid); from 1.35 the kubelet refuses it
# unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
containerRuntimeEndpoint: unix://%[2]s
address: %[3]s
port: %[4]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[5]d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[6]s}
authorization: {mode: AlwaysAllow}
failSwapOn: false
# The machine's sysctls are restored when the test ends.
protectKernelDefaults: false
clusterDomain: cluster.local
evictionHard: {memory.available: 1Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: true
podLogsDir: %[7]s
`, n.cgroupRoot, n.ctrSock, n.ip, port, healthz, c.pki.CA, filepath.Join(n.dir, "pod-logs"))
	writeFile(t, filepath.Join(n.dir, "kubelet.yaml"), []byte(config))
	cmd := exec.Command(kubelet, "--config="+filepath.Join(n.dir, "kubelet.yaml"), "--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(n.dir, "kubelet"), "--hostname-override="+n.name, "--node-ip="+n.ip, "--v=2",
		"--node-labels="+nodeLabelsFlag(nodeLabels))
	n.kubelet = startProcess(t, "kubelet", cmd)
	t.Cleanup(func() { n.removePods(t) })

	testenv.WaitFor(t, 3*time.Minute, "node "+n.name+" to be Ready", func() bool {
		if n.kubelet.Exited() {
			t.Fatalf("the kubelet exited:\n%s", tail(n.kubelet.Output(), 60))
		}
		var nodeObj struct {
			Status struct {
				Conditions []struct{ Type, Status, Reason, Message string } `json:"conditions"`
			} `json:"status"`
		}
		if code, body := c.do(t, c.AdminToken, http.MethodGet, "/api/v1/nodes/"+n.name, "", nil); code != http.StatusOK || json.Unmarshal(body, &nodeObj) != nil {
			return false
		}
		for _, cond := range nodeObj.Status.Conditions {
			if cond.Type == "Ready" {
				return cond.Status == "True"
			}
		}
		return false
	})
	return n
}

// startContainerd runs Debian's containerd with a configuration of the
// test's own: its root, state and socket in the test's directory, the
// cgroupfs driver as the kubelet's, the locally built sandbox image, no
// CNI plugin: every pod of the node has the host's network (containerd
// gives a pod of its own network an address only through a plugin that
// changes the host's network, which the tests leave alone).
func (n *node) startContainerd(t *testing.T) {
	t.Helper()
	n.ctrSock = filepath.Join(n.dir, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  # The kubelet asks for oom_score_adj -998 for the sandbox; where the
  # test runs without CAP_SYS_RESOURCE (this machine's sandbox), runc
  # cannot lower it and the sandbox fails to start. Containers get no
  # lower score than containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    conf_dir = %[5]q
`, filepath.Join(n.dir, "containerd"), filepath.Join(n.dir, "containerd-state"), n.ctrSock, sandboxImage, filepath.Join(n.dir, "cni"))
	writeFile(t, filepath.Join(n.dir, "containerd.toml"), []byte(config))
	// containerd calls no CNI plugin for pods of the host's network, but
	// reports the network ready (and the kubelet the node Ready) only once
	// it has loaded a configuration: a loopback-only one.
	writeFile(t, filepath.Join(n.dir, "cni", "10-loopback.conflist"),
		[]byte(`{"cniVersion": "0.4.0", "name": "loopback", "plugins": [{"type": "loopback"}]}`))
	// Cleanups run last first: the mounts go after containerd.
	t.Cleanup(func() { unmountBeneath(t, n.dir) })
	n.containerd = startProcess(t, "containerd", exec.Command("containerd", "--config", filepath.Join(n.dir, "containerd.toml")))
	testenv.WaitFor(t, 60*time.Second, "containerd to answer", func() bool {
		if n.containerd.Exited() {
			t.Fatalf("containerd exited:\n%s", n.containerd.Output())
		}
		_, err := n.ctrErr("version")
		return err == nil
	})
}

// ctr runs Debian's ctr against the node's containerd, in the namespace
// the kubelet's pods live in.
func (n *node) ctr(t *testing.T, args ...string) string {
	t.Helper()
	out, err := n.ctrErr(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (n *node) ctrErr(args ...string) (string, error) {
	cmd := exec.Command("ctr", append([]string{"--address", n.ctrSock, "--namespace", "k8s.io"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// removePods stops the kubelet and then every container containerd runs
// for it: their shims and mounts go with them.
func (n *node) removePods(t *testing.T) {
	n.kubelet.Stop(t)
	out, err := n.ctrErr("tasks", "ls", "--quiet")
	if err != nil {
		t.Logf("listing the node's containers: %v", err)
		return
	}
	for _, id := range strings.Fields(out) {
		_, _ = n.ctrErr("tasks", "kill", "--signal", "SIGKILL", id)
	}
	for _, id := range strings.Fields(out) {
		for range 50 {
			if _, err := n.ctrErr("tasks", "delete", id); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if ids, err := n.ctrErr("containers", "ls", "--quiet"); err == nil {
		for _, id := range strings.Fields(ids) {
			_, _ = n.ctrErr("containers", "delete", id)
		}
	}
}

// v1Hierarchies are the cgroup v1 hierarchies the kubelet (cgroupfs
// driver, through runc's libcontainer) makes its cgroups in.
func v1Hierarchies(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup" {
				dirs = append(dirs, fields[4])
			}
		}
	}
	if len(dirs) == 0 {
		testenv.Unavailable(t, "no cgroup v1 hierarchy: test/kube's node runs the kubelet on cgroup v1 (hybrid)")
	}
	return dirs
}

// makeCgroupRoot makes the kubelet's cgroup root in every v1 hierarchy
// (the kubelet wants it to exist), and removes it, with what the kubelet
// made below, when the test ends.
func makeCgroupRoot(t *testing.T, root string) {
	t.Helper()
	for _, h := range v1Hierarchies(t) {
		dir := filepath.Join(h, root)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testenv.RemoveCgroupTree(t, dir) })
		// A new cpuset has no cpus and no memory nodes: its parent's.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// unmountBeneath unmounts whatever containerd and the kubelet left mounted
// below dir (rootfs overlays, volumes), deepest first.
func unmountBeneath(t *testing.T, dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Error(err)
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("unmount %s: %v", p, err)
		}
	}
}

// restoreSysctls puts back, when the test ends, the kernel settings the
// kubelet sets at its start (protectKernelDefaults: false): the machine's
// other tests run with Debian's.
func restoreSysctls(t *testing.T) {
	t.Helper()
	for _, name := range []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"} {
		path := filepath.Join("/proc/sys", name)
		old, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		t.Cleanup(func() {
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Errorf("restoring %s: %v", path, err)
			}
		})
	}
}

// hostIP is this machine's first address that is not loopback: the node's
// InternalIP, which the API server proxies to (it refuses loopback).
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil && !ipnet.IP.IsLoopback() && !ipnet.IP.IsLinkLocalUnicast() {
			return ipnet.IP.String()
		}
	}
	testenv.Unavailable(t, "no IPv4 address but loopback: the node needs one the API server may proxy to")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(testenv.FreeAddr(t))
	port, _ := strconv.Atoi(p)
	return port
}

// nodeLabelsFlag is the kubelet's --node-labels value for labels.
func nodeLabelsFlag(labels map[string]string) string {
	var kv []string
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
