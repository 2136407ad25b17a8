package yarn

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParseSiteXML(f *testing.F) {
	for _, name := range []string{"yarn-site-emr.xml", "yarn-site-dataproc.xml", "yarn-site-ha-https.xml"} {
		f.Add(fixture(f, name))
	}
	f.Add([]byte(`<configuration><property><name>a</name><value>${a}${a}${a}</value></property></configuration>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseSiteXML(data)
		if err != nil {
			return
		}
		if c.VmemRatio < 1 || c.MonitorMillis <= 0 || len(c.ResourceManagers) == 0 {
			t.Fatalf("accepted %+v", c)
		}
		if u := c.NodeManagerURL("h"); !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			t.Fatalf("NodeManagerURL %q", u)
		}
	})
}

func FuzzParseContainers(f *testing.F) {
	for _, name := range []string{"containers.json", "containers-null.json", "containers-one.json"} {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := ParseContainers(data)
		if err != nil {
			return
		}
		for _, c := range list {
			if !ValidContainerID(c.ID) || c.TotalMemoryNeededMB < 0 || !utf8.ValidString(c.State) {
				t.Fatalf("accepted %+v", c)
			}
			ParseDiagnostics(c.Diagnostics)
		}
	})
}

func FuzzParseOne(f *testing.F) {
	for _, name := range []string{"container.json", "node-info.json", "node-info-hadoop2.json", "app.json"} {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := ParseContainer(data); err == nil && !ValidContainerID(c.ID) {
			t.Fatalf("container id %q", c.ID)
		}
		if n, err := ParseNodeInfo(data); err == nil && !utf8.ValidString(n.NodeManagerVersion) {
			t.Fatalf("version %q", n.NodeManagerVersion)
		}
		if a, err := ParseApp(data); err == nil && (!ValidAppID(a.ID) || len(a.Name) > 128 || !utf8.ValidString(a.Name)) {
			t.Fatalf("app %+v", a)
		}
	})
}

func FuzzParseDiagnostics(f *testing.F) {
	for _, name := range []string{"diag-pmem-hadoop2.txt", "diag-vmem-hadoop2.txt", "diag-vmem-hadoop3.txt", "diag-external-137.txt", "diag-pmem-cut.txt", "diag-pmem-after-retry.txt", "diag-under-oom.txt", "diag-killed-on-request.txt"} {
		f.Add(string(fixture(f, name)))
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := ParseDiagnostics(s)
		switch k.Kind {
		case KillNone, KillSignal:
			if k.PID != 0 || k.PmemLimit != 0 {
				t.Fatalf("figures without a kill: %+v", k)
			}
		case KillPmem, KillVmem:
			if !ValidContainerID(k.ContainerID) && k.ContainerID != "" && !strings.HasPrefix(k.ContainerID, "container_") {
				t.Fatalf("container %q", k.ContainerID)
			}
		case KillUnderOOM:
		default:
			t.Fatalf("kind %q", k.Kind)
		}
	})
}
