package e2e

// The monitoring stack the mixin's end-to-end tests share
// (alerting_test.go, dashboards_test.go): a real JVM in a memory cgroup, the
// exporter, the AWS metadata stand-in, Prometheus and Alertmanager.

import (
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/testjvm"
)

// monitoringStack is a JVM in a memory cgroup, the exporter reading it (on
// a machine that the AWS metadata stand-in calls a spot r5.xlarge with a
// pending interruption) and Prometheus scraping the exporter (and any extra
// targets) every second.
type monitoringStack struct {
	JVM      *testjvm.JVM
	Exporter *exporter
	Prom     *promServer
}

// startMonitoringStack starts the stack; cfg says which Prometheus, which
// rules and which Alertmanager (its Targets are added to the exporter).
func startMonitoringStack(t *testing.T, cfg promConfig) *monitoringStack {
	t.Helper()
	testenv.RequireRoot(t)
	st := &monitoringStack{}
	opts := fullHeapExecutor
	opts.Cgroup = testenv.NewMemoryCgroup(t, 256<<20).Procs()
	st.JVM = testjvm.Start(t, opts)
	imds := mixinAWSMetadata(t)
	st.Exporter = startExporter(t, "--cloud.provider=aws", "--cloud.aws.metadata-url="+imds,
		"--cloud.interruption-poll-interval=1s")
	cfg.Targets = append([]string{st.Exporter.Addr}, cfg.Targets...)
	st.Prom = startPrometheus(t, cfg)
	return st
}

// mixinAWSMetadata is the AWS metadata stand-in describing a spot
// r5.xlarge in eu-west-1a with a spot interruption announced and no
// rebalance recommendation. It returns the service's base URL.
func mixinAWSMetadata(t testing.TB) string {
	t.Helper()
	imds := cloudtest.NewAWS(t, cloudtest.AWSOptions{})
	imds.Set(cloudtest.AWSInstanceTypePath, "r5.xlarge")
	imds.Set(cloudtest.AWSInstanceActionPath, `{"action": "terminate", "time": "2030-01-01T00:00:00Z"}`)
	return imds.URL
}

// query runs an instant PromQL query and returns its vector, failing the
// test on an error answer.
func (st *monitoringStack) query(t testing.TB, expr string) []promSample {
	t.Helper()
	return st.Prom.query(t, expr)
}
