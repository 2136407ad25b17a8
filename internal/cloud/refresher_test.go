package cloud

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-kit/log"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

var (
	awsNitroDMI = map[string]string{"sys_vendor": "Amazon EC2", "board_vendor": "Amazon EC2", "product_name": "m5.xlarge", "board_asset_tag": "i-0123456789abcdef0"}
	gcpDMI      = map[string]string{"sys_vendor": "Google", "product_name": "Google Compute Engine"}
	azureDMI    = map[string]string{"sys_vendor": "Microsoft Corporation", "product_name": "Virtual Machine", "chassis_asset_tag": azureChassisAssetTag}
	notCloudDMI = map[string]string{"sys_vendor": "QEMU", "product_name": "Standard PC (Q35 + ICH9, 2009)"}
)

// testConfig points every provider at url (or at nothing).
func testConfig(sysfs, url string) Config {
	return Config{Provider: ProviderAuto, SysFS: sysfs, AWSMetadataURL: url, GCPMetadataURL: url, AzureMetadataURL: url,
		Timeout: 2 * time.Second, RefreshInterval: time.Hour}
}

func newTestRefresher(t *testing.T, cfg Config) *Refresher {
	t.Helper()
	r, err := NewRefresher(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func TestCloudNoCloudAsksNobody(t *testing.T) {
	// Every metadata URL points at a stub that counts: outside a cloud,
	// and with --cloud.provider=none, none of them may be asked.
	stub := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	for name, cfg := range map[string]Config{
		"dmi says no cloud": testConfig(cloudtest.SysfsWithDMI(t, notCloudDMI), stub.URL),
		"no dmi":            testConfig(t.TempDir(), stub.URL),
		"provider none flag": func() Config {
			c := testConfig(cloudtest.SysfsWithDMI(t, awsNitroDMI), stub.URL)
			c.Provider = ProviderNone
			return c
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			r := newTestRefresher(t, cfg)
			if err := r.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			snap := r.Snapshot()
			want := Instance{Provider: ProviderNone, Lifecycle: LifecycleUnknown, Source: SourceNone}
			if snap.Instance != want || !snap.RefreshSuccess {
				t.Fatalf("snapshot = %+v", snap)
			}
			r.Poll(context.Background())
			if n := stub.Requests(); n != 0 {
				t.Fatalf("%d metadata requests outside a cloud, want 0", n)
			}
		})
	}
}

func TestCloudRefreshPerProvider(t *testing.T) {
	aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	gcp := cloudtest.NewGCP(t)
	azure := cloudtest.NewAzure(t)
	for _, tc := range []struct {
		name string
		dmi  map[string]string
		url  string
		want Instance
	}{
		{"aws", awsNitroDMI, aws.URL, Instance{Provider: ProviderAWS, Platform: "vm", InstanceType: "m5.xlarge", Lifecycle: LifecycleSpot,
			Region: "eu-west-1", Zone: "eu-west-1a", InstanceID: "i-0123456789abcdef0", Source: SourceIMDS}},
		{"gcp", gcpDMI, gcp.URL, Instance{Provider: ProviderGCP, Platform: "vm", InstanceType: "n2-standard-8", Lifecycle: LifecycleSpot,
			Region: "europe-west1", Zone: "europe-west1-b", InstanceID: "4520031799277581759", Source: SourceIMDS}},
		{"azure", azureDMI, azure.URL, Instance{Provider: ProviderAzure, Platform: "vm", InstanceType: "Standard_D8s_v5", Lifecycle: LifecycleSpot,
			Region: "westeurope", Zone: "westeurope-2", InstanceID: "02aab8a4-74ef-476e-8182-f6d2ba4166a6", Source: SourceIMDS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRefresher(t, testConfig(cloudtest.SysfsWithDMI(t, tc.dmi), tc.url))
			if err := r.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := r.Snapshot().Instance; got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCloudRefreshMergesIMDSAndKubernetes(t *testing.T) {
	const token = "t0ken"
	aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	aws.Set(cloudtest.AWSLifecyclePath, "on-demand") // IMDS wins over labels
	kube := cloudtest.NewKubernetes(t, token, map[string]string{"n1": karpenterNode})
	cfg := testConfig(cloudtest.SysfsWithDMI(t, awsNitroDMI), aws.URL)
	cfg.Kubernetes = kubeConfigFor(t, kube, token, "n1")
	cfg.Kubernetes.LabelAllowlist = []string{"kubernetes.io/arch", "karpenter.sh/nodepool"}
	r := newTestRefresher(t, cfg)
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := r.Snapshot()
	want := Instance{Provider: ProviderAWS, Platform: "kubernetes", InstanceType: "m5.xlarge", Lifecycle: LifecycleOnDemand,
		Region: "eu-west-1", Zone: "eu-west-1a", InstanceID: "i-0123456789abcdef0",
		Node: "ip-10-0-12-34.eu-west-1.compute.internal", NodePool: "spark-executors", Source: "imds+kubernetes"}
	if snap.Instance != want {
		t.Fatalf("got  %+v\nwant %+v", snap.Instance, want)
	}
	if len(snap.NodeLabels) != 2 || snap.NodeLabels["kubernetes.io/arch"] != "amd64" {
		t.Fatalf("node labels = %v", snap.NodeLabels)
	}
}

func TestCloudKubernetesProviderIDWhenDMIHidden(t *testing.T) {
	// A container without the host's /sys: the Node's providerID names
	// the cloud, and that cloud's metadata service is asked.
	gcp := cloudtest.NewGCP(t)
	kube := cloudtest.NewKubernetes(t, "", map[string]string{"g": gkeSpotNode})
	cfg := testConfig(t.TempDir(), gcp.URL)
	cfg.Kubernetes = kubeConfigFor(t, kube, "", "g")
	r := newTestRefresher(t, cfg)
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := r.Snapshot().Instance
	if got.Provider != ProviderGCP || got.Source != "imds+kubernetes" || got.InstanceID != "4520031799277581759" || got.Platform != "gke" {
		t.Fatalf("got %+v", got)
	}
}

func TestCloudRefreshBadMetadata(t *testing.T) {
	tenMB := strings.Repeat("m", 10<<20)
	for _, tc := range []struct {
		name    string
		set     func(s *cloudtest.Server)
		wantErr bool
		check   func(t *testing.T, i Instance)
	}{
		{"500", func(s *cloudtest.Server) { s.Fail(cloudtest.AWSInstanceTypePath, http.StatusInternalServerError) }, true,
			func(t *testing.T, i Instance) {
				// DMI alone still says what it can.
				if i.Source != SourceDMI || i.InstanceType != "m5.xlarge" || i.Provider != ProviderAWS {
					t.Errorf("after a 500: %+v", i)
				}
			}},
		{"10 MB", func(s *cloudtest.Server) { s.Set(cloudtest.AWSInstanceTypePath, tenMB) }, true,
			func(t *testing.T, i Instance) {
				if i.Source != SourceDMI || len(i.InstanceType) > MaxLabelValueBytes {
					t.Errorf("after 10 MB: %.200v", i)
				}
			}},
		{"invalid utf-8", func(s *cloudtest.Server) { s.Set(cloudtest.AWSInstanceTypePath, "m5.\xff\xfelarge") }, false,
			func(t *testing.T, i Instance) {
				if !utf8.ValidString(i.InstanceType) || !strings.HasPrefix(i.InstanceType, "m5.") {
					t.Errorf("instance type %q", i.InstanceType)
				}
			}},
		{"5000 characters", func(s *cloudtest.Server) { s.Set(cloudtest.AWSInstanceTypePath, strings.Repeat("x", 5000)) }, false,
			func(t *testing.T, i Instance) {
				if len(i.InstanceType) != MaxLabelValueBytes {
					t.Errorf("instance type of %d bytes, want capped at %d", len(i.InstanceType), MaxLabelValueBytes)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
			tc.set(aws)
			r := newTestRefresher(t, testConfig(cloudtest.SysfsWithDMI(t, awsNitroDMI), aws.URL))
			err := r.Refresh(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("Refresh error = %v, want error: %v", err, tc.wantErr)
			}
			snap := r.Snapshot()
			if snap.RefreshSuccess == tc.wantErr {
				t.Errorf("RefreshSuccess = %v", snap.RefreshSuccess)
			}
			tc.check(t, snap.Instance)
		})
	}
}

func TestCloudRefreshKeepsLastGoodAnswer(t *testing.T) {
	aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	r := newTestRefresher(t, testConfig(cloudtest.SysfsWithDMI(t, awsNitroDMI), aws.URL))
	ctx := context.Background()
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	good := r.Snapshot()
	aws.Fail("/latest/meta-data/instance-id", http.StatusServiceUnavailable)
	if err := r.Refresh(ctx); err == nil {
		t.Fatal("a 503 was not reported")
	}
	after := r.Snapshot()
	if after.Instance != good.Instance || after.RefreshSuccess || !after.LastSuccess.Equal(good.LastSuccess) {
		t.Fatalf("after a failed refresh: %+v\nbefore: %+v", after, good)
	}
}

func TestCloudSnapshotDoesNotWaitForHangingIMDS(t *testing.T) {
	aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	aws.Hang()
	cfg := testConfig(cloudtest.SysfsWithDMI(t, awsNitroDMI), aws.URL)
	cfg.Timeout = time.Hour // only Stop ends the hanging request
	r := newTestRefresher(t, cfg)
	r.Start()
	testenv.WaitFor(t, 20*time.Second, "the refresh to be stuck in IMDS", func() bool { return aws.Requests() > 0 })
	done := make(chan Snapshot)
	go func() { done <- r.Snapshot() }()
	select {
	case snap := <-done:
		if snap.Refreshed {
			t.Fatalf("refreshed while IMDS hangs: %+v", snap)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Snapshot blocked behind a hanging metadata request")
	}
	r.Stop() // must cancel the hanging request, or the test times out
}

func TestCloudRefresherRejectsBadConfig(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"zero timeout":     func(c *Config) { c.Timeout = 0 },
		"zero refresh":     func(c *Config) { c.RefreshInterval = 0 },
		"negative poll":    func(c *Config) { c.PollInterval = -time.Second },
		"unknown provider": func(c *Config) { c.Provider = "ibm" },
	} {
		cfg := testConfig(t.TempDir(), "http://127.0.0.1:1")
		mutate(&cfg)
		if _, err := NewRefresher(cfg, log.NewNopLogger()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCloudRedirectToAnotherHostRefused(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("m5.evil"))
	}))
	t.Cleanup(elsewhere.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	_, _, err := get(context.Background(), newMetadataHTTPClient(2*time.Second), redirector.URL+"/x", nil)
	if err == nil || !strings.Contains(err.Error(), "another host") {
		t.Fatalf("redirect to another host: err = %v", err)
	}
}

func TestCloudMetadataClientIgnoresProxy(t *testing.T) {
	// Go never proxies loopback requests, so a stub cannot catch a
	// proxied metadata request; check the transport itself instead.
	if newMetadataHTTPClient(time.Second).Proxied() {
		t.Fatal("the metadata client's transport has a proxy function; link-local requests must go direct")
	}
}

func TestCloudRefreshesEveryInterval(t *testing.T) {
	aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	aws.Fail(cloudtest.AWSInstanceTypePath, http.StatusInternalServerError)
	cfg := testConfig(cloudtest.SysfsWithDMI(t, map[string]string{"sys_vendor": "Amazon EC2"}), aws.URL)
	cfg.RefreshInterval = 20 * time.Millisecond
	r := newTestRefresher(t, cfg)
	r.Start()
	// A failed first refresh is retried, not left for an hour …
	testenv.WaitFor(t, 20*time.Second, "a failed refresh", func() bool { s := r.Snapshot(); return s.Refreshed && !s.RefreshSuccess })
	aws.Set(cloudtest.AWSInstanceTypePath, "c7g.large")
	testenv.WaitFor(t, 20*time.Second, "the retry to succeed", func() bool { s := r.Snapshot(); return s.RefreshSuccess && s.Instance.InstanceType == "c7g.large" })
	// … and facts that change are picked up by the next refresh.
	aws.Set(cloudtest.AWSInstanceTypePath, "c7g.xlarge")
	testenv.WaitFor(t, 20*time.Second, "the new instance type", func() bool { return r.Snapshot().Instance.InstanceType == "c7g.xlarge" })
}

func TestCloudNodeNameOutsideKubernetes(t *testing.T) {
	// CI agents set NODE_NAME too: outside a cluster that must not fail
	// every refresh.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cfg := testConfig(cloudtest.SysfsWithDMI(t, notCloudDMI), "http://127.0.0.1:1")
	cfg.Kubernetes = KubernetesConfig{NodeName: "jenkins-agent-3"}
	r := newTestRefresher(t, cfg)
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot().Instance; got.Node != "jenkins-agent-3" || got.Source != SourceNone {
		t.Fatalf("got %+v", got)
	}
}

func TestCloudPollsOnlyWithAProvider(t *testing.T) {
	// No provider at first: nothing is polled, and the poll loop sleeps.
	// When a refresh finds one, the loop wakes and polls it.
	aws := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	aws.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`)
	sysfs := cloudtest.SysfsWithDMI(t, notCloudDMI)
	cfg := testConfig(sysfs, aws.URL)
	cfg.RefreshInterval, cfg.PollInterval = 50*time.Millisecond, 10*time.Millisecond
	r := newTestRefresher(t, cfg)
	r.Start()
	testenv.WaitFor(t, 20*time.Second, "the first refresh", func() bool { return r.Snapshot().Refreshed })
	time.Sleep(100 * time.Millisecond)
	if n := aws.Requests(); n != 0 {
		t.Fatalf("%d metadata requests with no provider, want 0", n)
	}
	dmi := filepath.Join(sysfs, "class", "dmi", "id")
	for name, content := range awsNitroDMI {
		path := filepath.Join(dmi, name)
		_ = os.Remove(path)
		if err := os.WriteFile(path, []byte(content+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitFor(t, 20*time.Second, "the spot notice, polled once AWS is found", func() bool {
		for _, n := range r.Snapshot().Notices {
			if n.Event == EventSpotInterruption && n.Pending {
				return true
			}
		}
		return false
	})
}

// However many refreshes fail in a row, the wait between two stays
// between the first retry and the refresh interval.
func TestBackoffStaysBounded(t *testing.T) {
	for _, interval := range []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour} {
		retry := minRetry
		for i := range 100 {
			retry = backoff(retry, interval)
			if retry < min(minRetry, interval) || retry > interval {
				t.Fatalf("interval %v: failure %d waits %v", interval, i+1, retry)
			}
		}
		if retry != interval {
			t.Errorf("interval %v: after 100 failures the wait is %v, want the interval", interval, retry)
		}
	}
}
