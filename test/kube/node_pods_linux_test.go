package kube

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/executor-exporter/executor_exporter/internal/nativemem"
	"github.com/executor-exporter/executor_exporter/internal/oom"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// TestRealNode runs the chart's DaemonSet on a real node of the suite's
// cluster (a kubelet with Debian's containerd and runc, node_linux_test.go)
// beside Spark executors in real pods: the exporter's pod Running and
// Ready from the image `make image` builds, each executor's JVM named by
// the pod the kubelet made its cgroup for, a kernel OOM kill in a pod
// attributed to it with its region as the kubelet reports it, and each
// capability the chart grants shown necessary.
func TestRealNode(t *testing.T) {
	testjvm.RequireJava(t)
	c := startCluster(t)
	n := startNode(t, c)
	for _, ns := range []string{chartNS, "spark"} {
		c.createNamespace(t, ns)
		c.publishRootCA(t, ns)
	}
	ex := n.installChart(t, c)
	exec1 := n.runExecutorPod(t, c, executorPod{name: "exec-1", app: "spark-app-1", id: "1", limit: "512Mi"})

	t.Run("executor pod", func(t *testing.T) {
		want := map[string]string{"pid": strconv.Itoa(exec1.pid), "namespace": "spark", "pod": "exec-1",
			"container": executorContainer, "uid": exec1.uid, "app_id": "spark-app-1", "executor_id": "1"}
		wantInfo := map[string]string{"node": n.name, "node_pool": "spark-executors", "instance_type": "m6i.2xlarge",
			"region": "eu-west-1", "zone": "eu-west-1a", "lifecycle": "spot", "source": "kubernetes"}
		var s map[string][]series
		testenv.WaitFor(t, 90*time.Second, "the executor's JVM and the node on the exporter's series", func() bool {
			s = ex.scrape(t)
			_, named := find(s, "executor_jvm_info", want)
			_, info := find(s, "executor_instance_info", wantInfo)
			return named && info
		})
		if t.Failed() {
			t.Logf("jvm_info %v\ninstance_info %v", s["executor_jvm_info"], s["executor_instance_info"])
		}
		// The heap as the exporter reads it from the JVM's hsperfdata,
		// through /proc/<pid>/root of a uid that is not the exporter's.
		if v, ok := findSeries(s, "executor_jvm_memory_max_bytes", map[string]string{"pid": strconv.Itoa(exec1.pid), "area": "heap"}); !ok || v.value != 64<<20 {
			t.Errorf(`executor_jvm_memory_max_bytes{area="heap"} of the pod's JVM = %v (present %v), want 64 MiB (-Xmx64m)`, v.value, ok)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Run("capabilities", func(t *testing.T) { checkPodCapabilities(t, c, n, exec1.pid) })
	t.Run("oom kill", func(t *testing.T) {
		// /dev/kmsg opens only in a privileged container (docs/kubernetes.md).
		ex := n.installChart(t, c, "oom.privileged=true")
		checkPodOOMKill(t, c, n, ex)
	})
}

// executorContainer is the container name Spark gives an executor's.
const executorContainer = "spark-kubernetes-executor"

// executorPod is a Spark executor's pod the test runs on the node.
type executorPod struct {
	name, app, id string
	limit         string   // the container's memory limit
	jvmArgs, args []string // beyond -Xmx64m and Spark's executor arguments
	uid           string
	pid           int // the JVM's, on the host
}

// runExecutorPod runs a stand-in executor (test/java) in a pod with
// Spark's labels and a memory limit, as uid 65534 (not the exporter's),
// with the host's network as every pod of the node (startContainerd).
// The pod's image is the sandbox's, which has nothing of a JDK: the host's
// JDK, its libraries and the compiled classes are mounted read-only by
// hostPath, and /tmp (hsperfdata) is the pod's own emptyDir. It waits until
// the pod is Ready and finds the JVM in the cgroup the kubelet made.
func (n *node) runExecutorPod(t *testing.T, c *cluster, e executorPod) executorPod {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal(err)
	}
	if java, err = filepath.EvalSymlinks(java); err != nil {
		t.Fatal(err)
	}
	classes := testjvm.Classpath(t)
	// MkdirTemp made it 0700; the JVM's uid must read it.
	if err := os.Chmod(classes, 0o755); err != nil {
		t.Fatal(err)
	}
	var mounts, volumes []any
	hostPath := func(path, at string) {
		name := "host" + strconv.Itoa(len(volumes))
		volumes = append(volumes, map[string]any{"name": name, "hostPath": map[string]any{"path": path}})
		mounts = append(mounts, map[string]any{"name": name, "mountPath": at, "readOnly": true})
	}
	hostPath("/usr", "/usr")
	// Merged /usr: /lib and /lib64 are links to usr/lib and usr/lib64.
	for _, dir := range []string{"/lib", "/lib64", "/etc/java-17-openjdk"} {
		if _, err := os.Stat(dir); err == nil {
			hostPath(dir, dir)
		}
	}
	hostPath("/etc/passwd", "/etc/passwd")
	hostPath(classes, "/opt/spark/classes")
	volumes = append(volumes, map[string]any{"name": "tmp", "emptyDir": map[string]any{}})
	mounts = append(mounts, map[string]any{"name": "tmp", "mountPath": "/tmp"})

	command := append([]string{java, "-cp", "/opt/spark/classes", "-Xmx64m", "-XX:+UseSerialGC"}, e.jvmArgs...)
	command = append(command, testjvm.ExecutorClass)
	command = append(command, e.args...)
	command = append(command, "--executor-id", e.id, "--app-id", e.app, "--exit-after-s", "1800")
	var created struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	c.Admin(t, http.MethodPost, "/api/v1/namespaces/spark/pods", "", map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": e.name, "labels": map[string]string{
			"spark-role": "executor", "spark-app-selector": e.app, "spark-exec-id": e.id}},
		"spec": map[string]any{"nodeName": n.name, "automountServiceAccountToken": false, "hostNetwork": true,
			"securityContext": map[string]any{"runAsUser": 65534, "runAsGroup": 65534},
			"containers": []any{map[string]any{"name": executorContainer, "image": sandboxImage, "imagePullPolicy": "Never",
				"command": command, "volumeMounts": mounts,
				"resources": map[string]any{"limits": map[string]any{"memory": e.limit}}}},
			"volumes": volumes},
	}, http.StatusCreated, &created)
	e.uid = created.Metadata.UID
	p := waitPodReady(t, c, n, "spark", e.name)
	e.pid = n.containerPID(t, p)
	return e
}

// containerPID is the pid (on the host) of the pod's first container's
// process, read from the memory cgroup the kubelet made for it.
func (n *node) containerPID(t *testing.T, p podStatus) int {
	t.Helper()
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	dir := filepath.Join("/sys/fs/cgroup/memory", n.cgroupRoot, "kubepods", "burstable", "pod"+p.Metadata.UID, id)
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatalf("the container's memory cgroup: %v", err)
	}
	pids := strings.Fields(string(data))
	if len(pids) != 1 {
		t.Fatalf("the container's cgroup %s holds pids %v, want the JVM alone", dir, pids)
	}
	pid, _ := strconv.Atoi(pids[0])
	return pid
}

// checkPodOOMKill leaks direct buffers in an executor's pod of 256 MiB
// until the kernel kills the JVM in the container's cgroup: the kubelet
// reports the container OOMKilled and restarts it, and the exporter counts
// the kill for that pod with cause native and the region that grew.
func checkPodOOMKill(t *testing.T, c *cluster, n *node, ex chartPod) {
	leak := n.runExecutorPod(t, c, executorPod{name: "exec-oom", app: "spark-app-oom", id: "2", limit: "256Mi",
		jvmArgs: []string{"-XX:MaxDirectMemorySize=2g"},
		args:    []string{"--leak", "--kind", "direct-large", "--target-mb", "1024", "--on-signal", "USR1", "--rate-mb-s", "32", "--step-mb", "16"}})
	pid := strconv.Itoa(leak.pid)
	testenv.WaitFor(t, 60*time.Second, "the exporter to read the leaking executor", func() bool {
		_, ok := find(ex.scrape(t), "executor_jvm_native_memory_bytes", map[string]string{"pid": pid, "region": "heap"})
		return ok
	})
	// The restarted container waits for a signal it never gets.
	if err := syscall.Kill(leak.pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var p podStatus
	testenv.WaitFor(t, 2*time.Minute, "the kubelet to report exec-oom's container OOMKilled", func() bool {
		c.Admin(t, http.MethodGet, "/api/v1/namespaces/spark/pods/exec-oom", "", nil, http.StatusOK, &p)
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].LastState.Terminated != nil
	})
	if term := p.Status.ContainerStatuses[0].LastState.Terminated; term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("the kubelet reports the container's end as %s (exit %d), want OOMKilled (137)", term.Reason, term.ExitCode)
	}
	want := map[string]string{"pid": pid, "namespace": "spark", "pod": "exec-oom", "container": executorContainer,
		"app_id": "spark-app-oom", "executor_id": "2", "constraint": "CONSTRAINT_MEMCG", "task": "java", "cause": "native"}
	var kill series
	var s map[string][]series
	defer func() {
		if t.Failed() {
			t.Logf("executor_oom_kills_total: %v\nthe exporter's log:\n%s", s["executor_oom_kills_total"], n.podLog(t, chartNS, ex.name))
		}
	}()
	testenv.WaitFor(t, 60*time.Second, "the exporter to count the kill for exec-oom", func() bool {
		var ok bool
		s = ex.scrape(t)
		kill, ok = findSeries(s, "executor_oom_kills_total", want)
		return ok && kill.value == 1
	})
	// Direct buffers this large are mapped by malloc on their own: a
	// breakdown that saw them grow names native_mmap; a leak that filled
	// the pod between two breakdowns is inferred, direct_or_malloc.
	if r := kill.labels["region"]; r != oom.RegionDirectOrMalloc && r != nativemem.NativeMmap.String() {
		t.Errorf("the kill's region is %q, want %s or %s: %v", r, nativemem.NativeMmap, oom.RegionDirectOrMalloc, kill.labels)
	}
}

// checkPodCapabilities runs the chart's pod again with each capability its
// securityContext adds dropped in turn, and shows what each one is for:
// without it, the heap of another uid's JVM (exec-1's, 65534, read from
// its hsperfdata through /proc/<pid>/root) or the oom collector is lost
// where the shipped set has it. The JVM's own series (executor_jvm_info,
// from its world-readable command line) need none.
func checkPodCapabilities(t *testing.T, c *cluster, n *node, jvmPID int) {
	shipped := n.shippedCapabilities(t, c)
	with := n.podReads(t, c, shipped, jvmPID)
	if !with.jvm || !with.heap {
		t.Fatalf("the chart's pod with %v reads of the JVM of uid 65534 (pid %d): %+v, want its series and heap", shipped, jvmPID, with)
	}
	t.Logf("with %v: %+v", shipped, with)
	for _, drop := range shipped {
		got := n.podReads(t, c, without(shipped, drop), jvmPID)
		t.Logf("without %s: %+v", drop, got)
		if got == with {
			t.Errorf("the pod reads as much without %s as with it: the chart grants a capability it does not need", drop)
		}
	}
}

func without(all []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == drop })
}

// shippedCapabilities are the capabilities the chart's container adds.
func (n *node) shippedCapabilities(t *testing.T, c *cluster) []string {
	t.Helper()
	var list struct {
		Items []struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							SecurityContext struct {
								Capabilities struct{ Add, Drop []string }
							} `json:"securityContext"`
						}
					}
				}
			}
		}
	}
	c.Admin(t, http.MethodGet, "/apis/apps/v1/namespaces/"+chartNS+"/daemonsets", "", nil, http.StatusOK, &list)
	caps := list.Items[0].Spec.Template.Spec.Containers[0].SecurityContext.Capabilities
	if len(caps.Drop) != 1 || caps.Drop[0] != "ALL" || len(caps.Add) == 0 {
		t.Fatalf("the chart's container drops %v and adds %v, want ALL dropped and some added", caps.Drop, caps.Add)
	}
	return caps.Add
}

// podReading is what a pod of the exporter read: the JVM's series, its
// heap, and whether its oom collector works.
type podReading struct{ jvm, heap, oom bool }

// podReads runs the chart's pod with caps added (ALL dropped) and reports
// what it reads once its jvm collector has run for three discovery
// intervals (the default 5 s each).
func (n *node) podReads(t *testing.T, c *cluster, caps []string, jvmPID int) podReading {
	t.Helper()
	ex := n.daemonSetPod(t, c, func(container map[string]any) {
		sc := container["securityContext"].(map[string]any)
		sc["capabilities"] = map[string]any{"drop": []string{"ALL"}, "add": caps}
	})
	var r podReading
	var ran time.Time
	testenv.WaitFor(t, 60*time.Second, "the jvm collector of the pod with "+strings.Join(caps, ",")+" to run for 15 s", func() bool {
		s := ex.scrape(t)
		if v, ok := findSeries(s, "executor_scrape_collector_success", map[string]string{"collector": "jvm"}); !ok || v.value != 1 {
			return false
		}
		if ran.IsZero() {
			ran = time.Now()
		}
		_, exported := find(s, "executor_jvm_info", map[string]string{"pid": strconv.Itoa(jvmPID)})
		_, heap := find(s, "executor_jvm_memory_max_bytes", map[string]string{"pid": strconv.Itoa(jvmPID), "area": "heap"})
		v, _ := findSeries(s, "executor_scrape_collector_success", map[string]string{"collector": "oom"})
		r = podReading{jvm: r.jvm || exported, heap: r.heap || heap, oom: v.value == 1}
		return time.Since(ran) > 15*time.Second
	})
	return r
}

// podLog is the log the kubelet keeps of a pod's containers (podLogsDir).
func (n *node) podLog(t *testing.T, namespace, name string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(n.dir, "pod-logs", namespace+"_"+name+"_*", "*", "*.log"))
	var out strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Log(err)
			continue
		}
		out.WriteString(tail(string(data), 40))
	}
	return out.String()
}
