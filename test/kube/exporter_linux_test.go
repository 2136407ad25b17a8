package kube

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
)

// exporter is the built exporter running as it runs in its DaemonSet's pod.
type exporter struct {
	addr     string
	proc     *process
	tokenDir string
}

// startExporter runs the built exporter as the kubelet runs it in the
// DaemonSet's pod: the API server from KUBERNETES_SERVICE_HOST/PORT, and
// the ServiceAccount's token and the cluster's CA at the in-cluster paths
// (/var/run/secrets/kubernetes.io/serviceaccount), mounted over /var/run
// in a mount namespace of the exporter's own.
func (c *cluster) startExporter(t *testing.T, name, token string, args ...string) *exporter {
	t.Helper()
	unshare := testenv.RequireTool(t, "unshare")
	e := &exporter{addr: testenv.FreeAddr(t), tokenDir: filepath.Join(t.TempDir(), "run")}
	sa := filepath.Join(e.tokenDir, "secrets", "kubernetes.io", "serviceaccount")
	writeFile(t, filepath.Join(sa, "token"), []byte(token))
	writeFile(t, filepath.Join(sa, "ca.crt"), c.pki.CAPEM)
	writeFile(t, filepath.Join(sa, "namespace"), []byte("executor-exporter"))
	argv := append([]string{testenv.ExporterBinary(t), "--web.listen-address=" + e.addr}, args...)
	script := "mount --bind " + shellQuote(e.tokenDir) + " /var/run && exec " + shellJoin(argv)
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script)
	host, port, _ := strings.Cut(c.Addr, ":")
	cmd.Env = append(os.Environ(), "KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port)
	e.proc = startProcess(t, name, cmd)
	testenv.WaitFor(t, 30*time.Second, name+" to answer", func() bool {
		if e.proc.Exited() {
			t.Fatalf("%s exited:\n%s", name, e.proc.Output())
		}
		resp, err := http.Get("http://" + e.addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return e
}

// series is one sample of a scrape: its labels and value.
type series struct {
	labels map[string]string
	value  float64
}

// scrape returns the samples of the named families in one scrape.
func (e *exporter) scrape(t *testing.T) map[string][]series {
	t.Helper()
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	out := map[string][]series{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			s := series{labels: map[string]string{}, value: value(m)}
			for _, lp := range m.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// gauge is the value of a family with a single series, and whether it was
// there.
func gauge(s map[string][]series, name string) (float64, bool) {
	if len(s[name]) != 1 {
		return 0, false
	}
	return s[name][0].value, true
}

// find returns the labels of the first series of a family whose labels
// include match.
func find(s map[string][]series, name string, match map[string]string) (map[string]string, bool) {
	x, ok := findSeries(s, name, match)
	return x.labels, ok
}

// findSeries returns the first series of a family whose labels include
// match.
func findSeries(s map[string][]series, name string, match map[string]string) (series, bool) {
	for _, x := range s[name] {
		if includes(x.labels, match) {
			return x, true
		}
	}
	return series{}, false
}

func includes(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
