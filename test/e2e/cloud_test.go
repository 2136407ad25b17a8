package e2e

import (
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// The cloud end-to-end tests run the built binary with --path.sysfs at a
// DMI fixture (testdata/cloud/<provider>/class/dmi/id) and the provider's
// metadata URL at a loopback stand-in that answers as the real service
// does (IMDSv2 tokens, Metadata-Flavor, Metadata: true). Their helpers are
// prefixed "cloud"; starting and scraping the binary is harness_test.go's.

// cloudSysfs is the DMI fixture of a provider.
func cloudSysfs(provider string) string {
	return filepath.Join(testjvm.RepoRoot(), "test", "e2e", "testdata", "cloud", provider)
}

// cloudLabels returns the labels of the first series of name.
func cloudLabels(families map[string]*dto.MetricFamily, name string) (map[string]string, float64, bool) {
	mf, ok := families[name]
	if !ok || len(mf.GetMetric()) == 0 {
		return nil, 0, false
	}
	m := mf.GetMetric()[0]
	labels := map[string]string{}
	for _, lp := range m.GetLabel() {
		labels[lp.GetName()] = lp.GetValue()
	}
	return labels, m.GetGauge().GetValue(), true
}

// cloudPending returns executor_instance_interruption_pending{event}.
func cloudPending(families map[string]*dto.MetricFamily, event string) (float64, bool) {
	for _, m := range families["executor_instance_interruption_pending"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "event" && lp.GetValue() == event {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// cloudWaitScrape scrapes until cond holds on a scrape; the timeout bounds
// a broken test's hang and asserts nothing about speed.
func cloudWaitScrape(t *testing.T, e *exporter, what string, cond func(map[string]*dto.MetricFamily) bool) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	var (
		text     string
		families map[string]*dto.MetricFamily
	)
	testenv.WaitFor(t, 30*time.Second, what, func() bool {
		text = e.scrapeText(t)
		families = parseMetrics(t, text)
		return cond(families)
	})
	return text, families
}

func TestCloudInstanceInfoPerProvider(t *testing.T) {
	for _, tc := range []struct {
		provider string
		server   func(testing.TB) *cloudtest.Server
		want     map[string]string
		event    string
		announce func(*cloudtest.Server)
	}{
		{
			provider: "aws",
			server:   func(t testing.TB) *cloudtest.Server { return cloudtest.NewAWS(t, cloudtest.AWSOptions{}) },
			want: map[string]string{"provider": "aws", "platform": "vm", "instance_type": "m5.xlarge", "lifecycle": "spot",
				"region": "eu-west-1", "zone": "eu-west-1a", "instance_id": "i-0123456789abcdef0", "node": "", "node_pool": "", "source": "imds"},
			event: "spot_interruption",
			announce: func(s *cloudtest.Server) {
				s.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2030-01-02T03:04:05Z"}`)
			},
		},
		{
			provider: "gcp",
			server:   cloudtest.NewGCP,
			want: map[string]string{"provider": "gcp", "platform": "vm", "instance_type": "n2-standard-8", "lifecycle": "spot",
				"region": "europe-west1", "zone": "europe-west1-b", "instance_id": "4520031799277581759", "node": "", "node_pool": "", "source": "imds"},
			event:    "preemption",
			announce: func(s *cloudtest.Server) { s.Set(cloudtest.GCPPreemptedPath, "TRUE") },
		},
		{
			provider: "azure",
			server:   cloudtest.NewAzure,
			want: map[string]string{"provider": "azure", "platform": "vm", "instance_type": "Standard_D8s_v5", "lifecycle": "spot",
				"region": "westeurope", "zone": "westeurope-2", "instance_id": "02aab8a4-74ef-476e-8182-f6d2ba4166a6", "node": "", "node_pool": "", "source": "imds"},
			event: "preemption",
			announce: func(s *cloudtest.Server) {
				s.Set(cloudtest.AzureEventsPath, cloudtest.AzurePreemptEvents("aks-spot-12345678-vmss_3", "Wed, 02 Jan 2030 03:04:05 GMT"))
			},
		},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			server := tc.server(t)
			e := startExporter(t,
				"--path.sysfs="+cloudSysfs(tc.provider),
				"--cloud.provider=auto",
				"--cloud."+tc.provider+".metadata-url="+server.URL,
				"--cloud.interruption-poll-interval=100ms",
			)
			_, families := cloudWaitScrape(t, e, "executor_instance_info", func(f map[string]*dto.MetricFamily) bool {
				_, _, ok := cloudLabels(f, "executor_instance_info")
				return ok
			})
			labels, value, _ := cloudLabels(families, "executor_instance_info")
			if value != 1 {
				t.Errorf("executor_instance_info = %v, want 1", value)
			}
			for k, v := range tc.want {
				if labels[k] != v {
					t.Errorf("%s=%q, want %q", k, labels[k], v)
				}
			}
			if len(labels) != len(tc.want) {
				t.Errorf("labels %v, want exactly %v", labels, tc.want)
			}

			cloudWaitScrape(t, e, tc.event+" pending 0", func(f map[string]*dto.MetricFamily) bool {
				v, ok := cloudPending(f, tc.event)
				return ok && v == 0
			})
			tc.announce(server)
			text, _ := cloudWaitScrape(t, e, tc.event+" pending 1", func(f map[string]*dto.MetricFamily) bool {
				v, ok := cloudPending(f, tc.event)
				return ok && v == 1
			})
			promtoolCheckMetrics(t, text)
		})
	}
}

func TestCloudNoCloudAsksNoMetadataService(t *testing.T) {
	// Every metadata URL at one counting stub: a machine whose DMI names no
	// cloud must not send it a single request.
	stub := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	e := startExporter(t,
		"--path.sysfs="+cloudSysfs("none"),
		"--cloud.aws.metadata-url="+stub.URL,
		"--cloud.gcp.metadata-url="+stub.URL,
		"--cloud.azure.metadata-url="+stub.URL,
		"--cloud.interruption-poll-interval=50ms",
	)
	_, families := cloudWaitScrape(t, e, "executor_instance_info", func(f map[string]*dto.MetricFamily) bool {
		_, _, ok := cloudLabels(f, "executor_instance_info")
		return ok
	})
	labels, _, _ := cloudLabels(families, "executor_instance_info")
	if labels["provider"] != "none" || labels["source"] != "none" || labels["lifecycle"] != "unknown" {
		t.Errorf("executor_instance_info labels %v, want provider=none source=none lifecycle=unknown", labels)
	}
	if _, ok := families["executor_instance_interruption_pending"]; ok {
		t.Error("interruption gauges exported with no cloud to announce them")
	}
	time.Sleep(200 * time.Millisecond) // a few poll intervals for a stray poll to show
	if n := stub.Requests(); n != 0 {
		t.Fatalf("%d metadata requests outside a cloud, want 0", n)
	}
}
