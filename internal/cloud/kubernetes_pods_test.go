package cloud

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/httpget"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

const (
	execUID    = "0f5c7d3e-8a1b-4c2d-9e6f-0123456789ab"
	execCID    = "3b4f8e2a6c1d9b7e5f0a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a6c8e0b1d"
	driverUID  = "11111111-2222-4333-8444-555555555555"
	staticHash = "5c8d2f0e9b7a4c6d1e3f5a7b9c0d2e4f"
)

func TestParsePodListFixture(t *testing.T) {
	body, err := os.ReadFile("testdata/kubernetes/pods.json")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := parsePodList(&httpget.Bounded{R: bytes.NewReader(body), N: maxPodListBytes}, []string{"spark-app-name", "team", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 4 {
		t.Fatalf("%d pods, want 4", len(pods))
	}
	idx := NewPodIndex(pods)
	exec, ok := idx.Pod(execUID)
	if !ok {
		t.Fatal("executor pod not found by UID")
	}
	want := Pod{UID: execUID, Namespace: "data-eng", Name: "etl-nightly-3f9a2b8c1d-exec-7",
		Labels:     map[string]string{"spark-app-name": "etl-nightly", "team": "data-eng"},
		Containers: map[string]Container{execCID: {Name: "spark-kubernetes-executor", ID: "containerd://" + execCID}}}
	if !reflect.DeepEqual(*exec, want) {
		t.Errorf("executor pod\n got  %+v\n want %+v", *exec, want)
	}
	driver, _ := idx.Pod(driverUID)
	for cid, name := range map[string]string{
		strings.Repeat("f", 64): "spark-kubernetes-driver",
		strings.Repeat("e", 64): "spark-kubernetes-driver", // before its restart
		strings.Repeat("b", 64): "log-shipper",
		strings.Repeat("a", 64): "fetch-jars", // init container
	} {
		if got := driver.Containers[cid].Name; got != name {
			t.Errorf("driver container %s… = %q, want %q", cid[:4], got, name)
		}
	}
	// A static pod's cgroup is named after its config hash.
	if p, ok := idx.Pod(staticHash); !ok || p.Name != "kube-proxy-ip-10-0-12-34.eu-west-1.compute.internal" {
		t.Errorf("static pod by config hash: %+v, %v", p, ok)
	}
	// A pending pod has no container ID yet.
	if p, ok := idx.Pod("6a1e2f3d-4c5b-4a69-8788-99aabbccddee"); !ok || len(p.Containers) != 0 {
		t.Errorf("pending pod: %+v, %v", p, ok)
	}
	if n := idx.Len(); n != 4 {
		t.Errorf("Len = %d, want 4", n)
	}
}

func TestParsePodListRefusals(t *testing.T) {
	for name, body := range map[string]string{
		"not json":    "<html>",
		"a Status":    `{"kind":"Status","status":"Failure","code":403}`,
		"no items":    `{"kind":"PodList","metadata":{}}`,
		"items map":   `{"kind":"PodList","items":{}}`,
		"cut off":     `{"kind":"PodList","items":[{"metadata":{"uid":"x"}}`,
		"trailing":    `{"kind":"PodList","items":[]`,
		"bad item":    `{"kind":"PodList","items":[{"metadata":[]}]}`,
		"over limit":  `{"kind":"PodList","items":[` + strings.Repeat(`{"metadata":{"uid":"x"}},`, 100) + `{}]}`,
		"kind number": `{"kind":1,"items":[]}`,
	} {
		if pods, err := parsePodList(&httpget.Bounded{R: strings.NewReader(body), N: 1024}, nil); err == nil {
			t.Errorf("%s: no error, %d pods", name, len(pods))
		}
	}
	// An empty list and a null one are lists.
	for _, body := range []string{`{"kind":"PodList","items":[]}`, `{"items":null,"kind":"PodList"}`} {
		if pods, err := parsePodList(&httpget.Bounded{R: strings.NewReader(body), N: 1024}, nil); err != nil || len(pods) != 0 {
			t.Errorf("%s: %v, %v", body, pods, err)
		}
	}
}

func TestKubernetesPodsClient(t *testing.T) {
	const token = "t0ken"
	store := &cloudtest.Pods{}
	store.Set(
		cloudtest.Pod{UID: execUID, Namespace: "ns", Name: "exec-1", Node: "n1", Labels: map[string]string{"spark-app-name": "etl"},
			Containers: []cloudtest.PodContainer{{Name: "spark-kubernetes-executor", ID: "cri-o://" + execCID}}},
		cloudtest.Pod{UID: driverUID, Namespace: "ns", Name: "elsewhere", Node: "n2"},
	)
	server := cloudtest.NewKubernetesWithPods(t, token, nil, store)
	k, err := newKubeClient(kubeConfigFor(t, server, token, "n1"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := k.pods(context.Background(), []string{"spark-app-name"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Name != "exec-1" || pods[0].Labels["spark-app-name"] != "etl" ||
		pods[0].Containers[execCID].ID != "cri-o://"+execCID {
		t.Fatalf("pods = %+v", pods)
	}
	// The stub refuses a list without the node's field selector, and so
	// would a cluster's API server with a restricted role.
	k.podsURL = server.URL + "/api/v1/pods"
	if _, err := k.pods(context.Background(), nil); err == nil {
		t.Error("a list of every pod in the cluster was accepted by the stub")
	}
	if !strings.Contains(podsURL("https://api:6443/", "ip-1.ec2.internal"), "/api/v1/pods?fieldSelector=spec.nodeName%3Dip-1.ec2.internal&resourceVersion=0") {
		t.Errorf("pods URL %s", podsURL("https://api:6443/", "ip-1.ec2.internal"))
	}
}

// podsRefresher is a Refresher that lists the pods of node n1 on server.
func podsRefresher(t *testing.T, server *cloudtest.Server, token string, pc PodsConfig) *Refresher {
	t.Helper()
	cfg := testConfig(t.TempDir(), "")
	cfg.Provider = ProviderNone
	cfg.Kubernetes = kubeConfigFor(t, server, token, "n1")
	pc.Enabled = true
	cfg.Kubernetes.Pods = pc
	r, err := NewRefresher(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func TestPodsListedAgainWhenANewPodIsWanted(t *testing.T) {
	const token = "t0ken"
	store := &cloudtest.Pods{}
	server := cloudtest.NewKubernetesWithPods(t, token, map[string]string{"n1": eksNode}, store)
	r := podsRefresher(t, server, token, PodsConfig{RefreshInterval: time.Hour, MinInterval: 10 * time.Millisecond})
	r.Start()
	testenv.WaitFor(t, 20*time.Second, "the first pod list", func() bool { return r.Pods().Success })
	if _, ok := r.Pods().Index.Pod(execUID); ok {
		t.Fatal("a pod before it exists")
	}
	// The executor's pod appears; a scrape sees its JVM and asks.
	store.Set(cloudtest.Pod{UID: execUID, Namespace: "ns", Name: "exec-1", Node: "n1",
		Containers: []cloudtest.PodContainer{{Name: "exec", ID: "containerd://" + execCID}}})
	r.WantPod(execUID, execCID)
	testenv.WaitFor(t, 20*time.Second, "the new pod", func() bool { _, ok := r.Pods().Index.Pod(execUID); return ok })

}

// Asking for a known pod wakes nothing; an unknown one wakes the lister
// once until the next full refresh, however often it is asked for.
func TestPodsWantAsksOnce(t *testing.T) {
	l := newPodLister(PodsConfig{}, nil, log.NewNopLogger())
	l.snap.Store(&PodsSnapshot{Index: NewPodIndex([]Pod{{UID: execUID, Containers: map[string]Container{execCID: {Name: "c"}}}})})
	woken := func() bool {
		select {
		case <-l.wake:
			return true
		default:
			return false
		}
	}
	l.want(execUID, execCID)
	l.want(execUID, "")
	if woken() {
		t.Fatal("a known pod woke the lister")
	}
	l.want(execUID, strings.Repeat("1", 64)) // a container the list does not have yet
	if !woken() {
		t.Fatal("an unknown container of a known pod did not wake the lister")
	}
	for i := range 3 {
		l.want(driverUID, "")
		if woken() != (i == 0) {
			t.Fatalf("asking for an unknown pod, time %d: woken %v", i+1, i != 0)
		}
	}
	l.want(execUID, strings.Repeat("1", 64)) // asked before the driver: still remembered
	if woken() {
		t.Fatal("a container asked for before another pod woke the lister again")
	}
	for range maxAsked + 1 {
		l.want(driverUID, strings.Repeat("2", 63)+string(rune('0'+len(l.asked)%10)))
	}
	if len(l.asked) > maxAsked {
		t.Fatalf("%d pods remembered, bound %d", len(l.asked), maxAsked)
	}
}

func TestPodsFailureKeepsLastList(t *testing.T) {
	const token = "t0ken"
	store := &cloudtest.Pods{}
	store.Set(cloudtest.Pod{UID: execUID, Namespace: "ns", Name: "exec-1", Node: "n1"})
	server := cloudtest.NewKubernetesWithPods(t, token, nil, store)
	r := podsRefresher(t, server, token, PodsConfig{RefreshInterval: time.Hour, MinInterval: 10 * time.Millisecond})
	if err := r.pods.refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	server.Fail("/api/v1/pods", http.StatusForbidden)
	if err := r.pods.refresh(context.Background()); err == nil {
		t.Fatal("403 gave no error")
	}
	snap := r.Pods()
	if _, ok := snap.Index.Pod(execUID); !ok || snap.Success || snap.LastSuccess.IsZero() {
		t.Fatalf("after a 403: %+v", snap)
	}
}

func TestPodsHugeListRefused(t *testing.T) {
	// 50 MB of valid-looking pods: refused at the bound, never decoded whole.
	item := `{"metadata":{"uid":"` + execUID + `","name":"p","namespace":"n","labels":{"pad":"` + strings.Repeat("x", 4000) + `"}}},`
	big := `{"kind":"PodList","items":[` + strings.Repeat(item, 50<<20/len(item)) + `{}]}`
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(big))
	}))
	defer server.Close()
	cfg := kubeConfigFor(t, &cloudtest.Server{Server: server}, "", "n1")
	k, err := newKubeClient(cfg, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.pods(context.Background(), nil); err == nil || !strings.Contains(err.Error(), httpget.ErrTooLarge.Error()) {
		t.Fatalf("50 MB list: %v, want %v", err, httpget.ErrTooLarge)
	}
}

func TestPodsOff(t *testing.T) {
	r := newTestRefresher(t, testConfig(t.TempDir(), ""))
	r.WantPod(execUID, execCID) // no lister: nothing to do, no panic
	if r.PodsEnabled() || r.Pods().Index != nil {
		t.Fatal("pods listed without a node and an API server")
	}
	if _, ok := r.Pods().Index.Pod(execUID); ok {
		t.Fatal("a nil index found a pod")
	}
}

// Whatever the API server sends, the list decodes or fails within its
// bound, and what it keeps is fit for label values.
func FuzzParsePodList(f *testing.F) {
	fixture, err := os.ReadFile("testdata/kubernetes/pods.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add([]byte(`{"kind":"PodList","items":null}`))
	f.Add([]byte(`{"items":[{"metadata":{"uid":"u","annotations":{"kubernetes.io/config.mirror":"u"}},"status":{"containerStatuses":[{"containerID":"://"}]}}],"kind":"PodList"}`))
	f.Add([]byte(`{"kind":"PodList","items":[{"status":{"containerStatuses":[{"lastState":{"terminated":null}}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 16
		pods, err := parsePodList(&httpget.Bounded{R: bytes.NewReader(data), N: limit}, []string{"*"})
		if err != nil {
			return
		}
		if len(data) > limit+1 {
			t.Fatalf("%d bytes accepted with a bound of %d", len(data), limit)
		}
		for _, p := range pods {
			checkLabelValue(t, "namespace", p.Namespace)
			checkLabelValue(t, "name", p.Name)
			for k, v := range p.Labels {
				checkLabelValue(t, "label "+k, v)
			}
			for id, c := range p.Containers {
				if id == "" || !strings.HasSuffix(c.ID, "://"+id) {
					t.Fatalf("container %q → %+v", id, c)
				}
				checkLabelValue(t, "container", c.Name)
			}
		}
		idx := NewPodIndex(pods)
		if idx.Len() > len(pods) {
			t.Fatalf("index of %d pods has %d", len(pods), idx.Len())
		}
	})
}
