package collector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/executor-exporter/executor_exporter/internal/testenv"
	"github.com/executor-exporter/executor_exporter/internal/yarn"
	"github.com/executor-exporter/executor_exporter/internal/yarn/yarntest"
)

func TestYARNCollector(t *testing.T) {
	srv := yarntest.NewServer()
	defer srv.Close()
	srv.Launch("container_1700000000000_0042_01_000002", 5632)
	srv.Launch("container_1700000000000_0042_01_000003", 5632)
	srv.Finish("container_1700000000000_0042_01_000003", -104, "")
	srv.Linger = time.Hour
	// Strict enforcement off: Hadoop 3.3's monitor polls.
	conf, err := yarn.ParseSiteXML([]byte(`<configuration><property><name>yarn.nodemanager.vmem-pmem-ratio</name><value>5</value></property>` +
		`<property><name>yarn.nodemanager.resource.memory.enforced</name><value>false</value></property></configuration>`))
	if err != nil {
		t.Fatal(err)
	}
	s := yarn.NewSource(yarn.Config{NodeManagerURL: srv.URL, ResourceManagerURLs: []string{srv.URL + "/missing"}, Conf: conf, Interval: 50 * time.Millisecond}, log.NewNopLogger())
	s.Start()
	defer s.Stop()
	testenv.WaitFor(t, 10*time.Second, "the containers and an error", func() bool {
		killed, _ := s.Container("container_1700000000000_0042_01_000003")
		return len(s.Containers()) == 2 && s.Node().Version != "" && len(s.Errors()) > 0 && killed.State == yarn.StateDone
	})
	var errLines []string
	for _, target := range []string{"nodemanager", "resourcemanager"} {
		for _, kind := range yarn.ErrorKinds {
			v := "0"
			if target == "resourcemanager" && kind == "http_404" {
				v = "1"
			}
			errLines = append(errLines, `executor_yarn_request_errors_total{kind="`+kind+`",target="`+target+`"} `+v)
		}
	}
	want := `# HELP executor_yarn_containers Containers the NodeManager lists, by state.
# TYPE executor_yarn_containers gauge
executor_yarn_containers{state="DONE"} 1
executor_yarn_containers{state="RUNNING"} 1
# HELP executor_yarn_memory_check_enabled Whether the NodeManager's polling monitor kills containers over their physical (pmem) or virtual (vmem) memory limit, under the rule of its line on its settings; 0 when the rule is unknown.
# TYPE executor_yarn_memory_check_enabled gauge
executor_yarn_memory_check_enabled{check="pmem"} 1
executor_yarn_memory_check_enabled{check="vmem"} 1
# HELP executor_yarn_memory_enforcement_info Who kills a container over its memory allocation, under the rule of the NodeManager's Hadoop line (2.x, 3.2, 3.3; unknown before its version is read) on its settings: enforcer (none, polling, kernel, elastic and their combinations, unknown), why (docs/yarn.md), whether the rule has YARN-11967 (yes, no, unknown).
# TYPE executor_yarn_memory_enforcement_info gauge
executor_yarn_memory_enforcement_info{enforcer="polling",rule="3.3",why="polling_checks",yarn_11967="no"} 1
# HELP executor_yarn_monitor_interval_seconds The NodeManager's monitor interval (yarn.nodemanager.container-monitor.interval-ms, else resource-monitor.interval-ms); 0 or less: the monitor is off.
# TYPE executor_yarn_monitor_interval_seconds gauge
executor_yarn_monitor_interval_seconds 3
# HELP executor_yarn_nodemanager_info The local NodeManager: its version (empty until read) and whether its monitor counts smaps-based RSS.
# TYPE executor_yarn_nodemanager_info gauge
executor_yarn_nodemanager_info{smaps_rss="false",version="3.3.6"} 1
# HELP executor_yarn_nodemanager_up Whether the last read of the local NodeManager's container list succeeded.
# TYPE executor_yarn_nodemanager_up gauge
executor_yarn_nodemanager_up 1
# HELP executor_yarn_request_errors_total Failed requests to the NodeManager or ResourceManager, by kind (down, timeout, http_<code>, too_large, parse, kerberos).
# TYPE executor_yarn_request_errors_total counter
` + strings.Join(errLines, "\n") + `
# HELP executor_yarn_vmem_pmem_ratio yarn.nodemanager.vmem-pmem-ratio: a container's virtual memory limit over its allocation.
# TYPE executor_yarn_vmem_pmem_ratio gauge
executor_yarn_vmem_pmem_ratio 5
`
	c := NewYARNCollector(s)
	if err := testutil.CollectAndCompare(collectorFunc{c}, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}

	// The NodeManager turns the vmem check off (its node info wins over
	// yarn-site.xml), then stops answering: up 0, the rest stays.
	srv.SetNodeInfo("vmemCheckEnabled", false)
	testenv.WaitFor(t, 10*time.Second, "the vmem check off", func() bool { return !s.Node().VmemCheck })
	srv.SetMode(yarntest.ModeForbidden)
	testenv.WaitFor(t, 10*time.Second, "the NodeManager down", func() bool { return !s.Node().Reachable })
	want = `# HELP executor_yarn_memory_check_enabled Whether the NodeManager's polling monitor kills containers over their physical (pmem) or virtual (vmem) memory limit, under the rule of its line on its settings; 0 when the rule is unknown.
# TYPE executor_yarn_memory_check_enabled gauge
executor_yarn_memory_check_enabled{check="pmem"} 1
executor_yarn_memory_check_enabled{check="vmem"} 0
# HELP executor_yarn_nodemanager_up Whether the last read of the local NodeManager's container list succeeded.
# TYPE executor_yarn_nodemanager_up gauge
executor_yarn_nodemanager_up 0
`
	testenv.WaitFor(t, 10*time.Second, "the vmem check off and the NodeManager down", func() bool {
		return testutil.CollectAndCompare(collectorFunc{c}, strings.NewReader(want), "executor_yarn_nodemanager_up", "executor_yarn_memory_check_enabled") == nil
	})
	if err := testutil.CollectAndCompare(collectorFunc{c}, strings.NewReader(want), "executor_yarn_nodemanager_up", "executor_yarn_memory_check_enabled"); err != nil {
		t.Fatal(err)
	}
}

// TestYARNCollectorStock: Apache Hadoop 3.3 on YARN's defaults (no
// cgroups, resource.memory.enforced true): the checks are on in the
// settings, and nothing enforces (YARN-11967).
func TestYARNCollectorStock(t *testing.T) {
	srv := yarntest.NewServer()
	defer srv.Close()
	conf, err := yarn.FromProps(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	s := yarn.NewSource(yarn.Config{NodeManagerURL: srv.URL, Conf: conf, Interval: 50 * time.Millisecond}, log.NewNopLogger())
	s.Start()
	defer s.Stop()
	testenv.WaitFor(t, 10*time.Second, "the node info", func() bool { return s.Node().Version != "" })
	want := `# HELP executor_yarn_memory_check_enabled Whether the NodeManager's polling monitor kills containers over their physical (pmem) or virtual (vmem) memory limit, under the rule of its line on its settings; 0 when the rule is unknown.
# TYPE executor_yarn_memory_check_enabled gauge
executor_yarn_memory_check_enabled{check="pmem"} 0
executor_yarn_memory_check_enabled{check="vmem"} 0
# HELP executor_yarn_memory_enforcement_info Who kills a container over its memory allocation, under the rule of the NodeManager's Hadoop line (2.x, 3.2, 3.3; unknown before its version is read) on its settings: enforcer (none, polling, kernel, elastic and their combinations, unknown), why (docs/yarn.md), whether the rule has YARN-11967 (yes, no, unknown).
# TYPE executor_yarn_memory_enforcement_info gauge
executor_yarn_memory_enforcement_info{enforcer="none",rule="3.3",why="strict_without_cgroups",yarn_11967="no"} 1
`
	if err := testutil.CollectAndCompare(collectorFunc{NewYARNCollector(s)}, strings.NewReader(want),
		"executor_yarn_memory_check_enabled", "executor_yarn_memory_enforcement_info"); err != nil {
		t.Fatal(err)
	}
}

func TestYARNCollectorOff(t *testing.T) {
	if err := testutil.CollectAndCompare(collectorFunc{NewYARNCollector(nil)}, strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
}

func TestReadYARNConf(t *testing.T) {
	dir := t.TempDir()
	if _, found, err := readYARNConf(dir); found || err != nil {
		t.Fatalf("empty directory: found %v, %v", found, err)
	}
	site, err := os.ReadFile(filepath.Join("..", "internal", "yarn", "testdata", "yarn-site-dataproc.xml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("yarn-site.xml", string(site))
	write("core-site.xml", `<configuration><property><name>hadoop.http.authentication.type</name><value>kerberos</value></property></configuration>`)
	conf, found, err := readYARNConf(dir)
	if err != nil || !found {
		t.Fatalf("found %v, %v", found, err)
	}
	if !conf.Kerberos() || conf.NodeManagerURL(yarnLocalHost) != "http://127.0.0.1:8042" || conf.ResourceManagerURLs(yarnLocalHost)[0] != "http://cluster-1-m:8088" {
		t.Errorf("conf %+v", conf)
	}
	write("yarn-site.xml", "<configuration><property>")
	if _, _, err := readYARNConf(dir); err == nil || !strings.Contains(err.Error(), "yarn-site.xml") {
		t.Errorf("broken yarn-site.xml: %v", err)
	}
}
