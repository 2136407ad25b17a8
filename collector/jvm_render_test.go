package collector

import (
	"bytes"
	"hash/maphash"
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
		if lines := bytes.Count(text.family(f), []byte("\n")); lines != len(text.fams[f].lines) {
			t.Errorf("family %s: %d lines, %d described", fam.name, lines, len(text.fams[f].lines))
		}
		for _, line := range bytes.SplitAfter(text.family(f), []byte("\n")) {
			if len(line) > 0 && !bytes.HasPrefix(line, []byte(fam.name+"{")) {
				t.Errorf("family %s holds %q", fam.name, line)
			}
		}
	}
}

// A JVM read again renders only what changed: the lines whose series and
// value stand are copied from its last reading's text. Whatever changed —
// a value, the series sent (a breakdown appears, a pool goes), the
// identity, the pod's labels — the text is, byte for byte, what a
// collector that never saw the last reading renders.
func TestRenderCopiesTheLinesThatStand(t *testing.T) {
	now := time.Now()
	pods := func(team string) staticPods {
		return staticPods{cloud.PodsSnapshot{Index: cloud.NewPodIndex([]cloud.Pod{{UID: layoutUID, Namespace: "data-eng", Name: "etl-exec-7",
			Labels:     map[string]string{"team": team},
			Containers: map[string]cloud.Container{layoutCID: {Name: "spark-kubernetes-executor", ID: "containerd://" + layoutCID}}}})}}
	}
	first := syntheticView(t, 7, now)
	first.JVMs[5].CgroupPath = "/kubepods/burstable/pod" + layoutUID + "/" + layoutCID
	later := syntheticView(t, 7, now)
	later.Time = now.Add(30 * time.Second)
	for i := range later.JVMs {
		later.JVMs[i].Time = later.Time
	}
	later.JVMs[1].RSSJVM += 1 << 20
	later.JVMs[2].Native = &jvm.NativeMemory{Checked: later.Time}
	later.JVMs[2].Native.Last.Regions[nativemem.Region(1)] = 7 << 20
	later.JVMs[3].Stats.Pools = later.JVMs[3].Stats.Pools[1:]
	later.JVMs[4].ExecutorID = "44"
	later.JVMs[5].CgroupPath = first.JVMs[5].CgroupPath
	later.JVMs[6].Stats.Pools = later.JVMs[6].Stats.Pools[:len(later.JVMs[6].Stats.Pools)-1]

	for _, om := range []bool{false, true} {
		for _, team := range []string{"data", "platform"} {
			c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
			c.pods, c.podLabels = pods("data"), []string{"team"}
			renderSet(t, c, c.series(first), om)
			c.pods = pods(team)
			set := c.series(later)
			fresh := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
			fresh.pods, fresh.podLabels = pods(team), []string{"team"}
			freshSet := fresh.series(later)
			for i, e := range set.jvms {
				got, want := c.text(e, om), fresh.text(freshSet.jvms[i], om)
				for f := range want.fams {
					if !bytes.Equal(got.family(f), want.family(f)) {
						t.Errorf("openMetrics %v, team %s, JVM %d, family %s differs from a fresh render:\n%s\nfresh:\n%s", om, team, i, c.descs.families[f].name, got.family(f), want.family(f))
					}
				}
				for f := range got.fams {
					if got.fams[f].sum != maphash.Bytes(c.sinks.get().seed, got.family(f)) {
						t.Errorf("JVM %d: family %d's sum is not its lines'", i, f)
					}
				}
				if want.copied != 0 {
					t.Fatalf("a collector that never saw the JVM copied %d lines", want.copied)
				}
				lines := 0
				for f := range got.fams {
					lines += bytes.Count(got.family(f), []byte("\n"))
				}
				// What the JVM may have copied (lines) and shared
				// (families): the least and the most.
				families := len(c.descs.families)
				expect := map[int]struct {
					why            string
					copied, shared [2]int
				}{
					0: {"read again with nothing changed", [2]int{lines, lines}, [2]int{families, families}},
					1: {"its resident memory changed", [2]int{lines - 2, lines - 1}, [2]int{families - 2, families - 1}},
					2: {"a breakdown appeared", [2]int{1, lines - 1}, [2]int{0, families}},
					3: {"a pool went", [2]int{1, lines - 1}, [2]int{0, families}},
					4: {"another identity", [2]int{0, 0}, [2]int{0, 0}},
					6: {"its last pool went", [2]int{0, lines}, [2]int{0, families - 1}},
				}
				if e, ok := expect[i]; ok {
					if got.copied < e.copied[0] || got.copied > e.copied[1] || got.shared < e.shared[0] || got.shared > e.shared[1] {
						t.Errorf("openMetrics %v: JVM %d, %s: copied %d of %d lines (want %v), shared %d of %d families (want %v)",
							om, i, e.why, got.copied, lines, e.copied, got.shared, families, e.shared)
					}
				}
			}
			if e := set.jvms[0]; e.prev[b2i(om)].Load() != nil {
				t.Error("an entry keeps its last reading's text once its own is rendered")
			}
		}
	}
}

// A format a scrape asked for lately keeps each JVM's text from reading to
// reading, for the next rendering to copy what stands; one last asked for
// longer ago than textKeptFor (a person's curl in the other format) keeps
// nothing once the JVMs are read again.
func TestTextKeptWhileItsFormatIsAsked(t *testing.T) {
	now := time.Now()
	for _, om := range []bool{false, true} {
		for _, tc := range []struct {
			askedAgo time.Duration
			kept     bool
		}{
			{time.Second, true},
			{textKeptFor - time.Minute, true},
			{textKeptFor + time.Minute, false},
		} {
			c := NewJVMCollector(nil, log.NewNopLogger()).(*jvmCollector)
			first := syntheticView(t, 3, now)
			renderSet(t, c, c.series(first), om)
			c.asked[b2i(om)].Store(time.Now().Add(-tc.askedAgo).UnixNano())
			later := syntheticView(t, 3, now)
			later.Time = now.Add(30 * time.Second)
			for i := range later.JVMs {
				later.JVMs[i].Time = later.Time
			}
			set := c.series(later)
			for i, e := range set.jvms {
				if kept := e.prev[b2i(om)].Load() != nil; kept != tc.kept {
					t.Errorf("openMetrics %v, asked %v ago: JVM %d keeps its last text: %v, want %v", om, tc.askedAgo, i, kept, tc.kept)
				}
				if e.prev[b2i(!om)].Load() != nil {
					t.Errorf("openMetrics %v: JVM %d keeps text of the format never asked for", om, i)
				}
			}
			if got := c.texts(set, om); !tc.kept && got[0].copied != 0 {
				t.Errorf("openMetrics %v, asked %v ago: copied %d lines from text not kept", om, tc.askedAgo, got[0].copied)
			}
		}
	}
}
