package collector

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/exits"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/jvmend"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// A pod layout: the cgroup directories the kubelet (or YARN) makes, below
// a test's memory cgroup, and the labels a JVM in it must get.
type podLayout struct {
	name, dir string
	// want: namespace, pod, container, uid, container_id with the API;
	// noAPI: the same without it.
	want, noAPI map[string]string
}

const (
	layoutUID = "0f5c7d3e-8a1b-4c2d-9e6f-0123456789ab"
	layoutCID = "3b4f8e2a6c1d9b7e5f0a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a6c8e0b1d"
)

func podLayouts() []podLayout {
	uid, cid, us := layoutUID, layoutCID, strings.ReplaceAll(layoutUID, "-", "_")
	api := func(runtime string) map[string]string {
		return map[string]string{"namespace": "data-eng", "pod": "etl-exec-7", "container": "spark-kubernetes-executor",
			"uid": uid, "container_id": runtime + "://" + cid}
	}
	bare := func(containerID string) map[string]string {
		return map[string]string{"namespace": "", "pod": "", "container": "", "uid": uid, "container_id": containerID}
	}
	return []podLayout{
		{"cgroupfs burstable containerd", "kubepods/burstable/pod" + uid + "/" + cid, api("containerd"), bare(cid)},
		{"cgroupfs besteffort cri-o", "kubepods/besteffort/pod" + uid + "/crio-" + cid, api("cri-o"), bare("cri-o://" + cid)},
		{"cgroupfs guaranteed docker", "kubepods/pod" + uid + "/" + cid, api("docker"), bare(cid)},
		{"systemd burstable containerd", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us + ".slice/cri-containerd-" + cid + ".scope",
			api("containerd"), bare("containerd://" + cid)},
		{"systemd besteffort cri-o crun sub-cgroup", "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us + ".slice/crio-" + cid + ".scope/container",
			api("cri-o"), bare("cri-o://" + cid)},
		{"systemd guaranteed docker", "kubepods.slice/kubepods-pod" + us + ".slice/docker-" + cid + ".scope", api("docker"), bare("docker://" + cid)},
		{"containerd v1 systemd form", "system.slice/containerd.service/kubepods-burstable-pod" + us + ".slice:cri-containerd:" + cid,
			api("containerd"), bare("containerd://" + cid)},
		{"yarn", "hadoop-yarn/container_e17_1700000000000_0042_02_000117",
			map[string]string{"namespace": "", "pod": "", "container": "container_e17_1700000000000_0042_02_000117", "uid": "", "container_id": ""}, nil},
	}
}

// makeLayout creates dir's cgroups below base and removes them (deepest
// first) when the test ends, before base itself goes. On cgroup v2 the
// memory controller is enabled down to the leaf, as the kubelet does, so
// the leaf has memory files of its own; processes then live in leaves only.
func makeLayout(t *testing.T, base testenv.MemoryCgroup, dir string) string {
	t.Helper()
	leaf := filepath.Join(base.Dir, dir)
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	if base.Version == 2 {
		for d := base.Dir; d != leaf; d = filepath.Join(d, strings.SplitN(strings.TrimPrefix(leaf, d+"/"), "/", 2)[0]) {
			if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
				t.Fatalf("enabling memory below %s: %v", d, err)
			}
		}
	}
	t.Cleanup(func() {
		for d := leaf; d != base.Dir; d = filepath.Dir(d) {
			// Moved out when the JVM moved on, or killed by then.
			testenv.WaitFor(t, 10*time.Second, "removing cgroup "+d, func() bool {
				err := os.Remove(d)
				return err == nil || errors.Is(err, os.ErrNotExist)
			})
		}
	})
	return leaf
}

// kubeStub serves node n1's pods for every layout's runtime.
func kubeStub(t *testing.T, runtime string) (*cloudtest.Server, *cloudtest.Pods) {
	store := &cloudtest.Pods{}
	store.Set(
		cloudtest.Pod{UID: layoutUID, Namespace: "data-eng", Name: "etl-exec-7", Node: "n1",
			Labels:     map[string]string{"spark-app-name": "etl-nightly", "spark-role": "executor", "team": "data"},
			Containers: []cloudtest.PodContainer{{Name: "spark-kubernetes-executor", ID: runtime + "://" + layoutCID}}},
		cloudtest.Pod{UID: "11111111-2222-4333-8444-555555555555", Namespace: "other", Name: "elsewhere", Node: "n2"},
	)
	return cloudtest.NewKubernetesWithPods(t, "t0ken", nil, store), store
}

// podRefresher lists n1's pods from server, started; timeout bounds each
// request.
func podRefresher(t *testing.T, server *httptest.Server, timeout time.Duration) *cloud.Refresher {
	t.Helper()
	dir := t.TempDir()
	kc := cloud.KubernetesConfig{NodeName: "n1", APIURL: server.URL, TokenFile: filepath.Join(dir, "token"), CAFile: filepath.Join(dir, "ca.crt"),
		Pods: cloud.PodsConfig{Enabled: true, LabelAllowlist: []string{"spark-app-name", "team"}, RefreshInterval: time.Hour, MinInterval: 10 * time.Millisecond}}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	if err := os.WriteFile(kc.CAFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc.TokenFile, []byte("t0ken"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := cloud.NewRefresher(cloud.Config{Provider: cloud.ProviderNone, SysFS: dir, Timeout: timeout, RefreshInterval: time.Hour, Kubernetes: kc}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// podJVMCollector is the jvm collector with pods from src (nil: none).
func podJVMCollector(t *testing.T, src podSource) *prometheus.Registry {
	t.Helper()
	tracker, err := jvm.NewTracker(jvm.Config{ProcFS: "/proc", SysFS: "/sys", Retention: time.Minute, MaxProcesses: 1000}, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	c := NewJVMCollector(tracker, log.NewNopLogger()).(*jvmCollector)
	if src != nil {
		c.pods, c.podLabels = src, []string{"spark-app-name", "team"}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"jvm": c}))
	return reg
}

// jvmInfo scrapes reg and returns the labels of pid's executor_jvm_info.
func jvmInfo(t *testing.T, reg prometheus.Gatherer, pid string) map[string]string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range families {
		if mf.GetName() != "executor_jvm_info" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["pid"] == pid {
				return labels
			}
		}
	}
	return nil
}

func matches(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// One real JVM moved through a real memory cgroup named as each layout
// names it: with the API stub it gets namespace, pod, container and the
// allowlisted pod labels; without, the pod UID and container ID.
func TestJVMPodFromCgroupLayouts(t *testing.T) {
	testjvm.RequireJava(t)
	base := testenv.NewMemoryCgroup(t, 512<<20)
	// Between layouts the JVM waits in a leaf of its own (v2 keeps
	// processes out of cgroups with children that have controllers).
	park := filepath.Join(makeLayout(t, base, "park"), "cgroup.procs")
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Cgroup: park,
		Args: []string{"--executor-id", "7", "--app-id", "spark-5f0e8a2b", "--exit-after-s", "600"}})
	pidLabel := strconv.Itoa(j.PID)

	for _, l := range podLayouts() {
		t.Run(l.name, func(t *testing.T) {
			leaf := makeLayout(t, base, l.dir)
			if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pidLabel), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.WriteFile(park, []byte(pidLabel), 0o644) })

			runtime, _, _ := strings.Cut(l.want["container_id"], "://")
			server, _ := kubeStub(t, runtime)
			withAPI := podJVMCollector(t, podRefresher(t, server.Server, 5*time.Second))
			var got map[string]string
			testenv.WaitFor(t, 60*time.Second, "the pod's labels on executor_jvm_info", func() bool {
				got = jvmInfo(t, withAPI, pidLabel)
				return matches(got, l.want)
			})
			if l.want["pod"] != "" && (got["label_spark_app_name"] != "etl-nightly" || got["label_team"] != "data") {
				t.Errorf("allowlisted pod labels missing: %v", got)
			}
			if _, ok := got["label_spark_role"]; ok {
				t.Errorf("a pod label not in the allowlist: %v", got)
			}
			if got["app_id"] != "spark-5f0e8a2b" || got["executor_id"] != "7" {
				t.Errorf("identity labels: %v", got)
			}
			t.Logf("executor_jvm_info with the API: %d bytes in the text format", infoLineBytes(got))
			if l.noAPI != nil {
				got := jvmInfo(t, podJVMCollector(t, nil), pidLabel)
				if !matches(got, l.noAPI) {
					t.Errorf("without the API\n got  %v\n want %v", got, l.noAPI)
				}
				t.Logf("executor_jvm_info without the API: %d bytes in the text format", infoLineBytes(got))
			}
		})
	}
}

// However the API server fails — hangs, refuses, sends 50 MB, or is gone —
// a scrape does not wait for it, and the labels from the cgroup and the
// process stay.
func TestJVMPodAPIFailuresLeaveScrapesAlone(t *testing.T) {
	testjvm.RequireJava(t)
	base := testenv.NewMemoryCgroup(t, 512<<20)
	layout := podLayouts()[3] // systemd, containerd
	leaf := makeLayout(t, base, layout.dir)
	j := testjvm.Start(t, testjvm.Options{JVMArgs: []string{"-Xmx32m"}, Cgroup: filepath.Join(leaf, "cgroup.procs"),
		Args: []string{"--executor-id", "7", "--app-id", "spark-5f0e8a2b", "--exit-after-s", "600"}})
	pidLabel := strconv.Itoa(j.PID)
	fromCgroup := map[string]string{"app_id": "spark-5f0e8a2b", "executor_id": "7", "role": "executor",
		"uid": layoutUID, "container_id": "containerd://" + layoutCID}
	noPod := map[string]string{"namespace": "", "pod": "", "container": ""}

	huge := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		item := `{"metadata":{"uid":"` + layoutUID + `","labels":{"pad":"` + strings.Repeat("x", 8000) + `"}}},`
		_, _ = w.Write([]byte(`{"kind":"PodList","items":[`))
		for range 50 << 20 / len(item) {
			if _, err := w.Write([]byte(item)); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`{}]}`))
	}))
	defer huge.Close()

	for _, tc := range []struct {
		name  string
		setup func(s *cloudtest.Server) *httptest.Server
	}{
		// A request that never ends: with an hour's timeout, a scrape that
		// waited for it would not return within the test's deadline.
		{"hangs", func(s *cloudtest.Server) *httptest.Server { s.Hang(); return s.Server }},
		{"403", func(s *cloudtest.Server) *httptest.Server {
			s.Fail("/api/v1/pods", http.StatusForbidden)
			return s.Server
		}},
		{"50 MB", func(*cloudtest.Server) *httptest.Server { return huge }},
		{"down", func(s *cloudtest.Server) *httptest.Server { s.Close(); return s.Server }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stub, _ := kubeStub(t, "containerd")
			server := tc.setup(stub)
			r := podRefresher(t, server, time.Hour)
			if tc.name == "hangs" {
				testenv.WaitFor(t, 30*time.Second, "the pod list in flight", func() bool { return stub.Requests() > 0 })
			}
			if tc.name != "hangs" {
				testenv.WaitFor(t, 60*time.Second, "the failed pod list", func() bool { return !r.Pods().LastAttempt.IsZero() })
				if snap := r.Pods(); snap.Success || snap.Index != nil {
					t.Fatalf("API %s: the list succeeded: %+v", tc.name, snap)
				}
			}
			reg := podJVMCollector(t, r)
			for range 3 {
				got := jvmInfo(t, reg, pidLabel)
				if !matches(got, fromCgroup) || !matches(got, noPod) {
					t.Fatalf("API %s: executor_jvm_info %v, want %v and %v", tc.name, got, fromCgroup, noPod)
				}
			}
		})
	}

	// Labels from a list that succeeded stay when later lists fail.
	stub, _ := kubeStub(t, "containerd")
	r := podRefresher(t, stub.Server, time.Hour)
	reg := podJVMCollector(t, r)
	testenv.WaitFor(t, 60*time.Second, "the pod's labels", func() bool { return matches(jvmInfo(t, reg, pidLabel), layout.want) })
	stub.Fail("/api/v1/pods", http.StatusForbidden)
	r.WantPod("99999999-2222-4333-8444-555555555555", "") // an unknown pod: a list, refused
	testenv.WaitFor(t, 60*time.Second, "the refused list", func() bool { return !r.Pods().Success })
	if got := jvmInfo(t, reg, pidLabel); !matches(got, layout.want) || !matches(got, fromCgroup) {
		t.Fatalf("after a refused list: %v, want %v", got, layout.want)
	}
}

// An executor's exit names its pod as the pod list had it, from the last
// sample's cgroup: its info series, the usual join, ends with it.
func TestExitsNameThePod(t *testing.T) {
	podCgroup := "/kubepods/burstable/pod" + layoutUID + "/" + layoutCID
	pods := staticPods{cloud.PodsSnapshot{Index: cloud.NewPodIndex([]cloud.Pod{{UID: layoutUID, Namespace: "data-eng", Name: "etl-exec-7",
		Containers: map[string]cloud.Container{layoutCID: {Name: "spark-kubernetes-executor"}}}})}}
	cfg := defaultExitsConfig
	cfg.Pods = pods
	f := newExitsFixture(t, cfg)
	s := jvm.Sample{Identity: jvm.Identity{PID: 101, Role: jvm.RoleExecutor, AppID: "app-1", ExecutorID: "1"}, Time: f.now.Add(-time.Second),
		HeapUsed: 100 << 20, HeapMax: 1 << 30, RSSJVM: 300 << 20, CgroupPath: podCgroup}
	f.w.Gone(f.now, []jvm.Exit{{Last: s, End: jvmend.End{PID: 101, Start: f.now.Add(-time.Hour), LastAlive: s.Time, Noticed: f.now, File: exits.FileLeftBehind,
		Heap: exits.Heap{Known: true, Source: "final counters", Used: s.HeapUsed, Max: s.HeapMax}}}})
	f.now = f.now.Add(2 * time.Second)
	f.w.Killed(101, f.now, "heap", "")
	key := "executor_jvm_exits_total{app_id=app-1,container=spark-kubernetes-executor,executor_id=1,namespace=data-eng,pid=101,pod=etl-exec-7,reason=oom_killed,role=executor}"
	var got map[string]float64
	for range 2 {
		got, _ = scrapeOOM(t, f.c)
		f.now = f.now.Add(10 * time.Second)
	}
	if got[key] != 1 {
		t.Fatalf("%s = %v, want 1; all: %v", key, got[key], got)
	}
}

// infoLineBytes is the length of a series' line in the text format:
// name{k="v",…} 1.
func infoLineBytes(labels map[string]string) int {
	n := len("executor_jvm_info{} 1") + len(labels) - 1
	for k, v := range labels {
		n += len(k) + len(`=""`) + len(v)
	}
	return n
}

// executor_kubernetes_pod_list_success says whether the names are current.
func TestCloudCollectorReportsPodList(t *testing.T) {
	stub, _ := kubeStub(t, "containerd")
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: stub.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newTestCloudCollector(t, cloud.Config{Provider: cloud.ProviderNone, SysFS: dir, Timeout: 5 * time.Second, RefreshInterval: time.Hour,
		Kubernetes: cloud.KubernetesConfig{NodeName: "n1", APIURL: stub.URL, TokenFile: filepath.Join(dir, "token"), CAFile: filepath.Join(dir, "ca.crt"),
			Pods: cloud.PodsConfig{Enabled: true, RefreshInterval: time.Hour, MinInterval: 10 * time.Millisecond}}})
	r := c.refresher
	listOK := func() (float64, bool) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"cloud": c}))
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range families {
			if mf.GetName() == "executor_kubernetes_pod_list_success" {
				return value(mf.GetMetric()[0]), true
			}
		}
		return 0, false
	}
	testenv.WaitFor(t, 30*time.Second, "a refused list (no token)", func() bool {
		v, ok := listOK()
		return ok && v == 0
	})
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("t0ken"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.WantPod(layoutUID, "") // not listed yet: a list now
	testenv.WaitFor(t, 30*time.Second, "a list that succeeds", func() bool { v, _ := listOK(); return v == 1 })
}

// recordingPods is a pod list that records what it is asked for.
type recordingPods struct {
	staticPods
	wanted []string
}

func (r *recordingPods) WantPod(uid, containerID string) {
	r.wanted = append(r.wanted, uid+"/"+containerID)
}

// A JVM in a pod or container the list lacks asks for a list; one the list
// has does not; the environment's pod name stands until the list has it.
func TestResolvePodAsksForWhatTheListLacks(t *testing.T) {
	other := strings.Repeat("c", 64)
	src := &recordingPods{staticPods: staticPods{cloud.PodsSnapshot{Index: cloud.NewPodIndex([]cloud.Pod{{UID: layoutUID, Namespace: "ns", Name: "p",
		Containers: map[string]cloud.Container{layoutCID: {Name: "exec", ID: "containerd://" + layoutCID}}}})}}}
	jvmIn := func(uid, cid string) *jvm.JVM {
		return &jvm.JVM{Sample: jvm.Sample{CgroupPath: "/kubepods/pod" + uid + "/" + cid}, Pod: "from-env"}
	}
	snap := src.Pods()
	if got := resolvePod(jvmIn(layoutUID, layoutCID), snap, src, nil); got.pod != "p" || got.container != "exec" || got.containerID != "containerd://"+layoutCID {
		t.Errorf("listed pod: %+v", got)
	}
	if got := resolvePod(jvmIn(layoutUID, other), snap, src, nil); got.pod != "p" || got.container != "" || got.containerID != other {
		t.Errorf("listed pod, new container: %+v", got)
	}
	if got := resolvePod(jvmIn(driverUIDForTest, layoutCID), snap, src, nil); got.pod != "from-env" || got.namespace != "" || got.uid != driverUIDForTest {
		t.Errorf("pod not listed: %+v", got)
	}
	want := []string{layoutUID + "/" + other, driverUIDForTest + "/" + layoutCID}
	if strings.Join(src.wanted, " ") != strings.Join(want, " ") {
		t.Errorf("asked for %v, want %v", src.wanted, want)
	}
	// An allowlist gives every JVM the same label names.
	got := resolvePod(jvmIn(layoutUID, layoutCID), snap, src, []string{"team", "spark-app-name"})
	if len(got.labels) != 2 || got.labels["team"] != "" {
		t.Errorf("allowlisted labels: %v", got.labels)
	}
}

const driverUIDForTest = "11111111-2222-4333-8444-555555555555"

// The flags wire the cloud collector's pod list into the collectors that
// name pods; --no-kubernetes.pod-metadata and a missing node name leave
// them without.
func TestPodListWiring(t *testing.T) {
	kmsg := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(kmsg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	build := func(args ...string) *ExecutorCollector {
		t.Helper()
		parseFlags(t, append([]string{"--collector.jvm", "--collector.oom", "--collector.exits", "--collector.cloud", "--no-collector.memory",
			"--oom.kmsg-path=" + kmsg, "--cloud.provider=none", "--kubernetes.api-url=https://127.0.0.1:1",
			"--kubernetes.pod-labels=spark-app-name, team"}, args...)...)
		ec, err := NewExecutorCollector(log.NewNopLogger(), NewDependencies(log.NewNopLogger(), JVMTrackerConfigFromFlags()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ec.Stop)
		return ec
	}
	t.Cleanup(func() { parseFlags(t) })

	ec := build("--kubernetes.node-name=n1")
	r := ec.Collectors["cloud"].(*cloudCollector).refresher
	j := ec.Collectors["jvm"].(*jvmCollector)
	if !r.PodsEnabled() || j.pods != podSource(r) || ec.Collectors["oom"].(*oomCollector).cfg.Pods != podSource(r) ||
		ec.Collectors["exits"].(*exitsCollector).cfg.Pods != podSource(r) {
		t.Fatal("the jvm, oom and exits collectors do not read the cloud collector's pod list")
	}
	if strings.Join(j.podLabels, ",") != "spark-app-name,team" {
		t.Errorf("pod label allowlist %q", j.podLabels)
	}
	for _, args := range [][]string{{"--kubernetes.node-name=n1", "--no-kubernetes.pod-metadata"}, {"--kubernetes.node-name="}} {
		if ec := build(args...); ec.Collectors["jvm"].(*jvmCollector).pods != nil {
			t.Errorf("%v: pods listed", args)
		}
	}
}

// A kill's or an exit's cgroup is named from the pod list as it is: a pod
// it lacks (often one just deleted) is not asked for.
func TestPodOfCgroupAsksForNothing(t *testing.T) {
	src := &recordingPods{staticPods: staticPods{cloud.PodsSnapshot{Index: cloud.NewPodIndex([]cloud.Pod{{UID: layoutUID, Namespace: "ns", Name: "p",
		Containers: map[string]cloud.Container{layoutCID: {Name: "exec", ID: "containerd://" + layoutCID}}}})}}}
	for _, tc := range []struct{ path, ns, pod, container string }{
		{"/kubepods/pod" + layoutUID + "/" + layoutCID, "ns", "p", "exec"},
		{"/kubepods/pod" + layoutUID + "/" + strings.Repeat("c", 64), "ns", "p", ""},
		{"/kubepods/pod99999999-2222-4333-8444-555555555555/" + layoutCID, "", "", ""},
		{"/hadoop-yarn/container_1700000000000_0042_01_000002", "", "", "container_1700000000000_0042_01_000002"},
	} {
		if ns, pod, container := podOfCgroup(tc.path, src); ns != tc.ns || pod != tc.pod || container != tc.container {
			t.Errorf("podOfCgroup(%s) = %q, %q, %q; want %q, %q, %q", tc.path, ns, pod, container, tc.ns, tc.pod, tc.container)
		}
	}
	if len(src.wanted) > 0 {
		t.Errorf("podOfCgroup asked for pods %v", src.wanted)
	}
	if ns, pod, container := podOfCgroup("/kubepods/pod"+layoutUID+"/"+layoutCID, nil); ns != "" || pod != "" || container != "" {
		t.Errorf("without a pod source: %q, %q, %q", ns, pod, container)
	}
}
