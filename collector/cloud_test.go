package collector

import (
	"bytes"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

var (
	cloudAWSDMI   = map[string]string{"sys_vendor": "Amazon EC2", "board_vendor": "Amazon EC2", "product_name": "m5.xlarge"}
	cloudGCPDMI   = map[string]string{"sys_vendor": "Google", "product_name": "Google Compute Engine"}
	cloudAzureDMI = map[string]string{"sys_vendor": "Microsoft Corporation", "product_name": "Virtual Machine", "chassis_asset_tag": "7783-7084-3265-9085-8269-3286-77"}
	// What this build machine's firmware says, if it has DMI at all: no cloud.
	cloudNotCloudDMI = map[string]string{"sys_vendor": "QEMU", "product_name": "Standard PC (i440FX + PIIX, 1996)"}
)

func cloudTestConfig(sysfs, url string, poll time.Duration) cloud.Config {
	return cloud.Config{Provider: cloud.ProviderAuto, SysFS: sysfs,
		AWSMetadataURL: url, GCPMetadataURL: url, AzureMetadataURL: url,
		Timeout: 2 * time.Second, RefreshInterval: time.Hour, PollInterval: poll}
}

// newTestCloudCollector reads a refresher of cfg, started, that the test
// stops when it ends.
func newTestCloudCollector(t testing.TB, cfg cloud.Config) *cloudCollector {
	t.Helper()
	r, err := cloud.NewRefresher(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(r.Stop)
	return NewCloudCollector(r).(*cloudCollector)
}

// cloudGather scrapes c through the framework's fan-out, as the binary does.
func cloudGather(t testing.TB, c Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExecutorCollectorFrom(log.NewNopLogger(), map[string]Collector{"cloud": c}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range families {
		out[mf.GetName()] = mf
	}
	return out
}

// cloudValue returns the value of the series of name whose label
// labelName is labelValue ("" matches the first series).
func cloudValue(families map[string]*dto.MetricFamily, name, labelName, labelValue string) (float64, bool) {
	for _, m := range families[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if labelName == "" || (lp.GetName() == labelName && lp.GetValue() == labelValue) {
				return m.GetGauge().GetValue(), true
			}
		}
		if labelName == "" {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestCloudCollectorNoCloud(t *testing.T) {
	stub := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	c := newTestCloudCollector(t, cloudTestConfig(cloudtest.SysfsWithDMI(t, cloudNotCloudDMI), stub.URL, 10*time.Millisecond))
	testenv.WaitFor(t, waitTimeout, "the start-up refresh", func() bool { return c.refresher.Snapshot().Refreshed })
	const want = `
# HELP executor_instance_info What machine this is: cloud provider, instance type, lifecycle (on-demand, spot, unknown), placement and Kubernetes node; source says where the facts came from.
# TYPE executor_instance_info gauge
executor_instance_info{instance_id="",instance_type="",lifecycle="unknown",node="",node_pool="",platform="",provider="none",region="",source="none",zone=""} 1
# HELP executor_metadata_refresh_success Whether the last refresh of instance metadata and node labels got an answer from every source asked.
# TYPE executor_metadata_refresh_success gauge
executor_metadata_refresh_success 1
`
	if err := testutil.CollectAndCompare(cloudAdapter{c}, strings.NewReader(want),
		"executor_instance_info", "executor_metadata_refresh_success", "executor_instance_interruption_pending"); err != nil {
		t.Fatal(err)
	}
	if n := stub.Requests(); n != 0 {
		t.Fatalf("%d metadata requests on a machine that is no cloud, want 0", n)
	}
}

// cloudAdapter registers a Collector with testutil.
type cloudAdapter struct{ c Collector }

func (a cloudAdapter) Describe(ch chan<- *prometheus.Desc) {}
func (a cloudAdapter) Collect(ch chan<- prometheus.Metric) { _ = a.c.Update(ch) }

func TestCloudCollectorInfoPerProvider(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dmi    map[string]string
		server func(testing.TB) *cloudtest.Server
		labels map[string]string
	}{
		{"aws", cloudAWSDMI, func(t testing.TB) *cloudtest.Server { return cloudtest.NewAWS(t, cloudtest.AWSOptions{}) },
			map[string]string{"provider": "aws", "instance_type": "m5.xlarge", "lifecycle": "spot", "region": "eu-west-1", "zone": "eu-west-1a", "instance_id": "i-0123456789abcdef0", "source": "imds", "platform": "vm"}},
		{"gcp", cloudGCPDMI, cloudtest.NewGCP,
			map[string]string{"provider": "gcp", "instance_type": "n2-standard-8", "lifecycle": "spot", "region": "europe-west1", "zone": "europe-west1-b", "source": "imds"}},
		{"azure", cloudAzureDMI, cloudtest.NewAzure,
			map[string]string{"provider": "azure", "instance_type": "Standard_D8s_v5", "lifecycle": "spot", "region": "westeurope", "zone": "westeurope-2", "source": "imds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := tc.server(t)
			c := newTestCloudCollector(t, cloudTestConfig(cloudtest.SysfsWithDMI(t, tc.dmi), server.URL, 0))
			testenv.WaitFor(t, waitTimeout, "the start-up refresh", func() bool { return c.refresher.Snapshot().Refreshed })
			families := cloudGather(t, c)
			info := families["executor_instance_info"].GetMetric()
			if len(info) != 1 {
				t.Fatalf("%d executor_instance_info series, want 1", len(info))
			}
			have := map[string]string{}
			for _, lp := range info[0].GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range tc.labels {
				if have[k] != v {
					t.Errorf("%s=%q, want %q (all: %v)", k, have[k], v, have)
				}
			}
			if v, _ := cloudValue(families, "executor_metadata_refresh_success", "", ""); v != 1 {
				t.Errorf("executor_metadata_refresh_success = %v", v)
			}
			if _, ok := families["executor_metadata_last_refresh_timestamp_seconds"]; !ok {
				t.Error("executor_metadata_last_refresh_timestamp_seconds missing")
			}
		})
	}
}

func TestCloudCollectorInterruptionNotices(t *testing.T) {
	const poll = 20 * time.Millisecond
	for _, tc := range []struct {
		name     string
		dmi      map[string]string
		server   func(testing.TB) *cloudtest.Server
		event    string
		announce func(s *cloudtest.Server)
		withdraw func(s *cloudtest.Server)
		at       float64 // announced time, 0 for none
	}{
		{"aws spot instance-action", cloudAWSDMI,
			func(t testing.TB) *cloudtest.Server { return cloudtest.NewAWS(t, cloudtest.AWSOptions{}) },
			cloud.EventSpotInterruption,
			func(s *cloudtest.Server) {
				s.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`)
			},
			func(s *cloudtest.Server) { s.Delete(cloudtest.AWSInstanceActionPath) },
			1505722920},
		{"aws rebalance recommendation", cloudAWSDMI,
			func(t testing.TB) *cloudtest.Server { return cloudtest.NewAWS(t, cloudtest.AWSOptions{}) },
			cloud.EventRebalanceRecommendation,
			func(s *cloudtest.Server) { s.Set(cloudtest.AWSRebalancePath, `{"noticeTime": "2017-09-18T08:20:00Z"}`) },
			func(s *cloudtest.Server) { s.Delete(cloudtest.AWSRebalancePath) },
			0},
		{"gcp preempted", cloudGCPDMI, cloudtest.NewGCP, cloud.EventPreemption,
			func(s *cloudtest.Server) { s.Set(cloudtest.GCPPreemptedPath, "TRUE") },
			func(s *cloudtest.Server) { s.Set(cloudtest.GCPPreemptedPath, "FALSE") },
			0},
		{"azure preempt", cloudAzureDMI, cloudtest.NewAzure, cloud.EventPreemption,
			func(s *cloudtest.Server) {
				s.Set(cloudtest.AzureEventsPath, cloudtest.AzurePreemptEvents("aks-spot-12345678-vmss_3", "Mon, 19 Sep 2016 18:29:47 GMT"))
			},
			func(s *cloudtest.Server) { s.Set(cloudtest.AzureEventsPath, cloudtest.AzureNoEvents) },
			1474309787},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := tc.server(t)
			c := newTestCloudCollector(t, cloudTestConfig(cloudtest.SysfsWithDMI(t, tc.dmi), server.URL, poll))
			pending := func(want float64) func() bool {
				return func() bool {
					v, ok := cloudValue(cloudGather(t, c), "executor_instance_interruption_pending", "event", tc.event)
					return ok && v == want
				}
			}
			testenv.WaitFor(t, waitTimeout, tc.event+" pending 0 after the first poll", pending(0))
			tc.announce(server)
			testenv.WaitFor(t, waitTimeout, tc.event+" pending 1", pending(1))
			ts, ok := cloudValue(cloudGather(t, c), "executor_instance_interruption_timestamp_seconds", "event", tc.event)
			if ok != (tc.at != 0) || ts != tc.at {
				t.Errorf("executor_instance_interruption_timestamp_seconds = %v (present %v), want %v", ts, ok, tc.at)
			}
			tc.withdraw(server)
			testenv.WaitFor(t, waitTimeout, tc.event+" pending 0 again", pending(0))
			if _, ok := cloudValue(cloudGather(t, c), "executor_instance_interruption_timestamp_seconds", "event", tc.event); ok {
				t.Error("timestamp still exported after the notice went away")
			}
		})
	}
}

func TestCloudScrapePathMakesNoRequests(t *testing.T) {
	server := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	c := newTestCloudCollector(t, cloudTestConfig(cloudtest.SysfsWithDMI(t, cloudAWSDMI), server.URL, 0))
	testenv.WaitFor(t, waitTimeout, "the start-up refresh", func() bool { return c.refresher.Snapshot().Refreshed })
	before := server.Requests()
	if before == 0 {
		t.Fatal("the refresh asked IMDS nothing; this test would prove nothing")
	}
	ch := make(chan prometheus.Metric, 64)
	for range 1000 {
		if err := c.Update(ch); err != nil {
			t.Fatal(err)
		}
		for len(ch) > 0 {
			<-ch
		}
	}
	if after := server.Requests(); after != before {
		t.Fatalf("%d metadata requests during 1000 scrapes, want 0", after-before)
	}
}

func TestCloudCollectorBeforeFirstRefresh(t *testing.T) {
	server := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	server.Hang()
	cfg := cloudTestConfig(cloudtest.SysfsWithDMI(t, cloudAWSDMI), server.URL, 0)
	cfg.Timeout = time.Hour
	c := newTestCloudCollector(t, cfg)
	testenv.WaitFor(t, waitTimeout, "the refresh to hang in IMDS", func() bool { return server.Requests() > 0 })
	families := cloudGather(t, c)
	if _, ok := families["executor_instance_info"]; ok {
		t.Fatal("executor_instance_info before any refresh finished")
	}
	// Still refreshing is no failure of the scrape.
	if v, _ := cloudValue(families, "executor_scrape_collector_success", "collector", "cloud"); v != 1 {
		t.Fatalf("executor_scrape_collector_success = %v, want 1", v)
	}
}

func TestCloudCollectorNodeLabels(t *testing.T) {
	const token = "sa-token"
	node := cloudtest.Node("ip-10-0-12-34.eu-west-1.compute.internal", "aws:///eu-west-1a/i-0a1b2c3d4e5f60718", map[string]string{
		"karpenter.sh/capacity-type":       "spot",
		"karpenter.sh/nodepool":            "spark-executors",
		"node.kubernetes.io/instance-type": "r6i.4xlarge",
		"team.example.com/costCenter":      "data-platform",
		"secret-ish":                       "not exported",
	})
	kube := cloudtest.NewKubernetes(t, token, map[string]string{"n1": node})
	dir := t.TempDir()
	caFile, tokenFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kube.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := cloudTestConfig(cloudtest.SysfsWithDMI(t, cloudNotCloudDMI), "http://127.0.0.1:1", 0)
	cfg.Provider = cloud.ProviderNone
	cfg.Kubernetes = cloud.KubernetesConfig{NodeName: "n1", APIURL: kube.URL, TokenFile: tokenFile, CAFile: caFile,
		LabelAllowlist: []string{"team.example.com/costCenter", "karpenter.sh/nodepool"}}
	c := newTestCloudCollector(t, cfg)
	testenv.WaitFor(t, waitTimeout, "the start-up refresh", func() bool { return c.refresher.Snapshot().Refreshed })
	const want = `
# HELP executor_instance_info What machine this is: cloud provider, instance type, lifecycle (on-demand, spot, unknown), placement and Kubernetes node; source says where the facts came from.
# TYPE executor_instance_info gauge
executor_instance_info{instance_id="i-0a1b2c3d4e5f60718",instance_type="r6i.4xlarge",lifecycle="spot",node="ip-10-0-12-34.eu-west-1.compute.internal",node_pool="spark-executors",platform="kubernetes",provider="none",region="",source="kubernetes",zone=""} 1
# HELP executor_node_labels Allowlisted Kubernetes labels of this node (--kubernetes.node-labels), named as kube-state-metrics names them.
# TYPE executor_node_labels gauge
executor_node_labels{label_karpenter_sh_nodepool="spark-executors",label_team_example_com_cost_center="data-platform"} 1
`
	if err := testutil.CollectAndCompare(cloudAdapter{c}, strings.NewReader(want), "executor_instance_info", "executor_node_labels"); err != nil {
		t.Fatal(err)
	}
}

func TestCloudOutputIsPromtoolClean(t *testing.T) {
	promtool := testenv.RequireTool(t, "promtool")
	server := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	server.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`)
	c := newTestCloudCollector(t, cloudTestConfig(cloudtest.SysfsWithDMI(t, cloudAWSDMI), server.URL, 10*time.Millisecond))
	testenv.WaitFor(t, waitTimeout, "a pending notice", func() bool {
		v, ok := cloudValue(cloudGather(t, c), "executor_instance_interruption_pending", "event", cloud.EventSpotInterruption)
		return ok && v == 1
	})
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range cloudGather(t, c) {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// BenchmarkCloudScrapeWithHangingIMDS measures a scrape of the cloud
// collector while the metadata service hangs: it must cost what reading a
// cache costs, whatever the network does.
func BenchmarkCloudScrapeWithHangingIMDS(b *testing.B) {
	server := cloudtest.NewAWS(b, cloudtest.AWSOptions{})
	c := newTestCloudCollector(b, cloudTestConfig(cloudtest.SysfsWithDMI(b, cloudAWSDMI), server.URL, 50*time.Millisecond))
	// Wait for the first poll too, so the scrape carries the same series
	// as BenchmarkCloudScrapeHealthyIMDS.
	for len(c.refresher.Snapshot().Notices) == 0 {
		time.Sleep(time.Millisecond)
	}
	server.Hang() // from now on every poll waits out the timeout
	ch := make(chan prometheus.Metric, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Update(ch); err != nil {
			b.Fatal(err)
		}
		for len(ch) > 0 {
			<-ch
		}
	}
}

// BenchmarkCloudScrapeHealthyIMDS is the reference for the benchmark
// above: the same scrape while the metadata service answers.
func BenchmarkCloudScrapeHealthyIMDS(b *testing.B) {
	server := cloudtest.NewAWS(b, cloudtest.AWSOptions{})
	c := newTestCloudCollector(b, cloudTestConfig(cloudtest.SysfsWithDMI(b, cloudAWSDMI), server.URL, 50*time.Millisecond))
	for len(c.refresher.Snapshot().Notices) == 0 {
		time.Sleep(time.Millisecond)
	}
	ch := make(chan prometheus.Metric, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Update(ch); err != nil {
			b.Fatal(err)
		}
		for len(ch) > 0 {
			<-ch
		}
	}
}
