package yarn

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSiteXML(t *testing.T) {
	for _, tc := range []struct {
		file       string
		nm         string
		rms        []string
		ratio      float64
		pmem, vmem bool
		millis     int64
		smaps      bool
		cgroups    bool
		enforced   bool
		elastic    bool
		monitor    bool
		kerberos   bool
	}{
		{file: "yarn-site-emr.xml", nm: "http://node-a:8042", rms: []string{"http://ip-172-31-20-10.ec2.internal:8088"},
			ratio: 2.1, pmem: true, millis: 3000, enforced: true, monitor: true},
		{file: "yarn-site-dataproc.xml", nm: "http://node-a:8042", rms: []string{"http://cluster-1-m:8088"},
			ratio: 2.1, millis: 3000, enforced: true, monitor: true},
		{file: "yarn-site-ha-https.xml", nm: "https://node-a:8044",
			rms:   []string{"https://master-1.example.com:8090", "https://master-2.example.com:9443"},
			ratio: 4, pmem: true, vmem: true, millis: 1000, smaps: true, cgroups: true, elastic: true, monitor: true, kerberos: true},
		// yarn-default.xml: the webapp is ${yarn.nodemanager.hostname}:8042,
		// and the monitor's interval falls back to the resource monitor's.
		{file: "yarn-site-nm-hostname.xml", nm: "http://ip-10-0-3-7.ec2.internal:8042", rms: []string{"http://ip-10-0-3-1.ec2.internal:8088"},
			ratio: 2.1, pmem: true, vmem: true, millis: 2000, enforced: true, monitor: true},
		// An interval of 0 switches the monitor off: a setting, not an error.
		{file: "yarn-site-monitor-off.xml", nm: "http://node-a:8042", rms: []string{"http://node-a:8088"},
			ratio: 2.1, pmem: true, vmem: true, millis: 0, enforced: true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c, err := ParseSiteXML(fixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.NodeManagerURL("node-a"); got != tc.nm {
				t.Errorf("NodeManagerURL = %q, want %q", got, tc.nm)
			}
			if got := c.ResourceManagerURLs("node-a"); !reflect.DeepEqual(got, tc.rms) {
				t.Errorf("ResourceManagerURLs = %q, want %q", got, tc.rms)
			}
			if c.VmemRatio != tc.ratio || c.PmemCheck != tc.pmem || c.VmemCheck != tc.vmem || c.MonitorMillis != tc.millis ||
				c.SmapsRSS != tc.smaps || c.CgroupsMemory != tc.cgroups || c.MemoryEnforced != tc.enforced || c.ElasticControl != tc.elastic ||
				c.MonitorEnabled != tc.monitor || c.Kerberos() != tc.kerberos {
				t.Errorf("got ratio %v pmem %v vmem %v ms %v smaps %v cgroups %v enforced %v elastic %v monitor %v kerberos %v, want %+v",
					c.VmemRatio, c.PmemCheck, c.VmemCheck, c.MonitorMillis, c.SmapsRSS, c.CgroupsMemory, c.MemoryEnforced, c.ElasticControl,
					c.MonitorEnabled, c.Kerberos(), tc)
			}
		})
	}
}

func TestMonitorSettings(t *testing.T) {
	for _, tc := range []struct {
		props   map[string]string
		millis  int64
		enabled bool
	}{
		{map[string]string{}, 3000, true},
		{map[string]string{keyResourceMonitor: "5000"}, 5000, true},
		{map[string]string{keyResourceMonitor: "5000", keyMonitorInterval: "1000"}, 1000, true},
		{map[string]string{keyMonitorInterval: "-1"}, -1, false},
		{map[string]string{keyMonitorEnabled: "false"}, 3000, false},
	} {
		c, err := FromProps(tc.props)
		if err != nil {
			t.Errorf("%v: %v", tc.props, err)
			continue
		}
		if c.MonitorMillis != tc.millis || c.MonitorEnabled != tc.enabled {
			t.Errorf("%v: interval %d enabled %v, want %d %v", tc.props, c.MonitorMillis, c.MonitorEnabled, tc.millis, tc.enabled)
		}
	}
}

func TestParseSiteXMLBad(t *testing.T) {
	for name, in := range map[string]string{
		"truncated": `<configuration><property><name>yarn.nodemanager.vmem-pmem-ratio</name><value>2`,
		"ratio":     `<configuration><property><name>yarn.nodemanager.vmem-pmem-ratio</name><value>lots</value></property></configuration>`,
		"ratio<1":   `<configuration><property><name>yarn.nodemanager.vmem-pmem-ratio</name><value>0.5</value></property></configuration>`,
		"interval":  `<configuration><property><name>yarn.nodemanager.container-monitor.interval-ms</name><value>3s</value></property></configuration>`,
		"oversized": "<configuration>" + strings.Repeat(" ", MaxConfBytes) + "</configuration>",
		"not xml":   `{"configuration": {}}`,
	} {
		if _, err := ParseSiteXML([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestExpandLoop(t *testing.T) {
	c, err := FromProps(map[string]string{"a": "${b}", "b": "${a}", keyRMHostname: "${a}"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ResourceManagers) != 1 {
		t.Fatalf("ResourceManagers = %v", c.ResourceManagers)
	}
}

func TestParseContainers(t *testing.T) {
	list, err := ParseContainers(fixture(t, "containers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "container_1700000000000_0042_01_000002" || list[0].TotalMemoryNeededMB != 5632 ||
		list[0].ExitCode != ExitInvalid || list[1].ExitCode != ExitKilledPmem || list[1].State != StateDone {
		t.Fatalf("got %+v", list)
	}
	// An idle node: Hadoop 2, Hadoop 3 and trunk's Jersey 2 answers.
	for _, f := range []string{"containers-null.json", "containers-empty.json", "containers-jersey2.json"} {
		l, err := ParseContainers(fixture(t, f))
		if err != nil || len(l) != 0 {
			t.Errorf("%s: %v, %v", f, l, err)
		}
	}
	for _, in := range []string{`{"containers":{}}`, `{"containers":{"container":[]}}`, `{"containers":{"container":null}}`} {
		if l, err := ParseContainers([]byte(in)); err != nil || len(l) != 0 {
			t.Errorf("%s: %v, %v", in, l, err)
		}
	}
	one, err := ParseContainers(fixture(t, "containers-one.json"))
	if err != nil || len(one) != 1 || one[0].TotalMemoryNeededMB != 2048 {
		t.Errorf("single object: %v, %v", one, err)
	}
	for name, in := range map[string]string{
		"truncated":  `{"containers":{"container":[{"id":"container_1_2_3_4"`,
		"wrong type": `{"containers":{"container":[{"id":"container_1_2_3_4","totalMemoryNeededMB":"lots"}]}}`,
		"bad id":     `{"containers":{"container":[{"id":"../../etc/passwd"}]}}`,
		"negative":   `{"containers":{"container":[{"id":"container_1_2_3_4","totalMemoryNeededMB":-5}]}}`,
		"no key":     `{"apps":null}`,
		"a number":   `{"containers":3}`,
		"a string":   `{"containers":"none"}`,
		"garbage":    "\x00{[",
		"oversized":  `{"containers":null}` + strings.Repeat(" ", MaxBodyBytes),
	} {
		if _, err := ParseContainers([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseContainer(t *testing.T) {
	c, err := ParseContainer(fixture(t, "container.json"))
	if err != nil || c.ExitCode != ExitKilledByAppMaster {
		t.Fatalf("%+v, %v", c, err)
	}
	if _, err := ParseContainer([]byte(`{"RemoteException":{}}`)); err == nil {
		t.Error("RemoteException: no error")
	}
}

func TestParseNodeInfo(t *testing.T) {
	n, err := ParseNodeInfo(fixture(t, "node-info.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n.NodeManagerVersion != "3.3.6-amzn-2" || n.PmemCheckEnabled == nil || !*n.PmemCheckEnabled || n.VmemCheckEnabled == nil || *n.VmemCheckEnabled {
		t.Errorf("got %+v", n)
	}
	old, err := ParseNodeInfo(fixture(t, "node-info-hadoop2.json"))
	if err != nil || old.PmemCheckEnabled != nil || old.VmemCheckEnabled != nil {
		t.Errorf("Hadoop 2 node info: %+v, %v: want the checks unknown", old, err)
	}
	if _, err := ParseNodeInfo([]byte(`{"nodeInfo":{"pmemCheckEnabled":"yes"}}`)); err == nil {
		t.Error("wrong type: no error")
	}
}

func TestParseApp(t *testing.T) {
	a, err := ParseApp(fixture(t, "app.json"))
	if err != nil || a.Name != "nightly-sessionize" || a.ID != "application_1700000000000_0042" || a.ApplicationType != "SPARK" {
		t.Fatalf("%+v, %v", a, err)
	}
	long, err := ParseApp([]byte(`{"app":{"id":"application_1_2","name":"` + strings.Repeat("é", 500) + `"}}`))
	if err != nil || len(long.Name) > 128 {
		t.Errorf("long name: %d bytes, %v", len(long.Name), err)
	}
	for _, in := range []string{`{"app":{"id":"job_1_2"}}`, `{"app":null}`, `[]`} {
		if _, err := ParseApp([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestIDs(t *testing.T) {
	for id, app := range map[string]string{
		"container_1700000000000_0042_01_000002":     "application_1700000000000_0042",
		"container_e07_1700000000000_0043_01_000005": "application_1700000000000_0043",
	} {
		if got, ok := AppIDOf(id); !ok || got != app {
			t.Errorf("AppIDOf(%s) = %q, %v", id, got, ok)
		}
	}
	for _, bad := range []string{"container_", "container_1_2_3", "container_e_1_2_3_4", "container_1_2_3_4_5_6", "contain_1_2_3_4", "container_1_2_3_x"} {
		if ValidContainerID(bad) {
			t.Errorf("%q valid", bad)
		}
	}
}

func TestParseDiagnostics(t *testing.T) {
	const gib = 1 << 30
	b := func(n float64, unit uint64) uint64 { return uint64(n * float64(unit)) }
	for _, tc := range []struct {
		name string
		in   string
		want Kill
	}{
		{"hadoop3 pmem", string(fixture(t, "containers.json")), Kill{}}, // JSON-escaped: see below
		{"hadoop2 pmem", string(fixture(t, "diag-pmem-hadoop2.txt")), Kill{Kind: KillPmem, PID: 4733, ContainerID: "container_1409135750325_48141_02_000001",
			PmemUsed: 2 * gib, PmemLimit: 2 * gib, VmemUsed: 6 * gib, VmemLimit: b(4.2, gib)}},
		{"hadoop2 vmem", string(fixture(t, "diag-vmem-hadoop2.txt")), Kill{Kind: KillVmem, PID: 20210, ContainerID: "container_1464789200126_0001_02_000001",
			PmemUsed: b(361.5, 1<<20), PmemLimit: gib, VmemUsed: b(2.3, gib), VmemLimit: b(2.1, gib)}},
		{"hadoop3 vmem", string(fixture(t, "diag-vmem-hadoop3.txt")), Kill{Kind: KillVmem, PID: 9120, ContainerID: "container_e02_1700000000000_0007_01_000003",
			Over: 52428800, PmemUsed: b(980.3, 1<<20), PmemLimit: gib, VmemUsed: b(2.2, gib), VmemLimit: b(2.1, gib)}},
		// LinuxContainerExecutor writes "Container killed on request" for
		// every 137 and 143; "Killed by external signal" says the
		// NodeManager had not asked (elastic handler, kernel, node agent).
		{"external 137", string(fixture(t, "diag-external-137.txt")), Kill{Kind: KillSignal}},
		{"external 143", string(fixture(t, "diag-killed-on-request.txt")), Kill{Kind: KillSignal}},
		{"under oom", string(fixture(t, "diag-under-oom.txt")), Kill{Kind: KillUnderOOM, ContainerID: "container_1700000000000_0042_01_000009"}},
		{"release by the ResourceManager", string(fixture(t, "diag-released-rm.txt")), Kill{}},
		{"release", "Container killed by the ApplicationMaster.\nContainer killed on request. Exit code is 143", Kill{}},
		// Hadoop 3's stamped entries and long2String sizes, a PySpark
		// executor's process tree.
		{"hadoop3 pyspark", string(fixture(t, "diag-pmem-hadoop3-pyspark.txt")), Kill{Kind: KillPmem, PID: 24017,
			ContainerID: "container_e05_1700000000000_0051_01_000007", Over: 104857600,
			PmemUsed: b(1.6, gib), PmemLimit: b(1.5, gib), VmemUsed: b(27.9, gib), VmemLimit: b(3.1, gib)}},
		// A relaunched container: its earlier attempt's entries put the
		// header more than 4 KiB in.
		{"header after earlier entries", string(fixture(t, "diag-pmem-after-retry.txt")), Kill{Kind: KillPmem, PID: 24017,
			ContainerID: "container_e05_1700000000000_0051_01_000007", Over: 23278387,
			PmemUsed: b(470.2, 1<<20), PmemLimit: 448 << 20, VmemUsed: b(2.4, gib), VmemLimit: b(940.8, 1<<20)}},
		// The NodeManager kept the last 10,000 characters: the header is
		// gone, only the exit status can say.
		{"header cut from the front", string(fixture(t, "diag-pmem-cut.txt")), Kill{}},
		{"comma decimals (Hadoop 2, a German locale)", "Container [pid=7,containerID=container_1_2_3_4] is running beyond physical memory limits. Current usage: 1,5 GB of 1 GB physical memory used; 2 GB of 2,1 GB virtual memory used. Killing container.",
			Kill{Kind: KillPmem, PID: 7, ContainerID: "container_1_2_3_4", PmemUsed: b(1.5, gib), PmemLimit: gib, VmemUsed: 2 * gib, VmemLimit: b(2.1, gib)}},
		{"empty", "", Kill{}},
	} {
		if tc.name == "hadoop3 pmem" {
			list, err := ParseContainers([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			tc.in = list[1].Diagnostics
			tc.want = Kill{Kind: KillPmem, PID: 31337, ContainerID: "container_e07_1700000000000_0043_01_000005", Over: 104857600,
				PmemUsed: b(5.6, gib), PmemLimit: b(5.5, gib), VmemUsed: b(7.9, gib), VmemLimit: b(11.6, gib)}
		}
		if got := ParseDiagnostics(tc.in); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestFinished: the NodeManager's own states say whether its exit status
// is the last word. A relaunched container runs again with the status of
// its earlier attempt.
func TestFinished(t *testing.T) {
	for _, tc := range []struct {
		state string
		code  int
		want  bool
	}{
		{StateRunning, ExitInvalid, false},
		{StateRunning, 1, false},
		{StateRelaunching, 1, false},
		{StateScheduled, ExitInvalid, false},
		{StateKilling, ExitKilledPmem, true},
		{StateExitedFailure, 137, true},
		{StateCleanedUpAfterKill, ExitKilledPmem, true},
		{StateCleaningUp, ExitKilledByRM, true},
		{StateDone, ExitKilledByRM, true},
		{StateLocalizationFailed, ExitInvalid, false},
		{"COMPLETE", ExitKilledPmem, true}, // not the NodeManager's: the status alone
	} {
		if got := (Container{State: tc.state, ExitCode: tc.code}).Finished(); got != tc.want {
			t.Errorf("%s with %d: Finished %v, want %v", tc.state, tc.code, got, tc.want)
		}
	}
}
