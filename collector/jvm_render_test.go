package collector

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/executor-exporter/executor_exporter/internal/cloud"
	"github.com/executor-exporter/executor_exporter/internal/jvm"
	"github.com/executor-exporter/executor_exporter/internal/nativemem"
)

// The rendered text of every kind of JVM — labels that need escaping, in
// a pod with labels, with a breakdown, without hsperfdata, ended — is,
// in both formats, what expfmt writes of the same series gathered by a
// registry, line for line; and it parses, one header per family.
func TestRenderedTextIsWhatARegistryServes(t *testing.T) {
	now := time.Now()
	view := syntheticView(t, 5, now)
	view.JVMs[0].AppID = `app "quoted" \ back` + "\nslash"
	view.JVMs[0].ExecutorID = "ünï"
	view.JVMs[1].CgroupPath = "/kubepods/burstable/pod" + layoutUID + "/" + layoutCID
	view.JVMs[2].Native = &jvm.NativeMemory{Checked: now}
	for r := nativemem.Region(0); r < nativemem.NumRegions; r++ {
		view.JVMs[2].Native.Last.Regions[r] = uint64(r) << 20
	}
	view.JVMs[3].Counters = "disabled"
	view.JVMs[4].Stats.Pools = append(view.JVMs[4].Stats.Pools, view.JVMs[4].Stats.Pools[0]) // a name twice: the first counts
	view.Ended = []jvm.Sample{{Identity: jvm.Identity{PID: 20000, Role: "executor", AppID: "app-gone", ExecutorID: "9"},
		Peaks: jvm.Peaks{Container: 3 << 30, Resident: 2 << 30, HeapLive: 1 << 30, Python: 0}}}
	pods := staticPods{cloud.PodsSnapshot{Index: cloud.NewPodIndex([]cloud.Pod{{UID: layoutUID, Namespace: "data-eng", Name: "etl-exec-7",
		Labels:     map[string]string{"spark-app-name": `etl "nightly"`, "team": "data\\eng"},
		Containers: map[string]cloud.Container{layoutCID: {Name: "spark-kubernetes-executor", ID: "containerd://" + layoutCID}}}})}}

	for _, allowlist := range [][]string{nil, {"spark-app-name", "team"}, {"*"}} {
		c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
		c.pods, c.podLabels = pods, allowlist
		set := c.series(view)
		for _, om := range []bool{false, true} {
			got := renderSet(t, c, set, om)
			want := string(expfmtText(t, setFamilies(t, c, set), om))
			if om {
				want += "# EOF\n"
			}
			if !slices.Equal(sortedLines(got), sortedLines(want)) {
				t.Errorf("allowlist %v, openMetrics %v: rendered text differs from expfmt's:\n%s\n\nexpfmt:\n%s", allowlist, om, got, want)
			}
			if !om {
				parser := expfmt.NewTextParser(model.UTF8Validation)
				if _, err := parser.TextToMetricFamilies(strings.NewReader(got)); err != nil {
					t.Errorf("allowlist %v: rendered text does not parse: %v", allowlist, err)
				}
			}
			for _, must := range []string{`app_id="app \"quoted\" \\ back\nslash"`, `pod="etl-exec-7"`, `region="gc"`, `counters="disabled"`, `pid="20000"`} {
				if !strings.Contains(got, must) {
					t.Errorf("allowlist %v, openMetrics %v: no %s in\n%s", allowlist, om, must, got)
				}
			}
			if allowlist != nil && !strings.Contains(got, `label_team="data\\eng"`) {
				t.Errorf("allowlist %v: no pod label in\n%s", allowlist, got)
			}
		}
	}
}

// The lines a JVM renders are grouped by family, and each group is
// exactly the family's lines.
func TestRenderedTextGroupsByFamily(t *testing.T) {
	c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
	set := c.series(syntheticView(t, 1, time.Now()))
	text := c.text(set.jvms[0], false)
	if len(text.fams) != len(c.descs.families) {
		t.Fatalf("%d families rendered, the collector has %d", len(text.fams), len(c.descs.families))
	}
	for f, fam := range c.descs.families {
		for _, line := range bytes.SplitAfter(text.family(f), []byte("\n")) {
			if len(line) > 0 && !bytes.HasPrefix(line, []byte(fam.name+"{")) {
				t.Errorf("family %s holds %q", fam.name, line)
			}
		}
	}
}
