package fleetsim

import (
	"fmt"
	"io"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Label is one label pair of a series.
type Label struct{ Name, Value string }

// Sample is one series of a scrape: its family, labels (sorted by name)
// and value.
type Sample struct {
	Name   string
	Labels []Label
	Value  float64
}

// Family is a metric family's metadata, for the exposition's # lines.
type Family struct {
	Name, Help string
	Type       dto.MetricType
}

// Template is one real node's scrape split into what the simulator copies:
// the node's own series, one executor's series, one OOM kill counter and
// one exit counter.
type Template struct {
	Families map[string]Family
	Node     []Sample // series without a pid: the machine, the exporter
	JVM      []Sample // every series of one executor
	Kill     Sample   // executor_oom_kills_total of a killed executor
	Exit     Sample   // executor_jvm_exits_total of an ended executor
}

const (
	killFamily = "executor_oom_kills_total"
	exitFamily = "executor_jvm_exits_total"
)

// templateExecutor is the executor_id of the executor whose series are the
// template (testdata/node.prom runs executors 1 and 2, and 3 is killed).
const (
	templateExecutor = "1"
	templateApp      = "app-20260101000000-0001"
)

// ParseTemplate reads a scrape of the exporter (text format). It must hold
// a running executor (executor_id 1), an OOM kill and an exit.
func ParseTemplate(r io.Reader) (*Template, error) {
	families, err := parse(r)
	if err != nil {
		return nil, err
	}
	t := &Template{Families: map[string]Family{}}
	var templatePID string
	for _, s := range families["executor_jvm_info"].samples {
		if label(s, "executor_id") == templateExecutor && label(s, "app_id") == templateApp {
			templatePID = label(s, "pid")
		}
	}
	if templatePID == "" {
		return nil, fmt.Errorf("no executor_jvm_info of executor %s", templateExecutor)
	}
	for name, f := range families {
		t.Families[name] = f.Family
		for _, s := range f.samples {
			pid := label(s, "pid")
			switch {
			case name == killFamily:
				if label(s, "app_id") == templateApp && t.Kill.Name == "" {
					t.Kill = s
				}
			case name == exitFamily:
				if label(s, "app_id") == templateApp && t.Exit.Name == "" {
					t.Exit = s
				}
			case pid == templatePID:
				t.JVM = append(t.JVM, s)
			case pid == "" && !hasLabel(s, "pid"):
				t.Node = append(t.Node, s)
			}
		}
	}
	if t.Kill.Name == "" || t.Exit.Name == "" {
		return nil, fmt.Errorf("the scrape has no OOM kill (%s) or no exit (%s) of an executor", killFamily, exitFamily)
	}
	sortSamples(t.Node)
	sortSamples(t.JVM)
	return t, nil
}

type family struct {
	Family
	samples []Sample
}

func parse(r io.Reader) (map[string]*family, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := map[string]*family{}
	for name, mf := range mfs {
		f := &family{Family: Family{Name: name, Help: mf.GetHelp(), Type: mf.GetType()}}
		for _, m := range mf.GetMetric() {
			s := Sample{Name: name}
			for _, lp := range m.GetLabel() {
				s.Labels = append(s.Labels, Label{lp.GetName(), lp.GetValue()})
			}
			sort.Slice(s.Labels, func(i, j int) bool { return s.Labels[i].Name < s.Labels[j].Name })
			switch {
			case m.Gauge != nil:
				s.Value = m.GetGauge().GetValue()
			case m.Counter != nil:
				s.Value = m.GetCounter().GetValue()
			case m.Untyped != nil:
				s.Value = m.GetUntyped().GetValue()
			default:
				// Summaries and histograms are the exporter's own Go
				// metrics; a fleet's dashboards do not read them.
				continue
			}
			f.samples = append(f.samples, s)
		}
		out[name] = f
	}
	return out, nil
}

func label(s Sample, name string) string {
	for _, l := range s.Labels {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

func hasLabel(s Sample, name string) bool {
	for _, l := range s.Labels {
		if l.Name == name {
			return true
		}
	}
	return false
}

func sortSamples(ss []Sample) {
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Name < ss[j].Name })
}

// enumerated are the labels whose values are a fixed set the exporter
// defines (pools, collectors, kinds, regions): part of the metric
// contract, unlike ids and numbers.
var enumerated = map[string]bool{
	"area": true, "pool": true, "gc": true, "state": true, "kind": true,
	"collector": true, "file": true, "notification": true, "event": true,
}

// enumeratedIn are labels enumerated in one family only (region and
// reason are also the judged outcome of one kill or exit elsewhere).
var enumeratedIn = map[string]string{
	"executor_jvm_native_memory_bytes": "region",
	"executor_jvm_read_errors_total":   "reason",
}

// Shape is the metric contract a scrape shows: for every executor_*
// family, its label names and the values of its enumerated labels, one
// string per distinct combination, sorted. The Go runtime's own families
// are left out: they follow the Go version, not the exporter.
func Shape(r io.Reader) ([]string, error) {
	families, err := parse(r)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for name, f := range families {
		if !strings.HasPrefix(name, "executor_") {
			continue
		}
		for _, s := range f.samples {
			parts := make([]string, 0, len(s.Labels))
			for _, l := range s.Labels {
				if enumerated[l.Name] || enumeratedIn[name] == l.Name {
					parts = append(parts, l.Name+"="+l.Value)
				} else {
					parts = append(parts, l.Name)
				}
			}
			seen[name+"{"+strings.Join(parts, ",")+"}"] = true
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}
