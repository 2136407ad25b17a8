package fleetsim

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// Point is one sample of a series at a time, in milliseconds.
type Point struct {
	Value     float64
	Timestamp int64
}

// Series is a series with its points, for remote-write.
type Series struct {
	Labels []Label // __name__ included
	Points []Point
}

// EncodeWriteRequest encodes series as a Prometheus remote-write 1.0
// request body (a snappy-compressed prometheus.WriteRequest), as
// Prometheus's own remote-write sends it: how history is pushed into a
// Prometheus before it starts scraping the fleet.
func EncodeWriteRequest(series []Series) []byte {
	var buf []byte
	for _, s := range series {
		var ts []byte
		labels := append([]Label(nil), s.Labels...)
		sort.Slice(labels, func(i, j int) bool { return labels[i].Name < labels[j].Name })
		for _, l := range labels {
			var lb []byte
			lb = protowire.AppendTag(lb, 1, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Name)
			lb = protowire.AppendTag(lb, 2, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Value)
			ts = protowire.AppendTag(ts, 1, protowire.BytesType)
			ts = protowire.AppendBytes(ts, lb)
		}
		for _, p := range s.Points {
			var pb []byte
			pb = protowire.AppendTag(pb, 1, protowire.Fixed64Type)
			pb = protowire.AppendFixed64(pb, math.Float64bits(p.Value))
			pb = protowire.AppendTag(pb, 2, protowire.VarintType)
			pb = protowire.AppendVarint(pb, uint64(p.Timestamp))
			ts = protowire.AppendTag(ts, 2, protowire.BytesType)
			ts = protowire.AppendBytes(ts, pb)
		}
		buf = protowire.AppendTag(buf, 1, protowire.BytesType)
		buf = protowire.AppendBytes(buf, ts)
	}
	return snappy.Encode(nil, buf)
}

// History returns node n's series at steps times starting at from, every
// step, as Prometheus would have scraped them: with extra labels (job,
// instance, cluster) and the up series.
func (f *Fleet) History(n *Node, from time.Time, steps int, step time.Duration, extra []Label) []Series {
	index := map[string]int{}
	var out []Series
	var key strings.Builder
	add := func(s Sample, ts int64) {
		key.Reset()
		key.WriteString(s.Name)
		for _, l := range s.Labels {
			key.WriteString("\xff" + l.Name + "\xfe" + l.Value)
		}
		i, ok := index[key.String()]
		if !ok {
			labels := make([]Label, 0, len(s.Labels)+len(extra)+1)
			labels = append(labels, Label{"__name__", s.Name})
			labels = append(labels, s.Labels...)
			labels = append(labels, extra...)
			i = len(out)
			index[key.String()] = i
			out = append(out, Series{Labels: labels})
		}
		out[i].Points = append(out[i].Points, Point{Value: s.Value, Timestamp: ts})
	}
	for k := range steps {
		t := from.Add(time.Duration(k) * step)
		ts := t.UnixMilli()
		f.Samples(n, t, func(s Sample) { add(s, ts) })
		add(Sample{Name: "up", Value: 1}, ts)
	}
	return out
}
