package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
)

// The cloud end-to-end tests run the built binary with --path.sysfs at a
// DMI fixture (testdata/cloud/<provider>/class/dmi/id) and the provider's
// metadata URL at a loopback stand-in that answers as the real service
// does (IMDSv2 tokens, Metadata-Flavor, Metadata: true). Their helpers are
// self-contained and prefixed "cloud".

var (
	cloudBuildOnce sync.Once
	cloudBinPath   string
	cloudBuildErr  error
)

// cloudRepoRoot walks up from the test's directory to go.mod.
func cloudRepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// cloudExporterBinary returns $EXPORTER_BIN or builds the exporter once.
func cloudExporterBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("EXPORTER_BIN"); p != "" {
		return p
	}
	root := cloudRepoRoot(t)
	cloudBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "executor-exporter-cloud-e2e-")
		if err != nil {
			cloudBuildErr = err
			return
		}
		cloudBinPath = filepath.Join(dir, "executor_exporter")
		cmd := exec.Command("go", "build", "-o", cloudBinPath, "./cmd/executor_exporter")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			cloudBuildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if cloudBuildErr != nil {
		t.Fatal(cloudBuildErr)
	}
	return cloudBinPath
}

func cloudFreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type cloudSyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *cloudSyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *cloudSyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// cloudStartExporter runs the binary on a free loopback port with args and
// returns its address; it is stopped (and its log shown on failure) when
// the test ends.
func cloudStartExporter(t *testing.T, args ...string) string {
	t.Helper()
	addr := cloudFreeAddr(t)
	logs := &cloudSyncBuffer{}
	cmd := exec.Command(cloudExporterBinary(t), append([]string{"--web.listen-address=" + addr}, args...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("exporter log:\n%s", logs.String())
		}
	})
	return addr
}

// cloudScrape GETs /metrics; an error (not yet listening) is returned, not
// fatal, so callers can wait on it.
func cloudScrape(addr string) (string, map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	return string(body), families, err
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
func cloudWaitScrape(t *testing.T, addr, what string, cond func(map[string]*dto.MetricFamily) bool) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		text, families, err := cloudScrape(addr)
		if err == nil && cond(families) {
			return text, families
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last scrape error: %v)", what, lastErr)
	return "", nil
}

func cloudPromtoolCheck(t *testing.T, text string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found; CI installs it (scripts/install-test-deps.sh)")
		}
		t.Logf("promtool not found, scrape not checked by it")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
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
			addr := cloudStartExporter(t,
				"--path.sysfs="+filepath.Join(cloudRepoRoot(t), "test", "e2e", "testdata", "cloud", tc.provider),
				"--cloud.provider=auto",
				"--cloud."+tc.provider+".metadata-url="+server.URL,
				"--cloud.interruption-poll-interval=100ms",
			)
			_, families := cloudWaitScrape(t, addr, "executor_instance_info", func(f map[string]*dto.MetricFamily) bool {
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

			cloudWaitScrape(t, addr, tc.event+" pending 0", func(f map[string]*dto.MetricFamily) bool {
				v, ok := cloudPending(f, tc.event)
				return ok && v == 0
			})
			tc.announce(server)
			text, _ := cloudWaitScrape(t, addr, tc.event+" pending 1", func(f map[string]*dto.MetricFamily) bool {
				v, ok := cloudPending(f, tc.event)
				return ok && v == 1
			})
			cloudPromtoolCheck(t, text)
		})
	}
}

func TestCloudNoCloudAsksNoMetadataService(t *testing.T) {
	// Every metadata URL at one counting stub: a machine whose DMI names no
	// cloud must not send it a single request.
	stub := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	addr := cloudStartExporter(t,
		"--path.sysfs="+filepath.Join(cloudRepoRoot(t), "test", "e2e", "testdata", "cloud", "none"),
		"--cloud.aws.metadata-url="+stub.URL,
		"--cloud.gcp.metadata-url="+stub.URL,
		"--cloud.azure.metadata-url="+stub.URL,
		"--cloud.interruption-poll-interval=50ms",
	)
	_, families := cloudWaitScrape(t, addr, "executor_instance_info", func(f map[string]*dto.MetricFamily) bool {
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
