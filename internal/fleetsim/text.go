package fleetsim

import (
	"bytes"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// WriteText writes node n's scrape at t in the Prometheus text format, as
// the exporter's /metrics does.
func (f *Fleet) WriteText(w io.Writer, n *Node, t time.Time) error {
	var samples []Sample
	f.Samples(n, t, func(s Sample) { samples = append(samples, s) })
	// The text format wants a family's series together.
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Name < samples[j].Name })
	// Built whole, then written once: a node's scrape is tens of KiB.
	var bw bytes.Buffer
	last := ""
	for _, s := range samples {
		if s.Name != last {
			last = s.Name
			if fam, ok := f.tmpl.Families[s.Name]; ok {
				bw.WriteString("# HELP " + s.Name + " " + escapeHelp(fam.Help) + "\n")
				bw.WriteString("# TYPE " + s.Name + " " + typeName(fam.Type) + "\n")
			}
		}
		bw.WriteString(s.Name)
		if len(s.Labels) > 0 {
			bw.WriteByte('{')
			for i, l := range s.Labels {
				if i > 0 {
					bw.WriteByte(',')
				}
				bw.WriteString(l.Name + `="` + escapeValue(l.Value) + `"`)
			}
			bw.WriteByte('}')
		}
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatFloat(s.Value, 'g', -1, 64))
		bw.WriteByte('\n')
	}
	_, err := w.Write(bw.Bytes())
	return err
}

var (
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeValue(s string) string { return valueEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	default:
		return "untyped"
	}
}
